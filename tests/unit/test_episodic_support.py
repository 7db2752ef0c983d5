"""Fixtures shared by the episodic and procedural tests (imported by those modules).

``store`` is parametrized over LangGraph's ``InMemoryStore`` (fresh per test) and
the project's embedded Qdrant store (one per test module: opening one takes
seconds, so tests share it and stay apart through ``scope``, a fresh user per
test, which is also how real users are kept apart).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import BaseStore, IndexConfig, Op, Result
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory.stores import QdrantMemoryStore
from langchain_tiered_memory.testing.fakes import FakeClock, HashingEmbeddings
from langchain_tiered_memory.tiers.common.access import save_access
from langchain_tiered_memory.tiers.common.scope import MemoryScope

DIMS = 384
STORE_KINDS = ["inmemory", "qdrant"]


def hashing_index() -> IndexConfig:
    return {"dims": DIMS, "embed": HashingEmbeddings(size=DIMS), "fields": ["text"]}


def open_qdrant(path: Path) -> Any:
    return QdrantMemoryStore.embedded(path, index=hashing_index())


@pytest.fixture(scope="module")
def qdrant_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    store = open_qdrant(tmp_path_factory.mktemp("qdrant"))
    yield store
    save_access(store)  # access counts of this process, before the store goes
    store.close()


@pytest.fixture(params=STORE_KINDS)
def store(request: pytest.FixtureRequest) -> BaseStore:
    if request.param == "inmemory":
        return InMemoryStore(index=hashing_index())
    result: BaseStore = request.getfixturevalue("qdrant_store")
    return result


@pytest.fixture
def scope() -> MemoryScope:
    return MemoryScope(f"user-{uuid.uuid4().hex[:12]}")


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock()


class RecordingStore(BaseStore):
    """Wraps a store and records every operation and how many items searches returned."""

    def __init__(self, inner: BaseStore) -> None:
        self.inner = inner
        self.ops: list[Op] = []
        self.items_returned = 0

    def _note(self, ops: list[Op], results: list[Result]) -> list[Result]:
        self.ops.extend(ops)
        self.items_returned += sum(len(r) for r in results if isinstance(r, list))
        return results

    def batch(self, ops: Any) -> list[Result]:
        ops = list(ops)
        return self._note(ops, self.inner.batch(ops))

    async def abatch(self, ops: Any) -> list[Result]:
        ops = list(ops)
        return self._note(ops, await self.inner.abatch(ops))


class LockedStore(BaseStore):
    """Runs every batch of ``inner`` under one lock.

    LangGraph's ``InMemoryStore`` is not thread-safe (a search iterating a dict
    while another thread inserts raises "dictionary changed size during
    iteration"); serialising batches gives threads what a real store gives them:
    each batch atomic, batches of different threads interleaved arbitrarily.
    """

    def __init__(self, inner: BaseStore) -> None:
        self.inner = inner
        self.lock = threading.Lock()

    def batch(self, ops: Any) -> list[Result]:
        with self.lock:
            return self.inner.batch(list(ops))

    async def abatch(self, ops: Any) -> list[Result]:
        return self.batch(ops)


def thread_safe(store: BaseStore) -> BaseStore:
    """``store`` itself, or a :class:`LockedStore` around an ``InMemoryStore``."""
    return LockedStore(store) if isinstance(store, InMemoryStore) else store


def open_small_qdrant(path: Path, fields: list[str] | None = None) -> Any:
    """An embedded Qdrant store with 64-d hashing embeddings (quick to open and write)."""
    index = {"dims": 64, "embed": HashingEmbeddings(size=64), "fields": fields or ["text"]}
    return QdrantMemoryStore.embedded(path, index=index)


@pytest.fixture(params=["inmemory", "qdrant"])
def race_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseStore]:
    """A fresh store for threads: a locked ``InMemoryStore``, or a 64-d embedded Qdrant store."""
    if request.param == "inmemory":
        index: IndexConfig = {"dims": 64, "embed": HashingEmbeddings(size=64), "fields": ["text"]}
        yield LockedStore(InMemoryStore(index=index))
        return
    opened = open_small_qdrant(tmp_path / "qdrant")
    try:
        yield opened
    finally:
        save_access(opened)
        opened.close()


def run_with_helpers(
    workers: list[Callable[[], None]], helpers: list[Callable[[], None]], done: threading.Event
) -> list[BaseException]:
    """Run ``workers`` and ``helpers`` in threads; set ``done`` when the workers are through.

    Returns what any of them raised (helpers loop until ``done`` is set).
    """
    errors: list[BaseException] = []

    def guarded(target: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                target()
            except BaseException as exc:
                errors.append(exc)

        return run

    threads = [threading.Thread(target=guarded(w)) for w in workers]
    background = [threading.Thread(target=guarded(h)) for h in helpers]
    for t in threads + background:
        t.start()
    for t in threads:
        t.join(120)
    done.set()
    for t in background:
        t.join(120)
    return errors


class Progress:
    """Operations started and completed, to bound what a concurrent read may count."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.started = self.completed = 0

    @contextmanager
    def op(self) -> Iterator[None]:
        """Wrap one counted operation."""
        with self.lock:
            self.started += 1
        yield
        with self.lock:
            self.completed += 1

    def check(self, low: int, seen: int) -> None:
        """A read that began when ``low`` operations were complete saw ``seen``."""
        assert low <= seen <= self.started, (low, seen, self.started)
