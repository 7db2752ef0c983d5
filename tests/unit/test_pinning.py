"""Pinning after creation: pinned facts and episodes survive every forgetting path."""

from __future__ import annotations

import pytest
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory import Episode, TieredMemory
from langchain_tiered_memory.consolidation import ForgettingPolicy
from langchain_tiered_memory.errors import InvalidInputError
from langchain_tiered_memory.testing.fakes import FakeClock
from langchain_tiered_memory.user_memory import UserMemory


def user_memory(policy: ForgettingPolicy | None = None) -> tuple[UserMemory, FakeClock]:
    clock = FakeClock()
    memory = TieredMemory(InMemoryStore(), clock=clock, forgetting=policy)
    return memory.for_user("alice"), clock


def forgotten_ids(report_forgotten: list[tuple[str, str]]) -> set[str]:
    return {key.split(":", 1)[1] for key, _ in report_forgotten}


def test_pinned_stale_low_confidence_fact_survives_consolidation() -> None:
    alice, clock = user_memory()
    kept = alice.semantic.store_fact("alice", "Owns a red bicycle", confidence=0.5).fact
    twin = alice.semantic.store_fact("alice", "Speaks fluent Portuguese", confidence=0.5).fact
    pinned = alice.semantic.pin_fact(kept.fact_id)
    assert pinned.pinned and pinned.fact_id == kept.fact_id
    clock.advance(days=90)  # both unconfirmed for 60+ days below confidence 0.6

    report = alice.consolidate()

    assert report.ok, report.errors
    assert forgotten_ids(report.forgotten) == {twin.fact_id}
    assert alice.semantic.get_fact(twin.fact_id) is None
    survivor = alice.semantic.get_fact(kept.fact_id)
    assert survivor is not None and survivor.pinned


def test_size_cap_never_forgets_a_pinned_fact() -> None:
    alice, _ = user_memory(ForgettingPolicy(max_items_per_user=1))
    weak = alice.semantic.store_fact("alice", "Collects old maps", confidence=0.7).fact
    strong = alice.semantic.store_fact("alice", "Is a trained nurse", confidence=0.95).fact
    alice.semantic.pin_fact(weak.fact_id)  # without the pin the cap would drop it (lower value)

    report = alice.consolidate()

    assert forgotten_ids(report.forgotten) == {strong.fact_id}
    assert alice.semantic.get_fact(weak.fact_id) is not None


def test_pinned_fact_is_not_merged_away_as_a_duplicate() -> None:
    alice, _ = user_memory()
    low = alice.semantic.store_fact("alice", "Likes green tea", confidence=0.6).fact
    facts_ns = alice.scope.namespace("semantic", "facts")
    high = low.model_copy(update={"fact_id": "dup", "confidence": 0.9})
    alice.runtime.store.batch([PutOp(facts_ns, "dup", high.model_dump(mode="json"))])
    alice.semantic.pin_fact(low.fact_id)

    report = alice.consolidate()

    assert report.facts_merged == 1
    assert alice.semantic.get_fact("dup") is None  # the unpinned duplicate went
    survivor = alice.semantic.get_fact(low.fact_id)
    assert survivor is not None and survivor.pinned and survivor.confidence == 0.9


def test_two_pinned_duplicates_are_both_kept() -> None:
    alice, _ = user_memory()
    first = alice.semantic.store_fact("alice", "Likes green tea", confidence=0.6).fact
    facts_ns = alice.scope.namespace("semantic", "facts")
    second = first.model_copy(update={"fact_id": "dup", "confidence": 0.9})
    alice.runtime.store.batch([PutOp(facts_ns, "dup", second.model_dump(mode="json"))])
    alice.semantic.pin_fact(first.fact_id)
    alice.semantic.pin_fact("dup")

    assert alice.consolidate().facts_merged == 0
    assert alice.semantic.get_fact(first.fact_id) is not None
    assert alice.semantic.get_fact("dup") is not None


