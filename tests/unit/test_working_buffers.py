from __future__ import annotations

import time

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_tiered_memory.errors import InvalidInputError, TokenBudgetError
from langchain_tiered_memory.tiers.working import (
    ConversationBuffer,
    Priority,
    PriorityTruncationBuffer,
)
from langchain_tiered_memory.tokens import TokenCounter

COUNTER = TokenCounter()


def contents(ctx_or_messages: object) -> list[object]:
    messages = getattr(ctx_or_messages, "messages", ctx_or_messages)
    return [m.content for m in messages]  # type: ignore[attr-defined]


def call(call_id: str, name: str = "lookup") -> dict[str, object]:
    return {"name": name, "args": {"q": call_id}, "id": call_id, "type": "tool_call"}


# --- ConversationBuffer -------------------------------------------------------


def test_everything_fits_returns_all_in_order() -> None:
    buffer = ConversationBuffer(max_tokens=1000)
    buffer.add("system", "Be brief.")
    buffer.add({"role": "user", "content": "hi"})
    buffer.add(AIMessage("hello"))
    ctx = buffer.get_context()
    assert contents(ctx) == ["Be brief.", "hi", "hello"]
    assert ctx.tokens == COUNTER.count_messages(ctx.messages)
    assert (ctx.kept, ctx.dropped, ctx.trimmed) == (3, 0, 0)
    assert ctx.as_dicts()[1] == {"role": "user", "content": "hi"}


def test_fifo_drops_oldest_keeps_system_and_a_contiguous_recent_window() -> None:
    buffer = ConversationBuffer(max_tokens=60)
    buffer.add(SystemMessage("You are terse."))
    for i in range(30):
        buffer.add(HumanMessage(f"message number {i}"))
    ctx = buffer.get_context()
    assert ctx.messages[0].content == "You are terse."
    kept = [int(str(c).split()[-1]) for c in contents(ctx)[1:]]
    assert kept == list(range(30 - len(kept), 30))  # the newest, contiguous
    assert 0 < len(kept) < 30
    assert ctx.tokens <= 60
    assert ctx.dropped == 31 - ctx.kept


def test_system_messages_in_the_middle_survive_in_place() -> None:
    buffer = ConversationBuffer(max_tokens=45)
    buffer.add_messages([HumanMessage("old " * 60), SystemMessage("rule"), HumanMessage("new")])
    assert contents(buffer.get_context()) == ["rule", "new"]


def test_single_message_larger_than_budget_is_trimmed_not_overflowing() -> None:
    buffer = ConversationBuffer(max_tokens=50)
    buffer.add("system", "Be brief.")
    buffer.add("user", "word " * 5000)
    ctx = buffer.get_context()
    assert ctx.tokens <= 50
    assert COUNTER.count_messages(ctx.messages) == ctx.tokens
    assert ctx.trimmed == 1
    assert str(ctx.messages[-1].content).endswith("[...]")
    assert buffer.messages[-1].content == "word " * 5000  # the stored message is untouched


def test_system_prompt_larger_than_budget_is_trimmed() -> None:
    buffer = ConversationBuffer(max_tokens=40)
    buffer.add("system", "rule " * 500)
    buffer.add("user", "hi")
    ctx = buffer.get_context()
    assert ctx.tokens <= 40
    assert ctx.messages[0].type == "system"


def test_tool_call_and_results_are_dropped_together() -> None:
    buffer = ConversationBuffer(max_tokens=80)
    buffer.add(HumanMessage("weather in Oslo and Bergen?"))
    buffer.add(AIMessage("", tool_calls=[call("a"), call("b")]))
    buffer.add(ToolMessage("Oslo: 4 C " * 3, tool_call_id="a"))
    buffer.add(ToolMessage("Bergen: 9 C " * 3, tool_call_id="b"))
    buffer.add(AIMessage("Oslo 4 C, Bergen 9 C."))
    buffer.add(HumanMessage("thanks " * 6))
    full = COUNTER.count_messages(buffer.messages)
    group = COUNTER.count_messages(buffer.messages[1:4]) - 3
    tail = COUNTER.count_messages(buffer.messages[4:])
    # A budget with room for the tail and part (not all) of the tool group.
    budget = tail + group - 5
    assert budget < full
    buffer.max_tokens = budget
    ctx = buffer.get_context()
    assert [m.type for m in ctx.messages] == ["ai", "human"]
    assert ctx.tokens <= budget


def test_orphan_tool_result_and_unanswered_call_are_never_sent() -> None:
    buffer = ConversationBuffer(max_tokens=500)
    buffer.add(ToolMessage("orphan", tool_call_id="nope"))
    buffer.add(HumanMessage("hi"))
    buffer.add(AIMessage("", tool_calls=[call("x")]))
    ctx = buffer.get_context()
    assert contents(ctx) == ["hi"]
    assert ctx.invalid == 2
    buffer.add(ToolMessage("result", tool_call_id="x"))  # the call is now answered
    assert [m.type for m in buffer.get_context().messages] == ["human", "ai", "tool"]


def test_accepts_a_plain_callable_as_token_counter() -> None:
    buffer = ConversationBuffer(max_tokens=20, counter=lambda text: len(text.split()))
    for i in range(10):
        buffer.add("user", f"a b c {i}")
    ctx = buffer.get_context()
    # 3 priming + per message: 3 overhead + 4 words + 1 for the "human" type label.
    assert ctx.tokens == 3 + 2 * 8
    assert contents(ctx) == ["a b c 8", "a b c 9"]


