# ruff: noqa: F811  (pytest fixtures imported from test_episodic_support are redefined as arguments)
"""Episode access counts: no store I/O on retrieval, saved later, exact under concurrency."""

from __future__ import annotations

import functools
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import BaseStore, PutOp, Result
from langgraph.store.memory import InMemoryStore
from test_episodic_support import (  # noqa: F401 (fixtures)
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
from langchain_tiered_memory.errors import BackendError
from langchain_tiered_memory.testing.fakes import FakeClock
from langchain_tiered_memory.tiers.common.access import asave_access, save_access
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.tiers.episodic.memory import EpisodicConfig, EpisodicMemory
from langchain_tiered_memory.tiers.episodic.models import Episode

QUIET = EpisodicConfig()


def record_five(memory: EpisodicMemory) -> list[Episode]:
    return [
        memory.record(Episode(task_description=f"deploy service {i}", outcome="success"))
        for i in range(5)
    ]


def counts(memory: EpisodicMemory, episodes: list[Episode]) -> list[int]:
    return [memory.get(e.episode_id).access_count for e in episodes]  # type: ignore[union-attr]


def access_items(store: BaseStore, memory: EpisodicMemory) -> list[Any]:
    return store.search(memory.access.namespace, limit=10_000)


class Reopened(BaseStore):
    """The same data seen as another process would: no unsaved counts of this one."""

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
    for _ in range(300):  # however many: nothing is written on the way
        memory.retrieve_similar("deploy service", top_k=5)
    memory.retrieve_recent(3)
    assert not [op for op in spy.ops if isinstance(op, PutOp)]
    namespaces = [getattr(op, "namespace_prefix", None) or op.namespace for op in spy.ops]
    assert memory.access.namespace not in [tuple(ns[:5]) for ns in namespaces]
    assert sorted(counts(memory, episodes)) == [300, 300, 301, 301, 301]


def test_counts_are_saved_as_one_item_per_episode(store: BaseStore, scope: MemoryScope) -> None:
    memory = EpisodicMemory(store, scope, config=QUIET)
    episodes = record_five(memory)
    for _ in range(10):
        memory.retrieve_similar("deploy service", top_k=5)
    assert counts(memory, episodes) == [10] * 5  # counted in this process
    assert counts(EpisodicMemory(Reopened(store), scope), episodes) == [0] * 5
    assert memory.flush_access() == 5
    assert memory.flush_access() == 0
    assert len(access_items(store, memory)) == 5
    assert counts(EpisodicMemory(Reopened(store), scope), episodes) == [10] * 5
    memory.retrieve_similar("deploy service", top_k=5)  # saved counts grow
    memory.flush_access()
    assert counts(EpisodicMemory(Reopened(store), scope), episodes) == [11] * 5


def test_retrieval_results_carry_counts_when_asked(
    store: BaseStore, scope: MemoryScope, fake_clock: FakeClock
) -> None:
    config = EpisodicConfig(access_counts_in_results=True)
    memory = EpisodicMemory(store, scope, config=config, clock=fake_clock)
    (e,) = [memory.record(Episode(task_description="rotate keys", outcome="success"))]
    for n in range(1, 4):
        fake_clock.advance(minutes=1)
        (hit,) = memory.retrieve_similar("rotate keys", top_k=1)
        assert (hit.episode.access_count, hit.episode.last_accessed) == (n, fake_clock())
    memory.flush_access()
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


async def test_a_failed_save_keeps_the_counts_for_the_next_one(scope: MemoryScope) -> None:
    failing = FailingAccessWrites(InMemoryStore(index=hashing_index()))
    memory = EpisodicMemory(failing, scope, config=QUIET)
    episodes = record_five(memory)
    await memory.aretrieve_similar("deploy service", top_k=5)
    with pytest.raises(BackendError):
        await memory.aflush_access()
    assert counts(memory, episodes) == [1] * 5  # still counted, not saved
    failing.broken = False
    assert await memory.aflush_access() == 5
    assert counts(EpisodicMemory(Reopened(failing.inner), scope), episodes) == [1] * 5


def test_deleting_an_episode_forgets_its_saved_and_unsaved_counts(
    store: BaseStore, scope: MemoryScope
) -> None:
    memory = EpisodicMemory(store, scope, config=QUIET)
    (e,) = [memory.record(Episode(task_description="temporary", outcome="success"))]
    memory.retrieve_similar("temporary", top_k=1)
    memory.flush_access()  # saved
    memory.retrieve_similar("temporary", top_k=1)  # not saved
    memory.delete(e.episode_id)
    assert memory.flush_access() == 0
    assert store.search(scope.prefix, limit=10) == []


def test_a_retrieval_racing_a_delete_saves_no_count_for_the_deleted_episode(
    store: BaseStore, scope: MemoryScope
) -> None:
    memory = EpisodicMemory(store, scope, config=QUIET)
    (e,) = [memory.record(Episode(task_description="temporary", outcome="success"))]
    memory.delete(e.episode_id)
    memory.access.touch([e.episode_id])  # a retrieval that found it just before the delete
    assert memory.flush_access() == 0
    assert store.search(scope.prefix, limit=10) == []


# --------------------------------------------------------------------------- the forgetting policy


def test_listings_carry_the_counts_the_forgetting_policy_ranks_by(
    store: BaseStore, scope: MemoryScope, fake_clock: FakeClock
) -> None:
    memory = EpisodicMemory(store, scope, config=QUIET, clock=fake_clock)
    episodes = record_five(memory)
    for i in range(8):
        fake_clock.advance(minutes=1)
        memory.retrieve_similar(f"deploy service {i % 2}", top_k=1)
        if i == 3:
            memory.flush_access()  # half saved, half not: listings add both
    now = fake_clock()
    listed = memory.get_episodes_in_range(now - timedelta(days=1), now)
    by_id = {e.episode_id: e.access_count for e in listed}
    assert sum(by_id.values()) == 8 and sorted(by_id.values()) == [0, 0, 0, 4, 4]
    assert counts(memory, episodes) == [by_id[e.episode_id] for e in episodes]
    policy = ForgettingPolicy(max_items_per_user=2)
    candidates = [
        RetentionCandidate(e.episode_id, e.created_at, access_count=e.access_count) for e in listed
    ]
    removed = {key for key, _ in policy.select_for_removal(candidates, now)}
    assert removed == {k for k, n in by_id.items() if n == 0}


def test_concurrent_retrievals_and_saves_give_exact_access_counts(
    race_store: BaseStore, scope: MemoryScope
) -> None:
    """Threads retrieve while others save the counts and read them, at the same time."""
    episodes = record_five(EpisodicMemory(race_store, scope))
    threads, rounds = 6, 15
    done = threading.Event()

    def retrieve() -> None:
        memory = EpisodicMemory(race_store, scope, config=QUIET)  # one per worker
        for _ in range(rounds):
            assert len(memory.retrieve_similar("deploy service", top_k=5)) == 5

    def maintain(n: int) -> None:
        memory = EpisodicMemory(race_store, scope, config=QUIET)
        while not done.is_set():
            counts(memory, episodes[n : n + 1])
            memory.flush_access()

    errors = run_with_helpers(
        [retrieve] * threads, [functools.partial(maintain, n) for n in range(3)], done
    )
    assert errors == []
    memory = EpisodicMemory(race_store, scope, config=QUIET)
    assert counts(memory, episodes) == [threads * rounds] * 5
    memory.flush_access()
    elsewhere = EpisodicMemory(Reopened(race_store), scope)
    assert counts(elsewhere, episodes) == [threads * rounds] * 5


async def test_every_count_of_a_store_can_be_saved_before_closing(tmp_path: Path) -> None:
    store = InMemoryStore(index=hashing_index())
    a = EpisodicMemory(store, MemoryScope("a-flush"), config=QUIET)
    b = EpisodicMemory(store, MemoryScope("b-flush"), config=QUIET)
    for memory in (a, b):
        record_five(memory)
        memory.retrieve_similar("deploy", top_k=2)
    assert save_access(store) == 4
    a.retrieve_similar("deploy", top_k=1)
    assert await asave_access(store) == 1
    assert save_access(InMemoryStore()) == 0