def test_unpinned_fact_is_forgotten_again() -> None:
    alice, clock = user_memory()
    fact = alice.semantic.store_fact("alice", "Owns a red bicycle", confidence=0.5).fact
    alice.semantic.pin_fact(fact.fact_id)
    assert alice.semantic.pin_fact(fact.fact_id, pinned=False).pinned is False
    clock.advance(days=90)

    assert forgotten_ids(alice.consolidate().forgotten) == {fact.fact_id}


def test_fact_stored_without_the_pinned_field_loads_unpinned() -> None:
    alice, _ = user_memory()
    fact = alice.semantic.store_fact("alice", "Owns a red bicycle").fact
    facts_ns = alice.scope.namespace("semantic", "facts")
    old_value = fact.model_dump(mode="json")
    del old_value["pinned"]  # a record written before pinning existed
    alice.runtime.store.batch([PutOp(facts_ns, fact.fact_id, old_value)])

    loaded = alice.semantic.get_fact(fact.fact_id)
    assert loaded is not None and loaded.pinned is False
    assert alice.semantic.pin_fact(fact.fact_id).pinned


def test_episode_pinned_after_creation_survives_consolidation() -> None:
    alice, clock = user_memory()
    kept = alice.episodic.record(Episode(task_description="Book a flight", outcome="abandoned"))
    twin = alice.episodic.record(Episode(task_description="Rent a car", outcome="abandoned"))
    assert alice.episodic.pin_episode(kept.episode_id).pinned
    stored = alice.episodic.get(kept.episode_id)
    assert stored is not None and stored.pinned
    clock.advance(days=30)  # abandoned episodes go after 7 days

    report = alice.consolidate()

    assert twin.episode_id in forgotten_ids(report.forgotten)
    assert kept.episode_id not in forgotten_ids(report.forgotten)
    assert alice.episodic.get(kept.episode_id) is not None
    assert alice.episodic.get(twin.episode_id) is None


def test_unpin_episode() -> None:
    alice, _ = user_memory()
    ep = alice.episodic.record(
        Episode(task_description="Book a flight", outcome="success", pinned=True)
    )
    assert alice.episodic.pin_episode(ep.episode_id, pinned=False).pinned is False
    stored = alice.episodic.get(ep.episode_id)
    assert stored is not None and stored.pinned is False


async def test_async_pin_twins() -> None:
    alice, _ = user_memory()
    fact = (await alice.semantic.astore_fact("alice", "Owns a red bicycle")).fact
    ep = await alice.episodic.arecord(Episode(task_description="Book", outcome="success"))

    assert (await alice.semantic.apin_fact(fact.fact_id)).pinned
    assert (await alice.episodic.apin_episode(ep.episode_id)).pinned
    stored_fact = await alice.semantic.aget_fact(fact.fact_id)
    stored_ep = await alice.episodic.aget(ep.episode_id)
    assert stored_fact is not None and stored_fact.pinned
    assert stored_ep is not None and stored_ep.pinned


def test_unknown_ids_raise_with_a_fix() -> None:
    alice, _ = user_memory()
    with pytest.raises(InvalidInputError, match="no fact with id 'nope'"):
        alice.semantic.pin_fact("nope")
    with pytest.raises(InvalidInputError, match="no episode with id 'nope'"):
        alice.episodic.pin_episode("nope")


async def test_async_unknown_ids_raise() -> None:
    alice, _ = user_memory()
    with pytest.raises(InvalidInputError, match="no fact with id"):
        await alice.semantic.apin_fact("nope")
    with pytest.raises(InvalidInputError, match="no episode with id"):
        await alice.episodic.apin_episode("nope")


def test_pinned_must_be_a_bool() -> None:
    alice, _ = user_memory()
    fact = alice.semantic.store_fact("alice", "Owns a red bicycle").fact
    with pytest.raises(InvalidInputError, match="pinned is 'yes'"):
        alice.semantic.pin_fact(fact.fact_id, pinned="yes")  # type: ignore[arg-type]
