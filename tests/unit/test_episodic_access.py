# ruff: noqa: F811  (pytest fixtures imported from test_episodic_support are redefined as arguments)
"""Episode access counts: exact under concurrent retrievals, and no store I/O on retrieval."""

from __future__ import annotations

import functools
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import BaseStore, PutOp, Result
from langgraph.store.memory import InMemoryStore
from test_episodic_support import (  # noqa: F401 (fixtures)
    Progress,
    RecordingStore,
    fake_clock,
    hashing_index,
    qdrant_store,
    race_store,
    run_with_helpers,
    scope,
    store,
    thread_safe,
)

from langchain_tiered_memory.consolidation.policy import ForgettingPolicy, RetentionCandidate
from langchain_tiered_memory.errors import BackendError, ConfigurationError
from langchain_tiered_memory.testing.fakes import FakeClock
from langchain_tiered_memory.tiers.common.access import (
    aflush_access_buffers,
    flush_access_buffers,
)
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.tiers.episodic.memory import EpisodicConfig, EpisodicMemory
from langchain_tiered_memory.tiers.episodic.models import Episode

QUIET = EpisodicConfig(access_flush_seconds=None)  # no timer thread: writes only when asked


def record_five(memory: EpisodicMemory) -> list[Episode]:
    return [
        memory.record(Episode(task_description=f"deploy service {i}", outcome="success"))
        for i in range(5)
    ]


def counts(memory: EpisodicMemory, episodes: list[Episode]) -> list[int]:
    return [memory.get(e.episode_id).access_count for e in episodes]  # type: ignore[union-attr]


def access_items(store: BaseStore, memory: EpisodicMemory) -> list[Any]:
    return store.search(memory.access_namespace, limit=10_000)


class Reopened(BaseStore):
    """The same data seen as another process would: no access buffer of this one."""

    def __init__(self, inner: BaseStore) -> None:
        self.inner = inner

    def batch(self, ops: Any) -> list[Result]:
        return self.inner.batch(list(ops))

    async def abatch(self, ops: Any) -> list[Result]:
        return await self.inner.abatch(list(ops))


# --------------------------------------------------------------------------- hot path


def test_a_retrieval_does_no_store_io_for_its_accesses(scope: MemoryScope) -> None:
    spy = RecordingStore(InMemoryStore(index=hashing_index()))
    memory = EpisodicMemory(spy, scope, config=QUIET)
    episodes = record_five(memory)
    spy.ops.clear()
    memory.retrieve_similar("deploy service", top_k=5)
    memory.retrieve_recent(3)
    assert not [op for op in spy.ops if isinstance(op, PutOp)]
    namespaces = [getattr(op, "namespace_prefix", None) or op.namespace for op in spy.ops]
    assert memory.access_namespace not in [tuple(ns[:5]) for ns in namespaces]
    assert sorted(counts(memory, episodes)) == [1, 1, 2, 2, 2]


def test_accesses_of_one_episode_are_written_as_one_event(
    store: BaseStore, scope: MemoryScope
) -> None:
    memory = EpisodicMemory(store, scope, config=QUIET)
    episodes = record_five(memory)
    for _ in range(10):
        memory.retrieve_similar("deploy service", top_k=5)
    assert counts(memory, episodes) == [10] * 5  # buffered, counted in this process
    assert counts(EpisodicMemory(Reopened(store), scope), episodes) == [0] * 5
    assert memory.flush_access() == 5
    assert memory.flush_access() == 0
    assert counts(EpisodicMemory(Reopened(store), scope), episodes) == [10] * 5


def test_the_buffer_is_written_when_full_and_by_the_timer(scope: MemoryScope) -> None:
    store = InMemoryStore(index=hashing_index())
    full = EpisodicMemory(
        store, scope, config=EpisodicConfig(access_flush_size=5, access_flush_seconds=None)
    )
    episodes = record_five(full)
    full.retrieve_similar("deploy service", top_k=5)  # 5 episodes buffered: written at once
    assert len(access_items(store, full)) == 5
    other = MemoryScope(scope.user_id + "-timer")
    timed = EpisodicMemory(store, other, config=EpisodicConfig(access_flush_seconds=0.05))
    mine = record_five(timed)
    timed.retrieve_similar("deploy service", top_k=2)
    timed.access.buffer.timer.join(5)  # type: ignore[union-attr]
    assert len(access_items(store, timed)) == 2
    assert sum(counts(EpisodicMemory(Reopened(store), other), mine)) == 2
    assert counts(full, episodes) == [1] * 5


