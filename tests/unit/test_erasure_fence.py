"""The erasure fence: writes begun before a user's erasure are refused, later ones wait."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory.erasure_fence import (
    aerasing,
    awriting,
    call_started,
    erasing,
    generation,
    started_at,
    writing,
)
from langchain_tiered_memory.errors import UserErasedError
from langchain_tiered_memory.writeback.writer import DurableMemoryWriter

USER = ("tiered_memory", "fence-user")
FACTS = (*USER, "_", "semantic", "facts")


def test_a_write_started_before_the_erasure_is_refused_and_a_later_one_passes() -> None:
    store = object()
    with call_started():
        with erasing(store, USER):
            pass
        with pytest.raises(UserErasedError, match="fence-user"), writing(store, [FACTS]):
            pass
    with writing(store, [FACTS]):
        pass


def test_deletes_and_other_users_pass_the_fence() -> None:
    store = object()
    with call_started():
        with erasing(store, USER):
            pass
        with writing(store, []), writing(store, [("tiered_memory", "other", "_", "x")]):
            pass


def test_a_write_that_starts_during_the_erasure_waits_for_its_end() -> None:
    store = object()
    order: list[str] = []
    done = threading.Event()

    def write() -> None:
        with writing(store, [FACTS]):
            order.append("write")
        done.set()

    with erasing(store, USER):
        thread = threading.Thread(target=write)
        thread.start()
        assert not done.wait(0.05)  # still held at the fence
        order.append("erased")
    thread.join(30)
    assert order == ["erased", "write"]


async def test_an_async_write_waits_without_blocking_the_event_loop() -> None:
    store = object()
    order: list[str] = []

    async def write() -> None:
        async with awriting(store, [FACTS]):
            order.append("write")

    async with aerasing(store, USER):
        task = asyncio.create_task(write())
        for _ in range(5):
            await asyncio.sleep(0)  # the loop keeps running other tasks
        order.append("erased")
    await asyncio.wait_for(task, 30)
    assert order == ["erased", "write"]


def test_a_queued_write_submitted_before_the_erasure_is_dropped_and_counted(
    tmp_path: Path,
) -> None:
    store = InMemoryStore()
    writer = DurableMemoryWriter(store, tmp_path, start=False)
    with started_at(generation()):
        writer.submit_put(FACTS, "f1", {"text": "cnryfencequeued"})
    with erasing(store, USER):  # an erasure that does not purge the outbox
        pass
    writer.start()
    writer.flush(30)
    stats = writer.stats()
    writer.close()
    assert (stats.erased, stats.pending, stats.dead_letters) == (1, 0, 0)
    assert store.get(FACTS, "f1") is None
    assert not any(b"cnryfencequeued" in p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())


def test_a_submit_started_before_the_erasure_is_refused(tmp_path: Path) -> None:
    store = InMemoryStore()
    with DurableMemoryWriter(store, tmp_path) as writer, call_started():
        with erasing(store, USER):
            pass
        with pytest.raises(UserErasedError):
            writer.submit_put(FACTS, "f1", {"text": "late"})
        assert writer.stats().pending == 0
