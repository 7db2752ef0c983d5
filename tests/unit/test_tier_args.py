"""Tier constructor checks (one helper for every tier) and episode times from the tier's clock."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory.errors import ConfigurationError, InvalidInputError
from langchain_tiered_memory.testing.fakes import FakeClock, HashingEmbeddings
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.tiers.episodic.conversations import ConversationIndex
from langchain_tiered_memory.tiers.episodic.memory import EpisodicMemory
from langchain_tiered_memory.tiers.episodic.models import Episode
from langchain_tiered_memory.tiers.procedural.memory import ProceduralMemory

TIERS = [EpisodicMemory, ProceduralMemory, ConversationIndex]


@pytest.mark.parametrize("tier", TIERS)
def test_every_tier_checks_its_arguments_the_same_way(tier: Any) -> None:
    scope = MemoryScope("alice")
    with pytest.raises(ConfigurationError, match=r"store must be a langgraph BaseStore, got dict"):
        tier({}, scope)
    with pytest.raises(ConfigurationError, match=r"scope must be a MemoryScope, got str.*alice"):
        tier(InMemoryStore(), "alice")
    with pytest.raises(ConfigurationError, match=r"clock must be a callable.*FakeClock"):
        tier(InMemoryStore(), scope, clock=FakeClock()())
    assert tier(InMemoryStore(), scope, clock=FakeClock()).scope == scope


def test_an_episode_without_a_time_gets_the_memorys_clock() -> None:
    clock = FakeClock(datetime(2030, 5, 1, 12, 0, tzinfo=timezone.utc))
    store = InMemoryStore(index={"dims": 64, "embed": HashingEmbeddings(size=64)})
    memory = EpisodicMemory(store, MemoryScope("alice"), clock=clock)
    stored = memory.record(Episode(task_description="defaulted", outcome="success"))
    assert stored.created_at == clock()
    from_dict = memory.record({"task_description": "dict", "outcome": "failure"})
    unset = {"task_description": "none", "outcome": "failure", "created_at": None}
    from_none = memory.record(unset)
    assert from_dict.created_at == from_none.created_at == clock()
    given = datetime(2029, 1, 1, tzinfo=timezone.utc)
    kept = memory.record(Episode(task_description="given", outcome="success", created_at=given))
    assert kept.created_at == given
    # What is stored is what comes back, and it is in the memory's time line.
    fetched = memory.get(stored.episode_id)
    assert fetched is not None and fetched.created_at == clock()
    assert [e.task_description for e in memory.retrieve_recent(3)] == ["none", "dict", "defaulted"]
    clock.advance(days=1)
    window = memory.get_episodes_in_range(clock() - timedelta(days=2), clock())
    assert [e.task_description for e in window] == ["defaulted", "dict", "none"]


def test_a_copied_episode_keeps_knowing_its_time_was_not_given() -> None:
    clock = FakeClock(datetime(2031, 1, 1, tzinfo=timezone.utc))
    memory = EpisodicMemory(InMemoryStore(), MemoryScope("bob"), clock=clock)
    base = Episode(task_description="base", outcome="success")
    copy = base.model_copy(update={"importance": 0.9})
    assert memory.record(copy).created_at == clock()
    stored = memory.record(base.model_copy(update={"created_at": base.created_at}))
    assert stored.created_at == base.created_at  # set explicitly: kept


def test_a_bad_time_is_still_refused() -> None:
    memory = EpisodicMemory(InMemoryStore(), MemoryScope("carol"), clock=FakeClock())
    with pytest.raises(InvalidInputError, match="created_at"):
        memory.record({"task_description": "x", "outcome": "success", "created_at": "yesterday"})
