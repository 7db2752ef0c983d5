"""build_memory_context draws on the conversation-turn tier as its last section."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory import AssemblyConfig, TieredMemory
from langchain_tiered_memory.testing.fakes import HashingEmbeddings

MAY8 = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)


def _memory(**kwargs: object) -> TieredMemory:
    store = InMemoryStore(
        index={"dims": 64, "embed": HashingEmbeddings(size=64), "fields": ["text"]}
    )
    return TieredMemory(store, **kwargs)  # type: ignore[arg-type]


def _add_turns(memory: TieredMemory) -> None:
    memory.for_user("alice").turns.add_turns(
        "s1",
        [
            {"speaker": "alice", "text": "I started a pottery class on Tuesdays", "time": MAY8},
            {"speaker": "bot", "text": "Nice, what did you make?", "time": MAY8},
            {"speaker": "alice", "text": "A blue bowl for my sister", "time": MAY8},
        ],
    )


def test_relevant_turns_fill_the_conversation_section() -> None:
    memory = _memory()
    _add_turns(memory)
    ctx = memory.for_user("alice").build_memory_context("pottery class", token_budget=500)
    turns = [i for i in ctx.items if i.section == "conversation"]
    assert turns, ctx.text
    assert any("pottery class on Tuesdays" in i.text for i in turns)
    best = turns[0]
    assert best.text.startswith("[2023-05-08] alice: ")
    assert best.provenance["session_id"] == "s1"
    assert set(best.score_breakdown) >= {"fused", "neighbour", "speaker"}
    assert "## earlier conversation" in ctx.text
    assert ctx.tokens <= 500


def test_turns_come_last_and_are_dropped_first_under_a_small_budget() -> None:
    memory = _memory()
    alice = memory.for_user("alice")
    alice.semantic.store_fact("alice", "Prefers short answers about pottery", confidence=0.9)
    _add_turns(memory)
    ctx = alice.build_memory_context("pottery", token_budget=500)
    sections = [i.section for i in ctx.items]
    assert sections.index("conversation") > max(
        i for i, s in enumerate(sections) if s != "conversation"
    )
    tight = alice.build_memory_context("pottery", token_budget=90)
    assert tight.tokens <= 90
    assert any(d.item.section == "conversation" for d in tight.dropped)


def test_no_turns_or_turns_top_k_zero_means_no_section() -> None:
    empty = _memory()
    ctx = empty.for_user("alice").build_memory_context("pottery", token_budget=500)
    assert all(i.section != "conversation" for i in ctx.items)
    off = _memory(assembly=AssemblyConfig(turns_top_k=0))
    _add_turns(off)
    ctx = off.for_user("alice").build_memory_context("pottery class", token_budget=500)
    assert all(i.section != "conversation" for i in ctx.items)


def test_async_twin_gives_the_same_turns() -> None:
    memory = _memory()
    _add_turns(memory)
    alice = memory.for_user("alice")
    sync = alice.build_memory_context("blue bowl", token_budget=500)
    both = asyncio.run(alice.abuild_memory_context("blue bowl", token_budget=500))
    ids = [i.id for i in sync.items if i.section == "conversation"]
    assert ids == [i.id for i in both.items if i.section == "conversation"]
    assert ids


def test_another_users_turns_never_appear() -> None:
    memory = _memory()
    _add_turns(memory)
    ctx = memory.for_user("bob").build_memory_context("pottery class", token_budget=500)
    assert all(i.section != "conversation" for i in ctx.items)
