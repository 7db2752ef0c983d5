from __future__ import annotations

import logging
import time

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_tiered_memory.errors import ConfigurationError, ExtractionError
from langchain_tiered_memory.testing.fakes import ScriptedChatModel
from langchain_tiered_memory.tiers.working import (
    SUMMARY_MESSAGE_ID,
    SlidingWindowSummaryBuffer,
    SummarizationTimeoutError,
    Summarizer,
)
from langchain_tiered_memory.tiers.working.summary import build_summary_prompt
from langchain_tiered_memory.tokens import TokenCounter

COUNTER = TokenCounter()


def sleepy(seconds: float, reply: str = "late") -> object:
    def respond(messages: list[BaseMessage]) -> str:
        time.sleep(seconds)
        return reply

    return respond


def fill(buffer: SlidingWindowSummaryBuffer, n: int, words: int = 12) -> None:
    for i in range(n):
        buffer.add("user" if i % 2 == 0 else "assistant", f"turn {i} " + "detail " * words)


# --- Summarizer ---------------------------------------------------------------


def test_prompt_carries_previous_summary_and_new_messages() -> None:
    model = ScriptedChatModel(responses=["Updated summary: User is vegan."])
    outcome = Summarizer(model).summarize("User likes curry.", [HumanMessage("I went vegan")])
    assert outcome.summary == "User is vegan."  # the echoed label is stripped
    assert (outcome.fitted, outcome.calls) == ("as_is", 1)
    prompt = model.calls[0][-1].content
    assert "User likes curry." in prompt and "human: I went vegan" in prompt


def test_huge_message_is_shortened_inside_the_prompt() -> None:
    prompt = build_summary_prompt(
        "",
        [HumanMessage("x " * 50_000), AIMessage("small reply")],
        counter=COUNTER,
        max_summary_tokens=100,
        max_prompt_tokens=1000,
    )
    assert COUNTER.count_messages(prompt) < 1100
    assert "small reply" in str(prompt[-1].content)


async def test_overlong_summary_is_asked_again_then_truncated() -> None:
    long = "fact " * 300
    shortened = Summarizer(ScriptedChatModel(responses=[long, "Short."]), max_summary_tokens=20)
    outcome = shortened.summarize("", [HumanMessage("hi")])
    assert (outcome.summary, outcome.fitted, outcome.calls) == ("Short.", "shortened", 2)

    stubborn = Summarizer(ScriptedChatModel(default=long), max_summary_tokens=20)
    outcome = await stubborn.asummarize("", [HumanMessage("hi")])
    assert outcome.fitted == "truncated"
    assert outcome.tokens == COUNTER.count(outcome.summary) <= 20
    assert outcome.summary.startswith("fact")


def test_empty_reply_is_an_extraction_error() -> None:
    with pytest.raises(ExtractionError, match="empty summary"):
        Summarizer(ScriptedChatModel(responses=["   "])).summarize("", [HumanMessage("hi")])


def test_sync_timeout_raises_a_timeout_error_naming_the_fix() -> None:
    summarizer = Summarizer(ScriptedChatModel(responses=[sleepy(0.5)]), timeout=0.05)
    start = time.perf_counter()
    with pytest.raises(SummarizationTimeoutError, match="timeout="):
        summarizer.summarize("", [HumanMessage("hi")])
    assert time.perf_counter() - start < 0.4


def test_bad_configuration() -> None:
    with pytest.raises(ConfigurationError):
        Summarizer(ScriptedChatModel(), timeout=0)
    with pytest.raises(ConfigurationError):
        Summarizer(ScriptedChatModel(), max_summary_tokens=0)
    with pytest.raises(ConfigurationError, match="summary_trigger_ratio"):
        SlidingWindowSummaryBuffer(ScriptedChatModel(), summary_trigger_ratio=1.5)
    with pytest.raises(ConfigurationError, match="summary_max_tokens"):
        SlidingWindowSummaryBuffer(ScriptedChatModel(), max_tokens=100, summary_max_tokens=100)


# --- SlidingWindowSummaryBuffer ---------------------------------------------------


def test_summarises_older_messages_past_the_trigger_and_keeps_the_window() -> None:
    model = ScriptedChatModel(default="User is planning a trip.")
    buffer = SlidingWindowSummaryBuffer(model, max_tokens=400, recent_window=4)
    buffer.add("system", "You are a travel agent.")
    fill(buffer, 3)
    assert model.calls == []  # under the 75% trigger: no call
    fill(buffer, 40)
    assert len(model.calls) >= 2, "passing the trigger must summarise"
    assert buffer.running_summary == "User is planning a trip."
    assert buffer.summary_status == "ok" and buffer.last_error is None
    ctx = buffer.get_context()
    assert ctx.tokens <= 400
    assert ctx.messages[0].content == "You are a travel agent."
    assert ctx.messages[1].id == SUMMARY_MESSAGE_ID
    assert "User is planning a trip." in str(ctx.messages[1].content)
    assert all(m.id != SUMMARY_MESSAGE_ID for m in buffer.messages)
    chat = [m for m in buffer.messages if m.type != "system"]
    assert 4 <= len(chat) < 43
    # The summariser saw the summarised turns but never the system prompt.
    first_prompt = str(model.calls[0][-1].content)
    assert "turn 0" in first_prompt and "travel agent" not in first_prompt
    # The next summary builds on the previous one.
    assert any("User is planning a trip." in str(c[-1].content) for c in model.calls[1:])


