"""The assembler fans tier reads out to threads only when the store's reads overlap."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import BaseStore, Op, Result
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory import QdrantMemoryStore, TieredMemory
from langchain_tiered_memory.testing.fakes import HashingEmbeddings


class _SerialStore(InMemoryStore):
    concurrent_reads = False


def _threads_used(store: InMemoryStore, monkeypatch: pytest.MonkeyPatch) -> set[str]:
    memory = TieredMemory(store)
    alice = memory.for_user("alice")
    seen: set[str] = set()
    for tier, name in ((alice.episodic, "retrieve_similar"), (alice.semantic, "semantic_search")):
        original = getattr(tier, name)

        def spy(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            seen.add(threading.current_thread().name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(tier, name, spy)
    alice.semantic.store_fact("alice", "Allergic to shellfish", confidence=0.9)
    ctx = alice.build_memory_context("dinner with shellfish", token_budget=300)
    assert "shellfish" in ctx.text and not ctx.errors
    return seen


def _index() -> Any:
    return {"dims": 64, "embed": HashingEmbeddings(size=64), "fields": ["text"]}


def test_serial_store_is_read_in_the_calling_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _threads_used(_SerialStore(index=_index()), monkeypatch)
    assert seen == {threading.current_thread().name}


class _LockedStore(BaseStore):
    """A thread-safe store other than InMemoryStore (as PostgresStore would be)."""

    def __init__(self) -> None:
        self.inner = InMemoryStore(index=_index())
        self.lock = threading.Lock()

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        with self.lock:
            return self.inner.batch(ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return self.batch(ops)


def test_other_stores_are_read_from_worker_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _threads_used(_LockedStore(), monkeypatch)  # type: ignore[arg-type]
    assert seen and all(n.startswith("tiered-memory-retrieve") for n in seen)


def test_in_memory_store_is_read_in_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    # InMemoryStore is not thread-safe: the memory serialises it (stores/serialized.py).
    seen = _threads_used(InMemoryStore(index=_index()), monkeypatch)
    assert seen == {threading.current_thread().name}


def test_embedded_engine_reads_do_not_overlap_and_a_client_engines_do(tmp_path: Path) -> None:
    from qdrant_client import QdrantClient

    with QdrantMemoryStore.embedded(tmp_path / "s", index=_index()) as embedded:
        assert embedded.concurrent_reads is False
    client = QdrantClient(":memory:")
    try:
        assert QdrantMemoryStore.from_client(client, index=_index()).concurrent_reads is True
    finally:
        client.close()


async def _most_tiers_in_flight(store: Any, monkeypatch: pytest.MonkeyPatch) -> int:
    memory = TieredMemory(store)
    alice = memory.for_user("alice")
    in_flight, most = 0, 0
    for tier, name in (
        (alice.episodic, "aretrieve_similar"),
        (alice.semantic, "asemantic_search"),
        (alice.procedural, "aget_applicable_strategies"),
    ):
        original = getattr(tier, name)

        async def spy(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            nonlocal in_flight, most
            in_flight += 1
            most = max(most, in_flight)
            try:
                await asyncio.sleep(0.01)  # another tier asked at the same time starts now
                return await _original(*args, **kwargs)
            finally:
                in_flight -= 1

        monkeypatch.setattr(tier, name, spy)
    await alice.semantic.astore_fact("alice", "Allergic to shellfish", confidence=0.9)
    ctx = await alice.abuild_memory_context("dinner with shellfish", token_budget=300)
    assert "shellfish" in ctx.text and not ctx.errors
    return most


async def test_async_context_asks_a_serial_store_in_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    # As on the sync path: gathering embedded-engine reads only queued them (p50 49 -> 42 ms).
    assert await _most_tiers_in_flight(_SerialStore(index=_index()), monkeypatch) == 1


async def test_async_context_gathers_reads_that_overlap(monkeypatch: pytest.MonkeyPatch) -> None:
    assert await _most_tiers_in_flight(_LockedStore(), monkeypatch) == 3
