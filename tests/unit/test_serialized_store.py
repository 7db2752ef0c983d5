"""Stores that are not thread-safe (InMemoryStore) are used one operation at a time."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Hashable, Iterable

from langgraph.store.base import BaseStore, Op, Result
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory import Episode, Outcome, TieredMemory
from langchain_tiered_memory.stores.abilities import (
    Closable,
    NamespaceVersioned,
    Purging,
    QueryPrefetching,
    ReadConcurrency,
    Restoring,
)
from langchain_tiered_memory.stores.restore import RestoreOp
from langchain_tiered_memory.stores.serialized import SerializedStore, thread_safe, unwrap
from langchain_tiered_memory.testing.fakes import HashingEmbeddings


class _Overlap(InMemoryStore):
    """Records whether two operations ever ran at once."""

    def __init__(self) -> None:
        super().__init__()
        self.running = 0
        self.max_running = 0
        self.guard = threading.Lock()

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        with self.guard:
            self.running += 1
            self.max_running = max(self.max_running, self.running)
        try:
            time.sleep(0.002)
            return super().batch(ops)
        finally:
            with self.guard:
                self.running -= 1

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return self.batch(ops)


def test_one_wrapper_per_store_and_other_stores_untouched() -> None:
    raw = InMemoryStore()
    wrapped = thread_safe(raw)
    assert isinstance(wrapped, SerializedStore) and unwrap(wrapped) is raw
    assert thread_safe(raw) is wrapped and thread_safe(wrapped) is wrapped
    assert thread_safe(InMemoryStore()) is not wrapped

    class Other(BaseStore):
        def batch(self, ops: Iterable[Op]) -> list[Result]:
            return []

        async def abatch(self, ops: Iterable[Op]) -> list[Result]:
            return []

    other = Other()
    assert thread_safe(other) is other


def test_operations_from_many_threads_never_overlap() -> None:
    raw = _Overlap()
    store = thread_safe(raw)

    def work(t: int) -> None:
        for i in range(20):
            store.put(("n", str(t)), str(i), {"i": i})
            store.search(("n",), limit=5)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert raw.max_running == 1
    assert len(store.search(("n",), limit=1000)) == 80


def test_async_twin_goes_through_the_same_lock() -> None:
    raw = _Overlap()
    store = thread_safe(raw)

    async def main() -> None:
        await asyncio.gather(*(store.aput(("n",), str(i), {"i": i}) for i in range(10)))

    writer = threading.Thread(target=lambda: [store.put(("m",), str(i), {}) for i in range(20)])
    writer.start()
    asyncio.run(main())
    writer.join()
    assert raw.max_running == 1


def test_memory_on_in_memory_store_survives_writes_from_other_threads() -> None:
    # Without the lock: writes from other threads (the timer that writes buffered episode
    # accesses, or an app's own writer) raced the assembler's reads on
    # InMemoryStore: "dictionary changed size during iteration".
    emb = HashingEmbeddings()
    raw = InMemoryStore(index={"dims": emb.size, "embed": emb, "fields": ["text", "content"]})
    memory = TieredMemory(raw)
    assert memory.store is thread_safe(raw)
    alice = memory.for_user("alice")
    assert alice.episodic.store is memory.store and alice.semantic.store is memory.store
    for i in range(400):  # searches iterate this many items: a wide window for the race
        alice.episodic.record(Episode(task_description=f"setup {i}", outcome=Outcome.SUCCESS))
    done = threading.Event()

    def writer() -> None:  # bounded: the store (and each brute-force search) stays small
        for i in range(120):
            alice.episodic.record(Episode(task_description=f"deploy {i}", outcome=Outcome.SUCCESS))
            alice.episodic.flush_access()
        done.set()

    thread = threading.Thread(target=writer)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often: the race shows up within the run
    thread.start()
    errors = []
    try:
        while not done.is_set() or len(errors) < 20:
            errors.append(alice.build_memory_context(f"deploy {len(errors)}").errors)
    finally:
        thread.join()
        sys.setswitchinterval(interval)
    assert all(not e for e in errors), [e for e in errors if e][:3]
    memory.close()


class _Able(InMemoryStore):
    """An InMemoryStore (so wrapped) with every optional ability; records the lock's state."""

    def __init__(self) -> None:
        super().__init__()
        self.wrapper: SerializedStore | None = None
        self.calls: list[tuple[str, bool]] = []

    def _note(self, name: str) -> None:
        # Whether another thread could take the wrapper's lock while this call runs.
        assert self.wrapper is not None
        free: list[bool] = []

        def probe() -> None:
            got = self.wrapper.lock.acquire(blocking=False)  # type: ignore[union-attr]
            if got:
                self.wrapper.lock.release()  # type: ignore[union-attr]
            free.append(got)

        thread = threading.Thread(target=probe)
        thread.start()
        thread.join()
        self.calls.append((name, free[0]))

    def purge_deleted(self, timeout: float | None = None) -> object:
        self._note("purge_deleted")
        return "purged"

    async def apurge_deleted(self, timeout: float | None = None) -> object:
        self._note("apurge_deleted")
        return "purged"

    def restore_items(self, ops: Iterable[RestoreOp]) -> int:
        self._note("restore_items")
        return len(list(ops))

    async def arestore_items(self, ops: Iterable[RestoreOp]) -> int:
        self._note("arestore_items")
        return len(list(ops))

    def namespace_version(self, namespace_prefix: tuple[str, ...]) -> Hashable | None:
        self._note("namespace_version")
        return 7

    def prefetch_query(self, query: str) -> bool:
        self._note("prefetch_query")
        return True


def test_the_wrapper_has_the_abilities_of_its_store_and_runs_them_under_its_lock() -> None:
    raw = _Able()
    store = thread_safe(raw)
    assert isinstance(store, SerializedStore)
    raw.wrapper = store
    assert isinstance(store, ReadConcurrency) and store.concurrent_reads is False
    assert isinstance(store, Purging) and isinstance(store, Restoring)
    assert isinstance(store, NamespaceVersioned) and isinstance(store, QueryPrefetching)
    assert not isinstance(store, Closable)  # the store it wraps cannot close
    assert store.purge_deleted() == "purged"
    assert store.restore_items([]) == 0
    assert store.namespace_version(("a",)) == 7
    assert store.prefetch_query("q") is True

    async def twins(able: Purging | Restoring) -> None:
        assert isinstance(able, Purging) and isinstance(able, Restoring)
        assert await able.apurge_deleted() == "purged"
        assert await able.arestore_items([]) == 0

    asyncio.run(twins(store))
    names = [name for name, _ in raw.calls]
    assert names == [
        "purge_deleted",
        "restore_items",
        "namespace_version",
        "prefetch_query",
        "apurge_deleted",
        "arestore_items",
    ]
    assert not any(free for _, free in raw.calls), raw.calls  # the lock was held each time


def test_the_wrapper_of_a_plain_store_claims_no_ability_it_lacks() -> None:
    store = thread_safe(InMemoryStore())
    abilities = (Closable, NamespaceVersioned, Purging, QueryPrefetching, Restoring)
    assert not any(isinstance(store, ability) for ability in abilities)
    assert isinstance(store, ReadConcurrency) and store.concurrent_reads is False