def test_closing_flush_waits_for_a_background_write_in_flight(scope: MemoryScope) -> None:
    store = InMemoryStore(index=hashing_index())
    memory = EpisodicMemory(store, scope, config=QUIET)
    episodes = record_five(memory)
    memory.retrieve_similar("deploy service", top_k=5)  # 5 events buffered
    buffer = memory.access.buffer
    claimed = buffer.claim(3)  # a timer thread took 3 events and is writing them ...

    def failing_write() -> None:
        time.sleep(0.2)
        buffer.settle(claimed, written=False)  # ... and its write failed: they go back

    writer = threading.Thread(target=failing_write)
    writer.start()
    written = flush_access_buffers(store)  # what TieredMemory.close() calls
    writer.join()
    assert written == 5
    assert not buffer.queued and not buffer.inflight
    assert sum(counts(EpisodicMemory(Reopened(store), scope), episodes)) == 5


def test_retrieval_results_carry_counts_when_asked(
    store: BaseStore, scope: MemoryScope, fake_clock: FakeClock
) -> None:
    config = EpisodicConfig(access_counts_in_results=True, access_flush_seconds=None)
    memory = EpisodicMemory(store, scope, config=config, clock=fake_clock)
    (e,) = [memory.record(Episode(task_description="rotate keys", outcome="success"))]
    for n in range(1, 4):
        fake_clock.advance(minutes=1)
        (hit,) = memory.retrieve_similar("rotate keys", top_k=1)
        assert (hit.episode.access_count, hit.episode.last_accessed) == (n, fake_clock())
    memory.flush_access()
    memory.compact_access()
    (hit,) = memory.retrieve_similar("rotate keys", top_k=1)
    assert hit.episode.access_count == 4 and counts(memory, [e]) == [4]


# --------------------------------------------------------------------------- failures and deletes


class FailingAccessWrites(BaseStore):
    def __init__(self, inner: BaseStore) -> None:
        self.inner = inner
        self.broken = True

    def batch(self, ops: Any) -> list[Result]:
        ops = list(ops)
        if self.broken and any(isinstance(op, PutOp) and "access" in op.namespace for op in ops):
            raise BackendError("store unavailable")
        return self.inner.batch(ops)

    async def abatch(self, ops: Any) -> list[Result]:
        return self.batch(ops)


async def test_a_failed_write_keeps_the_accesses_for_the_next_one(scope: MemoryScope) -> None:
    failing = FailingAccessWrites(InMemoryStore(index=hashing_index()))
    memory = EpisodicMemory(failing, scope, config=QUIET)
    episodes = record_five(memory)
    await memory.aretrieve_similar("deploy service", top_k=5)
    with pytest.raises(BackendError):
        await memory.aflush_access()
    assert counts(memory, episodes) == [1] * 5  # still counted, still buffered
    failing.broken = False
    assert await memory.aflush_access() == 5
    assert counts(EpisodicMemory(Reopened(failing.inner), scope), episodes) == [1] * 5


def test_deleting_an_episode_forgets_its_written_and_buffered_accesses(
    store: BaseStore, scope: MemoryScope
) -> None:
    memory = EpisodicMemory(store, scope, config=QUIET)
    (e,) = [memory.record(Episode(task_description="temporary", outcome="success"))]
    memory.retrieve_similar("temporary", top_k=1)
    memory.compact_access()  # written and folded into a segment
    memory.retrieve_similar("temporary", top_k=1)
    memory.flush_access()  # written, not folded
    memory.retrieve_similar("temporary", top_k=1)  # buffered
    memory.delete(e.episode_id)
    assert memory.flush_access() == 0
    assert store.search(scope.prefix, limit=10) == []


# --------------------------------------------------------------------------- compaction