def test_window_boundary_never_splits_a_tool_group() -> None:
    model = ScriptedChatModel(default="earlier stuff")
    buffer = SlidingWindowSummaryBuffer(model, max_tokens=300, recent_window=2)
    fill(buffer, 6)
    calls = [{"name": "lookup", "args": {"q": str(i)}, "id": f"c{i}"} for i in range(3)]
    buffer.add_messages(
        [
            AIMessage("", tool_calls=calls),
            *[ToolMessage(f"result {i} " + "data " * 20, tool_call_id=f"c{i}") for i in range(3)],
        ]
    )
    kept = buffer.messages
    assert kept[0].type == "ai" and len(kept) == 4  # the whole group, not its last 2 messages
    ctx = buffer.get_context()
    assert [m.type for m in ctx.messages] == ["system", "ai", "tool", "tool", "tool"]


def test_summary_fits_its_own_budget() -> None:
    model = ScriptedChatModel(default="very long summary " * 200)
    buffer = SlidingWindowSummaryBuffer(model, max_tokens=300, recent_window=2)
    fill(buffer, 20)
    assert 0 < COUNTER.count(buffer.running_summary) <= 30  # max_tokens // 10
    assert buffer.get_context().tokens <= 300


def test_model_failure_keeps_messages_records_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = ScriptedChatModel(default=RuntimeError("provider is down"))
    buffer = SlidingWindowSummaryBuffer(model, max_tokens=300, recent_window=2)
    with caplog.at_level(logging.WARNING):
        fill(buffer, 20)
    assert len(buffer) == 20  # nothing lost
    assert isinstance(buffer.last_error, RuntimeError)
    assert buffer.summary_status == "failed"
    ctx = buffer.get_context()
    assert ctx.summary_status == "failed"
    assert ctx.error == "RuntimeError: provider is down"
    assert ctx.tokens <= 300 and ctx.dropped > 0  # FIFO keeps it under budget meanwhile
    assert "provider is down" in caplog.text and "kept" in caplog.text
    # Once the model recovers, the next add summarises and clears the error.
    model.default = "recovered summary"
    buffer.add("user", "hello again")
    assert buffer.summary_status == "ok" and buffer.last_error is None
    assert buffer.get_context().error is None
    assert len(buffer) < 21


def test_model_timeout_keeps_messages_and_reports_timeout() -> None:
    model = ScriptedChatModel(default=sleepy(0.3))
    buffer = SlidingWindowSummaryBuffer(model, max_tokens=200, recent_window=2, timeout=0.02)
    fill(buffer, 8)
    assert len(buffer) == 8
    assert buffer.summary_status == "timeout"
    assert isinstance(buffer.last_error, TimeoutError)
    assert buffer.get_context().tokens <= 200


async def test_async_add_summarises_and_times_out_like_sync() -> None:
    model = ScriptedChatModel(default="async summary")
    buffer = SlidingWindowSummaryBuffer(model, max_tokens=300, recent_window=2)
    for i in range(20):
        await buffer.aadd("user", f"turn {i} " + "detail " * 12)
    assert buffer.running_summary == "async summary"
    assert (await buffer.aget_context()).tokens <= 300

    slow = SlidingWindowSummaryBuffer(
        ScriptedChatModel(default=sleepy(0.3)), max_tokens=200, recent_window=2, timeout=0.02
    )
    await slow.aadd_messages([HumanMessage(f"turn {i} " + "detail " * 12) for i in range(8)])
    assert len(slow) == 8 and slow.summary_status == "timeout"


def test_huge_message_in_the_window_is_trimmed_and_summary_stays_valid() -> None:
    model = ScriptedChatModel(default="summary of the past")
    buffer = SlidingWindowSummaryBuffer(model, max_tokens=200, recent_window=1)
    buffer.add(SystemMessage("rules"))
    fill(buffer, 4)
    buffer.add("user", "enormous " * 20_000)
    ctx = buffer.get_context()
    assert ctx.tokens <= 200
    assert ctx.trimmed == 1
    assert ctx.summary == "summary of the past"
    # The summarisation prompt did not carry the whole huge message either.
    for prompt in model.calls:
        assert COUNTER.count_messages(prompt) < 400


def test_clear_forgets_summary() -> None:
    buffer = SlidingWindowSummaryBuffer(ScriptedChatModel(default="s"), max_tokens=200)
    fill(buffer, 20)
    buffer.clear()
    assert (buffer.running_summary, len(buffer), buffer.summary_status) == ("", 0, "none")
