"""Fact access counts: retrievals count, reads show them, the size cap uses them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from langgraph.store.base import Op, PutOp, Result
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.consolidation import ForgettingPolicy
from langchain_tiered_memory.testing.fakes import FakeClock
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.tiers.semantic.memory import SemanticMemory
from langchain_tiered_memory.tiers.semantic.models import SemanticConfig


class CountingStore(InMemoryStore):
    """An InMemoryStore that records every put it is asked to apply."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.puts: list[PutOp] = []

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        self.puts.extend(op for op in ops if isinstance(op, PutOp))
        return super().batch(ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return self.batch(ops)


def semantic(store: InMemoryStore | None = None, **config: Any) -> SemanticMemory:
    cfg = SemanticConfig(**config)
    return SemanticMemory(store or InMemoryStore(), MemoryScope("alice"), config=cfg)


def test_search_and_entity_context_count_accesses_without_writing() -> None:
    store = CountingStore()
    memory = semantic(store)
    fact = memory.store_fact("alice", "Owns a red bicycle").fact
    other = memory.store_fact("bob", "Plays the cello").fact
    assert memory.get_fact(fact.fact_id).access_count == 0  # type: ignore[union-attr]
    store.puts.clear()

    memory.semantic_search("bicycle")  # both facts are hits (no vector index: all match)
    memory.retrieve_entity_context("alice")

    assert store.puts == []  # the retrieval path wrote nothing
    assert memory.flush_access() == 2  # one saved count per fact
    assert memory.flush_access() == 0
    read = memory.get_fact(fact.fact_id)
    assert read is not None and read.access_count == 2  # from the store now
    assert read.last_accessed is not None
    assert [f.access_count for f in memory.get_facts("bob")] == [1]
    assert [f.access_count for f in memory.fact_history("bob")] == [1]
    assert memory.get_fact(other.fact_id).access_count == 1  # type: ignore[union-attr]


async def test_async_retrievals_count_accesses() -> None:
    memory = semantic()
    fact = (await memory.astore_fact("alice", "Owns a red bicycle")).fact

    await memory.asemantic_search("bicycle")
    await memory.aretrieve_entity_context("alice")
    assert await memory.aflush_access() == 1

    read = await memory.aget_fact(fact.fact_id)
    assert read is not None and read.access_count == 2
    assert [f.access_count for f in await memory.aget_facts("alice")] == [2]


def test_counts_are_not_stored_with_the_fact() -> None:
    memory = semantic()
    fact = memory.store_fact("alice", "Owns a red bicycle").fact
    memory.semantic_search("bicycle")
    pinned = memory.pin_fact(fact.fact_id)  # rewrites the fact record
    assert pinned.access_count == 1

    item = memory.store.get(MemoryScope("alice").namespace("semantic", "facts"), fact.fact_id)
    assert item is not None and "access_count" not in item.value
    memory.semantic_search("bicycle")
    assert memory.get_fact(fact.fact_id).access_count == 2  # type: ignore[union-attr]


def test_deleting_a_fact_forgets_its_accesses() -> None:
    memory = semantic()
    fact = memory.store_fact("alice", "Owns a red bicycle").fact
    memory.semantic_search("bicycle")
    memory.flush_access()
    memory.semantic_search("bicycle")  # one written, one buffered

    assert memory.delete_fact(fact.fact_id)
    memory.store.put(
        MemoryScope("alice").namespace("semantic", "facts"),
        fact.fact_id,
        fact.model_dump(mode="json"),
    )
    assert memory.get_fact(fact.fact_id).access_count == 0  # type: ignore[union-attr]


def test_access_tracking_can_be_turned_off() -> None:
    store = CountingStore()
    memory = semantic(store, track_access=False)
    fact = memory.store_fact("alice", "Owns a red bicycle").fact
    memory.semantic_search("bicycle")
    assert memory.flush_access() == 0
    assert memory.get_fact(fact.fact_id).access_count == 0  # type: ignore[union-attr]


def test_size_cap_keeps_the_more_accessed_of_two_equal_facts() -> None:
    clock = FakeClock()
    tiered = TieredMemory(
        InMemoryStore(), clock=clock, forgetting=ForgettingPolicy(max_items_per_user=1)
    )
    alice = tiered.for_user("alice")
    ann = alice.semantic.store_fact("ann", "Plays the cello", confidence=0.9).fact
    zed = alice.semantic.store_fact("zed", "Plays the flute", confidence=0.9).fact
    # Equal facts tie on value and the cap then drops the lower key first: make the
    # lower-keyed fact the more accessed one, so only the access counts can save it.
    more, less = sorted([ann, zed], key=lambda f: f.fact_id)
    for _ in range(3):
        alice.semantic.retrieve_entity_context(more.entity_id)
    alice.semantic.retrieve_entity_context(less.entity_id)
    clock.advance(days=100)

    report = alice.consolidate()

    assert report.ok, report.errors
    assert [key.split(":", 1)[1] for key, _ in report.forgotten] == [less.fact_id]
    assert alice.semantic.get_fact(more.fact_id) is not None


def test_size_cap_keeps_the_more_recently_retrieved_of_two_equal_facts() -> None:
    clock = FakeClock()
    tiered = TieredMemory(
        InMemoryStore(), clock=clock, forgetting=ForgettingPolicy(max_items_per_user=1)
    )
    alice = tiered.for_user("alice")
    ann = alice.semantic.store_fact("ann", "Plays the cello", confidence=0.9).fact
    rex = alice.semantic.store_fact("rex", "Chews shoes", confidence=0.9, entity_type="pet").fact
    # As above: the lower-keyed fact loses a tie, so it must be the recently retrieved one.
    recent, old = sorted([ann, rex], key=lambda f: f.fact_id)
    alice.semantic.semantic_search("anything", entity_type=old.entity_type)
    clock.advance(days=50)
    alice.semantic.semantic_search("anything", entity_type=recent.entity_type)
    clock.advance(days=50)

    report = alice.consolidate()

    assert [key.split(":", 1)[1] for key, _ in report.forgotten] == [old.fact_id]