def test_compaction_keeps_counts_for_listings_and_forgetting(
    store: BaseStore, scope: MemoryScope, fake_clock: FakeClock
) -> None:
    config = EpisodicConfig(access_flush_seconds=None, access_compact_after=3)
    memory = EpisodicMemory(store, scope, config=config, clock=fake_clock)
    episodes = record_five(memory)
    for i in range(8):
        fake_clock.advance(minutes=1)
        memory.retrieve_similar(f"deploy service {i % 2}", top_k=1)
        memory.flush_access()  # one stored event per retrieval
    now = fake_clock()
    listed = memory.get_episodes_in_range(now - timedelta(days=1), now)
    by_id = {e.episode_id: e.access_count for e in listed}
    assert sum(by_id.values()) == 8 and sorted(by_id.values()) == [0, 0, 0, 4, 4]
    log = memory.access.log  # the listing compacted the 4 + 4 events into two segments
    assert store.search(log.events_namespace) == []
    assert len(store.search(log.folded_namespace)) == 2
    again = memory.get_episodes_in_range(now - timedelta(days=1), now)
    assert {e.episode_id: e.access_count for e in again} == by_id
    assert memory.compact_access().raw_deleted == 0
    assert counts(memory, episodes) == [by_id[e.episode_id] for e in episodes]
    # The forgetting policy ranks by these counts: the retrieved episodes are worth more.
    policy = ForgettingPolicy(max_items_per_user=2)
    candidates = [
        RetentionCandidate(e.episode_id, e.created_at, access_count=e.access_count) for e in listed
    ]
    removed = {key for key, _ in policy.select_for_removal(candidates, now)}
    assert removed == {k for k, n in by_id.items() if n == 0}


def test_concurrent_retrievals_give_exact_access_counts(
    race_store: BaseStore, scope: MemoryScope
) -> None:
    """Threads retrieve, flush (buffer full, timer), compact and count at the same time."""
    config = EpisodicConfig(access_flush_size=3, access_flush_seconds=0.005, access_compact_after=2)
    episodes = record_five(EpisodicMemory(race_store, scope))
    threads, rounds = 6, 15
    progress = Progress()
    done = threading.Event()

    def retrieve() -> None:
        memory = EpisodicMemory(race_store, scope, config=config)  # one per worker
        for _ in range(rounds):
            with progress.op():
                assert len(memory.retrieve_similar("deploy service", top_k=5)) == 5

    def maintain(n: int) -> None:
        memory = EpisodicMemory(race_store, scope, config=config)
        while not done.is_set():
            low = progress.completed
            progress.check(low, counts(memory, episodes[n : n + 1])[0])
            memory.compact_access()

    errors = run_with_helpers(
        [retrieve] * threads, [functools.partial(maintain, n) for n in range(3)], done
    )
    assert errors == []
    memory = EpisodicMemory(race_store, scope, config=config)
    assert counts(memory, episodes) == [threads * rounds] * 5
    memory.flush_access()
    elsewhere = EpisodicMemory(Reopened(race_store), scope)
    assert counts(elsewhere, episodes) == [threads * rounds] * 5
    memory.compact_access()
    assert counts(elsewhere, episodes) == [threads * rounds] * 5


async def test_every_buffer_of_a_store_can_be_written_before_closing(tmp_path: Path) -> None:
    store = InMemoryStore(index=hashing_index())
    a = EpisodicMemory(store, MemoryScope("a-flush"), config=QUIET)
    b = EpisodicMemory(store, MemoryScope("b-flush"), config=QUIET)
    for memory in (a, b):
        record_five(memory)
        memory.retrieve_similar("deploy", top_k=2)
    assert flush_access_buffers(store) == 4
    a.retrieve_similar("deploy", top_k=1)
    assert await aflush_access_buffers(store) == 1
    assert flush_access_buffers(InMemoryStore()) == 0


def test_access_settings_are_checked() -> None:
    for bad in (
        {"access_flush_size": 0},
        {"access_flush_seconds": 0},
        {"access_flush_seconds": float("nan")},
        {"access_compact_after": 0},
    ):
        with pytest.raises(ConfigurationError):
            EpisodicConfig(**bad)  # type: ignore[arg-type]
