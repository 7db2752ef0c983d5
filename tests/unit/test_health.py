"""``TieredMemory.stats()`` figures: growth, fact staleness, episodes ever retrieved.

Each figure is checked through both twins, ``stats()`` and ``astats()``.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory import Episode, TieredMemory
from langchain_tiered_memory.export_import import RestoreOp, write_records
from langchain_tiered_memory.testing.fakes import FakeClock, HashingEmbeddings
from langchain_tiered_memory.tiers.common.scope import MemoryScope

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)


def make_memory(clock: FakeClock) -> TieredMemory:
    store = InMemoryStore(index={"dims": 384, "embed": HashingEmbeddings(), "fields": ["text"]})
    return TieredMemory(store, clock=clock)


async def both(memory: TieredMemory) -> dict[str, Any]:
    """``stats()``, after checking that ``astats()`` reports the same."""
    stats = memory.stats()
    assert await memory.astats() == stats
    return stats


def aged(user: str, tier: str, key: str, age: timedelta) -> RestoreOp:
    """A record of ``user`` in ``tier`` created ``age`` before :data:`NOW`."""
    at = NOW - age
    return RestoreOp(MemoryScope(user).namespace(tier, "notes"), key, {"text": key}, at, at)


async def test_growth_counts_items_created_in_the_last_day_and_week() -> None:
    memory = make_memory(FakeClock(NOW))
    write_records(
        memory.store,
        [
            aged("alice", "episodic", "1h", timedelta(hours=1)),
            aged("alice", "semantic", "23h", timedelta(hours=23)),
            aged("alice", "semantic", "2d", timedelta(days=2)),
            aged("bob", "procedural", "6d", timedelta(days=6, hours=23)),
            aged("bob", "procedural", "8d", timedelta(days=8)),
            aged("bob", "semantic", "30d", timedelta(days=30)),
        ],
    )
    stats = await both(memory)
    assert stats["total_items"] == 6
    assert stats["growth"] == {"last_24h": 2, "last_7d": 4}
    # Not-user records (the audit trail, access events) are not memories: no growth.
    memory.store.put(MemoryScope("alice").namespace("_audit"), "a1", {"action": "soft_delete"})
    assert (await both(memory))["growth"] == {"last_24h": 2, "last_7d": 4}


async def test_growth_moves_with_the_memory_clock() -> None:
    clock = FakeClock(NOW)
    memory = make_memory(clock)
    write_records(memory.store, [aged("alice", "semantic", "1h", timedelta(hours=1))])
    assert (await both(memory))["growth"] == {"last_24h": 1, "last_7d": 1}
    clock.advance(days=2)
    assert (await both(memory))["growth"] == {"last_24h": 0, "last_7d": 1}
    clock.advance(days=6)
    assert (await both(memory))["growth"] == {"last_24h": 0, "last_7d": 0}


async def test_fact_staleness_buckets_current_facts_by_last_confirmation() -> None:
    clock = FakeClock(NOW)
    memory = make_memory(clock)
    facts = memory.for_user("alice").semantic
    empty = {"<7d": 0, "7-30d": 0, "30-90d": 0, ">=90d": 0}
    assert (await both(memory))["fact_staleness"] == empty
    facts.store_fact("alice", "Speaks Italian")  # confirmed 163 days before the end
    facts.store_fact("alice", "Lives in Lyon", attribute="city", value="Lyon")
    clock.advance(days=100)
    moved = facts.store_fact("alice", "Lives in Paris", attribute="city", value="Paris")
    assert moved.outcome == "superseded"  # Lyon is no longer current: not counted
    clock.advance(days=40)
    facts.store_fact("alice", "Allergic to shellfish")
    clock.advance(days=20)
    facts.store_fact("alice", "Plays the cello on weekends")
    clock.advance(days=3)
    # Ages: Italian 163d, Paris 63d, shellfish 23d, cello 3d.
    stats = await both(memory)
    assert stats["fact_staleness"] == {"<7d": 1, "7-30d": 1, "30-90d": 1, ">=90d": 1}
    clock.advance(days=30)  # cello 33d, shellfish 53d, Paris 93d
    stats = await both(memory)
    assert stats["fact_staleness"] == {"<7d": 0, "7-30d": 0, "30-90d": 2, ">=90d": 2}
    facts.store_fact("alice", "Speaks Italian")  # stated again: confirmed now
    stats = await both(memory)
    assert stats["fact_staleness"] == {"<7d": 1, "7-30d": 0, "30-90d": 2, ">=90d": 1}


async def test_share_of_episodes_ever_retrieved() -> None:
    memory = make_memory(FakeClock(datetime.now(timezone.utc)))
    alice, bob = memory.for_user("alice").episodic, memory.for_user("bob").episodic
    for task in ("Deploy the payments service", "Book a flight to Rome", "Cook a risotto"):
        alice.record(Episode(task_description=task, outcome="success"))
    bob.record(Episode(task_description="Book a flight to Oslo", outcome="success"))
    assert (await both(memory))["episodes_ever_retrieved"] == 0.0

    [hit] = alice.retrieve_similar("flight to Rome", top_k=1)
    assert hit.episode.task_description == "Book a flight to Rome"
    assert alice.flush_access() == 1
    assert (await both(memory))["episodes_ever_retrieved"] == 1 / 4

    # Retrieving the same episode again does not move the share: it counts episodes.
    alice.retrieve_similar("flight to Rome", top_k=1)
    alice.flush_access()
    assert (await both(memory))["episodes_ever_retrieved"] == 1 / 4

    # Another user's retrieval counts too, and stats() counts accesses not yet flushed.
    [hit] = await bob.aretrieve_similar("flight to Oslo", top_k=1)
    assert (await both(memory))["episodes_ever_retrieved"] == 2 / 4

    # Counts saved again (stats() saved them) keep the share.
    alice.retrieve_similar("flight to Rome", top_k=1)
    assert alice.flush_access() == 1
    assert (await both(memory))["episodes_ever_retrieved"] == 2 / 4


async def test_share_of_facts_and_memories_ever_retrieved() -> None:
    memory = make_memory(FakeClock(NOW))
    alice = memory.for_user("alice")
    alice.semantic.store_fact("alice", "Allergic to shellfish")
    alice.semantic.store_fact("alice", "Plays the cello on weekends")
    alice.episodic.record(Episode(task_description="Book a flight to Rome", outcome="success"))
    before = await both(memory)
    assert before["facts_ever_retrieved"] == before["memories_ever_retrieved"] == 0.0

    hits = alice.semantic.semantic_search("shellfish allergy", top_k=1)
    assert [h.fact.content for h in hits] == ["Allergic to shellfish"]
    stats = await both(memory)  # stats() writes the buffered access first
    assert stats["facts_ever_retrieved"] == 1 / 2
    assert stats["episodes_ever_retrieved"] == 0.0
    assert stats["memories_ever_retrieved"] == 1 / 3
    # Access events are statistics, not memories: the user's item count is unchanged.
    assert stats["users"]["alice"]["semantic"] == before["users"]["alice"]["semantic"]
