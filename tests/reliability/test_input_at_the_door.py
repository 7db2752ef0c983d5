"""Bad input is refused at the door, by one validator for direct and queued writes.

* A queued write (``queue_remember``, ``queue_episode``, ``queue_tool_use``,
  ``WriteOp``) that the direct call would refuse is refused with the same
  ``InvalidInputError`` before it is acknowledged: nothing reaches the outbox,
  nothing becomes a dead letter.
* A query longer than ``MAX_QUERY_CHARS`` is cut, and ``MemoryContext.notes``
  says so.
* Text must be valid Unicode: user ids, texts, queries and imports with a lone
  surrogate, and import files that are not UTF-8, raise ``InvalidInputError``.
* Naive datetimes are UTC everywhere: episodes, tool uses, turns, facts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from langchain_tiered_memory import (
    Episode,
    InvalidInputError,
    TieredMemory,
    ToolUsageRecord,
)
from langchain_tiered_memory.stores.payload import MAX_VALUE_BYTES
from langchain_tiered_memory.testing.fakes import HashingEmbeddings
from langchain_tiered_memory.text import MAX_QUERY_CHARS, MAX_TEXT_CHARS
from langchain_tiered_memory.tiers.turns.models import ConversationTurn
from langchain_tiered_memory.writeback.ops import WriteOp

LONE = "\udc80"
NAIVE = datetime(2025, 3, 1, 12, 30)
AWARE = NAIVE.replace(tzinfo=timezone.utc)


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[TieredMemory]:
    mem = TieredMemory.open(tmp_path / "mem", embeddings=HashingEmbeddings(size=64))
    try:
        yield mem
    finally:
        mem.close()


def big(n: int) -> str:
    return ("word " * (n // 5 + 1))[:n]


BAD_TEXTS = {
    "blank": "   ",
    "too long": big(MAX_TEXT_CHARS + 1),
    "lone surrogate": f"I live in Paris{LONE}",
    "not a string": 42,
}
BAD_EPISODES = {
    "over one record": lambda: Episode(
        task_description=big(MAX_VALUE_BYTES), outcome="success", created_at=AWARE
    ),
    "lone surrogate": lambda: Episode(task_description=f"Deploy {LONE}", outcome="success"),
}
BAD_TOOL_USES = {
    "over one record": lambda: ToolUsageRecord(
        tool_name="web", success=False, error_message=big(MAX_VALUE_BYTES)
    ),
    "lone surrogate": lambda: ToolUsageRecord(tool_name="web", success=False, hint=LONE),
}


def refusal(call: Callable[[], Any]) -> str:
    with pytest.raises(InvalidInputError) as info:
        call()
    return str(info.value)


def assert_nothing_queued(memory: TieredMemory) -> None:
    assert memory.writer is not None
    memory.flush()
    stats = memory.writer.stats()
    assert (stats.pending, stats.applied, stats.dead_letters) == (0, 0, 0)


@pytest.mark.parametrize("case", list(BAD_TEXTS))
def test_queue_remember_refuses_what_remember_refuses(memory: TieredMemory, case: str) -> None:
    user, text = memory.for_user("alice"), BAD_TEXTS[case]
    direct = refusal(lambda: user.remember(text))  # type: ignore[arg-type]
    assert refusal(lambda: user.queue_remember(text)) == direct  # type: ignore[arg-type]
    assert_nothing_queued(memory)


@pytest.mark.parametrize("case", list(BAD_TEXTS))
async def test_aqueue_remember_refuses_what_aremember_refuses(
    memory: TieredMemory, case: str
) -> None:
    user, text = memory.for_user("alice"), BAD_TEXTS[case]
    with pytest.raises(InvalidInputError) as direct:
        await user.aremember(text)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError) as queued:
        await user.aqueue_remember(text)  # type: ignore[arg-type]
    assert str(queued.value) == str(direct.value)
    assert_nothing_queued(memory)


@pytest.mark.parametrize("case", list(BAD_EPISODES))
def test_queue_episode_refuses_what_record_refuses(memory: TieredMemory, case: str) -> None:
    user = memory.for_user("alice")
    try:
        episode = BAD_EPISODES[case]()
    except ValueError:  # refused by the model itself: never reaches either path
        return
    direct = refusal(lambda: user.episodic.record(episode))
    assert refusal(lambda: user.queue_episode(episode)) == direct
    assert_nothing_queued(memory)
    assert list(memory.export_user("alice")) == []


@pytest.mark.parametrize("case", list(BAD_TOOL_USES))
def test_queue_tool_use_refuses_what_record_tool_use_refuses(
    memory: TieredMemory, case: str
) -> None:
    user = memory.for_user("alice")
    try:
        record = BAD_TOOL_USES[case]()
    except ValueError:
        return
    direct = refusal(lambda: user.procedural.record_tool_use(record))
    assert refusal(lambda: user.queue_tool_use(record)) == direct
    assert_nothing_queued(memory)


def test_a_queued_put_is_refused_like_store_put(memory: TieredMemory) -> None:
    assert memory.writer is not None
    value = {"text": big(MAX_VALUE_BYTES)}
    direct = refusal(lambda: memory.store.put(("notes",), "n1", value))
    assert refusal(lambda: memory.writer.submit(WriteOp.put(("notes",), "n1", value))) == direct
    assert "not valid Unicode" in refusal(lambda: WriteOp.put(("notes",), "n2", {"t": LONE}))
    assert_nothing_queued(memory)


def test_a_huge_query_is_cut_and_the_context_says_so(memory: TieredMemory) -> None:
    user = memory.for_user("alice")
    user.semantic.store_fact("alice", "Allergic to shellfish", confidence=0.95)
    query = "Which food is unsafe: shellfish? " + big(10_000_000)
    ctx = user.build_memory_context(query, token_budget=500)
    assert len(ctx.notes) == 1 and "query truncated from 10,000,033" in ctx.notes[0]
    assert "shellfish" in ctx.text  # the kept start of the query still finds it
    assert user.build_memory_context("shellfish?", token_budget=500).notes == []
    assert user.search(query)  # search cuts it the same way
    assert len(query[:MAX_QUERY_CHARS]) == MAX_QUERY_CHARS


async def test_a_huge_query_is_cut_in_async_too(memory: TieredMemory) -> None:
    ctx = await memory.for_user("alice").abuild_memory_context(big(MAX_QUERY_CHARS * 3), 200)
    assert ctx.notes and "MAX_QUERY_CHARS" in ctx.notes[0]


def test_text_that_is_not_valid_unicode_is_refused_everywhere(
    memory: TieredMemory, tmp_path: Path
) -> None:
    user = memory.for_user("alice")
    calls: list[Callable[[], Any]] = [
        lambda: memory.for_user(f"bob{LONE}"),
        lambda: memory.for_user("bob", agent_id=LONE),
        lambda: user.semantic.store_fact("alice", f"Likes {LONE} tea"),
        lambda: user.semantic.store_fact("alice", "Lives", attribute="lives_in", value=LONE),
        lambda: user.semantic.store_fact(f"e{LONE}", "Likes tea"),
        lambda: user.remember(f"I like {LONE}"),
        lambda: user.episodic.record(Episode(task_description=LONE, outcome="success")),
        lambda: user.procedural.record_tool_use(
            ToolUsageRecord(tool_name="t", success=True, context=LONE)
        ),
        lambda: user.turns.add_turns(
            "s1", [ConversationTurn(speaker="Ann", text=LONE, time=AWARE)]
        ),
        lambda: user.build_memory_context(f"tea {LONE}"),
        lambda: user.search(f"tea {LONE}"),
        lambda: user.semantic.semantic_search(f"tea {LONE}"),
    ]
    for call in calls:
        assert "not valid Unicode" in refusal(call)
    not_utf8 = tmp_path / "latin1.jsonl"
    not_utf8.write_bytes(b'{"text": "caf\xe9"}\n')
    assert "not UTF-8" in refusal(lambda: memory.import_jsonl(not_utf8, keep_file_users=True))
    escaped = tmp_path / "escaped.jsonl"
    record = {"namespace": ["tiered_memory", "alice", "notes"], "key": "k", "value": {"t": "x"}}
    escaped.write_text(json.dumps(record).replace('"x"', '"\\udc80"'), encoding="utf-8")
    assert "not valid Unicode" in refusal(
        lambda: memory.import_jsonl(escaped, keep_file_users=True)
    )
    assert list(memory.export_user("alice")) == []


def test_naive_datetimes_are_utc_for_every_record(memory: TieredMemory) -> None:
    user = memory.for_user("alice")
    episode = user.episodic.record(
        Episode(task_description="t", outcome="success", created_at=NAIVE)
    )
    assert episode.created_at == AWARE
    tool = user.procedural.record_tool_use(
        ToolUsageRecord(tool_name="t", success=True, timestamp=NAIVE)
    )
    assert tool.timestamp == AWARE
    user.turns.add_turns("s1", [ConversationTurn(speaker="Ann", text="Hi there", time=NAIVE)])
    assert ConversationTurn(speaker="Ann", text="Hi", time=NAIVE).time == AWARE
    user.semantic.store_fact("alice", "Likes tea")
    later = datetime(2999, 1, 1)
    assert user.semantic.get_facts("alice", as_of=later) == user.semantic.get_facts(
        "alice", as_of=later.replace(tzinfo=timezone.utc)
    )