def test_token_counts_are_cached_not_recounted() -> None:
    calls = 0

    def count(text: str) -> int:
        nonlocal calls
        calls += 1
        return len(text.split())

    buffer = ConversationBuffer(max_tokens=100, counter=count)
    for i in range(200):
        buffer.add("user", f"message {i}")
    after_adding = calls
    for _ in range(5):
        buffer.get_context()
    assert calls == after_adding


def test_get_context_cost_does_not_grow_with_history() -> None:
    small, large = ConversationBuffer(max_tokens=2000), ConversationBuffer(max_tokens=2000)
    for i in range(20_000):
        message = HumanMessage(f"turn {i % 10}: nothing much")
        if i < 1000:
            small.add(message)
        large.add(message)

    def cost(buffer: ConversationBuffer) -> float:
        start = time.perf_counter()
        for _ in range(20):
            buffer.get_context()
        return time.perf_counter() - start

    assert small.get_context().kept == large.get_context().kept
    # Same number of messages kept: the cost must not scale with the 20x longer history.
    assert cost(large) < 5 * cost(small) + 0.05


def test_clear_and_len() -> None:
    buffer = ConversationBuffer()
    buffer.add_messages([("user", "a"), ("assistant", "b")])
    assert len(buffer) == 2 and buffer.total_tokens > 0
    buffer.clear()
    assert len(buffer) == 0 and buffer.get_context().messages == []


def test_bad_input_is_rejected_with_a_fix() -> None:
    with pytest.raises(TokenBudgetError, match="larger budget"):
        ConversationBuffer(max_tokens=3)
    with pytest.raises(TokenBudgetError):
        ConversationBuffer(max_tokens=10.5)  # type: ignore[arg-type]
    buffer = ConversationBuffer()
    with pytest.raises(InvalidInputError, match="chat message"):
        buffer.add({"no": "role"})
    with pytest.raises(InvalidInputError, match="role string"):
        buffer.add(HumanMessage("x"), "content")
    with pytest.raises(InvalidInputError, match="priority"):
        PriorityTruncationBuffer().add("user", "x", priority="urgent")


async def test_async_twins_match_sync() -> None:
    buffer = ConversationBuffer(max_tokens=50)
    await buffer.aadd("user", "hello")
    await buffer.aadd_messages([AIMessage("hi there")])
    assert (await buffer.aget_context()) == buffer.get_context()


# --- PriorityTruncationBuffer -----------------------------------------------


def test_priority_drops_low_first_then_medium_and_keeps_order() -> None:
    buffer = PriorityTruncationBuffer(max_tokens=1000)
    buffer.add("system", "You are a cooking assistant.")
    buffer.add("user", "I am allergic to shellfish.", priority=Priority.CRITICAL)
    buffer.add("assistant", "Hello there, nice to meet you!", priority=Priority.LOW)
    buffer.add("user", "I have an oven and a wok.", priority=Priority.MEDIUM)
    buffer.add("assistant", "Great, ok!", priority=Priority.LOW)
    buffer.add("user", "Budget is 20 euros.", priority="high")
    buffer.add("user", "What should I cook tonight?")
    everything = buffer.get_context()
    assert everything.dropped == 0
    low = COUNTER.count_message(AIMessage("Great, ok!"))  # the smaller LOW message

    buffer.max_tokens = everything.tokens - 1  # must drop one LOW: the oldest goes first
    assert "Hello there, nice to meet you!" not in contents(buffer.get_context())
    assert "Great, ok!" in contents(buffer.get_context())

    hello = COUNTER.count_message(AIMessage("Hello there, nice to meet you!"))
    buffer.max_tokens = everything.tokens - hello - 1  # both LOW must go, MEDIUM stays
    ctx = buffer.get_context()
    assert "Great, ok!" not in contents(ctx)
    assert "I have an oven and a wok." in contents(ctx)
    assert low < hello

    wanted = [
        "You are a cooking assistant.",
        "I am allergic to shellfish.",
        "Budget is 20 euros.",
        "What should I cook tonight?",
    ]
    buffer.max_tokens = COUNTER.count_messages([m for m in buffer.messages if m.content in wanted])
    ctx = buffer.get_context()  # room for exactly these: LOW and MEDIUM dropped
    assert contents(ctx) == wanted
    assert ctx.tokens == buffer.max_tokens
    assert ctx.dropped == 3


def test_priority_skips_a_large_group_and_fills_with_smaller_ones() -> None:
    buffer = PriorityTruncationBuffer(max_tokens=60)
    buffer.add("user", "short fact", priority=Priority.MEDIUM)
    buffer.add("user", "long " * 200, priority=Priority.HIGH)
    buffer.add("user", "now?")
    assert contents(buffer.get_context()) == ["short fact", "now?"]


def test_priority_tool_group_takes_its_highest_member_priority_and_stays_whole() -> None:
    buffer = PriorityTruncationBuffer(max_tokens=1000)
    buffer.add("user", "chit chat " * 10, priority=Priority.LOW)
    buffer.add(AIMessage("", tool_calls=[call("k")]), priority=Priority.LOW)
    buffer.add(ToolMessage("the key fact", tool_call_id="k"), priority=Priority.CRITICAL)
    buffer.add("user", "so?")
    full = buffer.get_context().tokens
    buffer.max_tokens = full - 5
    ctx = buffer.get_context()
    assert [m.type for m in ctx.messages] == ["ai", "tool", "human"]


def test_priority_newest_message_is_kept_even_if_low_and_huge() -> None:
    buffer = PriorityTruncationBuffer(max_tokens=80)
    buffer.add("user", "remember: no nuts", priority=Priority.CRITICAL)
    buffer.add("user", "ok " * 1000, priority=Priority.LOW)
    ctx = buffer.get_context()
    assert ctx.tokens <= 80
    assert ctx.messages[-1].content.endswith("[...]")  # type: ignore[union-attr]
