from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from langchain_tiered_memory.errors import TokenBudgetError
from langchain_tiered_memory.tiers.working import ContextWindowBudget
from langchain_tiered_memory.tiers.working.layout import SECTIONS
from langchain_tiered_memory.tokens import TokenCounter

COUNTER = TokenCounter()


@tool
def get_weather(city: str) -> str:
    """Return the weather for a city."""
    return "sunny"


def test_default_layout_is_the_designs_and_scales_proportionally() -> None:
    assert ContextWindowBudget().allocations() == {
        "system_prompt": 500,
        "running_summary": 800,
        "retrieved_memories": 2000,
        "tool_definitions": 800,
        "recent_messages": 3000,
        "current_query": 200,
        "output_reserve": 700,
    }
    big = ContextWindowBudget(total=128_000).allocations()
    assert big["retrieved_memories"] == 32_000 and big["output_reserve"] == 11_200
    odd = ContextWindowBudget(total=1001).allocations()
    assert sum(odd.values()) == 1001  # rounding remainder goes to recent messages
    assert list(odd) == list(SECTIONS)


def test_explicit_sections_and_validation() -> None:
    budget = ContextWindowBudget(total=8000, tool_definitions=0, output_reserve=1500)
    alloc = budget.allocations()
    assert alloc["tool_definitions"] == 0 and alloc["output_reserve"] == 1500
    assert alloc["recent_messages"] == 3000 + 800 - 800  # the spare flows to recent messages
    with pytest.raises(TokenBudgetError, match="add up to"):
        ContextWindowBudget(total=1000, retrieved_memories=2000)
    with pytest.raises(TokenBudgetError):
        ContextWindowBudget(total=1000, system_prompt=-1)


def test_unused_share_flows_to_the_next_section() -> None:
    layout = ContextWindowBudget(total=8000).fit(running_summary="past " * 1000)
    summary = layout.sections["running_summary"]
    # No system prompt: its 500 tokens (less the 3 every request costs) flow to the summary.
    assert summary.available == 500 - 3 + 800
    assert 800 < summary.used <= summary.available
    # Nothing else used: everything left over ends up as room for the reply.
    assert layout.max_output_tokens == 8000 - layout.tokens
    assert layout.sections["output_reserve"].available == layout.max_output_tokens


def test_sections_are_trimmed_and_reported() -> None:
    budget = ContextWindowBudget(total=2000)
    layout = budget.fit(
        system_prompt="You are a helpful assistant. " * 100,
        retrieved_memories=["User is allergic to shellfish.", "User lives in Oslo.", "x " * 900],
        tool_definitions=[get_weather],
        recent_messages=[HumanMessage("earlier question " * 100), AIMessage("answer " * 100)] * 5,
        current_query="What should I cook tonight?",
    )
    sections = layout.sections
    assert sections["system_prompt"].trimmed
    assert sections["system_prompt"].used <= sections["system_prompt"].available
    memories = str(layout.messages[1].content)
    assert "shellfish" in memories and "Oslo" in memories
    assert sections["retrieved_memories"].trimmed
    assert sections["tool_definitions"].used > 0
    assert sections["recent_messages"].dropped > 0
    assert layout.messages[-1].content == "What should I cook tonight?"
    assert layout.tokens == COUNTER.count_messages(layout.messages) + (
        sections["tool_definitions"].used
    )
    assert layout.max_output_tokens >= budget.allocations()["output_reserve"]


def test_query_borrows_unused_room_before_recent_messages() -> None:
    long_query = "please consider this " * 100  # ~400 tokens, current_query is 200
    layout = ContextWindowBudget(total=8000).fit(current_query=long_query)
    assert layout.messages[-1].content == long_query
    assert not layout.sections["current_query"].trimmed


def test_recent_messages_keep_tool_groups_whole() -> None:
    call = {"name": "get_weather", "args": {"city": "Oslo"}, "id": "w1"}
    recent = [
        HumanMessage("weather?"),
        AIMessage("", tool_calls=[call]),
        ToolMessage("rain " * 200, tool_call_id="w1"),
        AIMessage("It rains."),
    ]
    budget = ContextWindowBudget(total=1000)
    layout = budget.fit(recent_messages=recent, current_query="and tomorrow?")
    types = [m.type for m in layout.messages]
    assert "tool" not in types or types.index("tool") == types.index("ai") + 1


def test_tool_definitions_that_cannot_fit_are_an_error_with_a_fix() -> None:
    budget = ContextWindowBudget(total=400, tool_definitions=5)
    with pytest.raises(TokenBudgetError, match="tool_definitions"):
        budget.fit(tool_definitions=[get_weather] * 20)
