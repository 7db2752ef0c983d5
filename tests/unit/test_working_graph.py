from __future__ import annotations

import warnings
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.testing.fakes import ScriptedChatModel
from langchain_tiered_memory.tiers.working import (
    SUMMARY_MESSAGE_ID,
    WorkingMemoryState,
    create_working_memory_node,
)
from langchain_tiered_memory.tokens import TokenCounter

COUNTER = TokenCounter()


def numbered_summaries() -> Any:
    count = 0

    def reply(messages: list[BaseMessage]) -> str:
        nonlocal count
        count += 1
        return f"summary number {count}"

    return reply


def build(summarizer: ScriptedChatModel, agent: ScriptedChatModel, **node_kwargs: Any) -> Any:
    graph = StateGraph(WorkingMemoryState)
    graph.add_node("memory", create_working_memory_node(summarizer, **node_kwargs))

    def call_model(state: WorkingMemoryState) -> dict[str, Any]:
        return {"messages": [agent.invoke(state["messages"])]}

    async def acall_model(state: WorkingMemoryState) -> dict[str, Any]:
        return {"messages": [await agent.ainvoke(state["messages"])]}

    from langchain_core.runnables import RunnableLambda

    graph.add_node("agent", RunnableLambda(call_model, afunc=acall_model))
    graph.add_edge(START, "memory")
    graph.add_edge("memory", "agent")
    graph.add_edge("agent", END)
    return graph.compile(checkpointer=InMemorySaver())


def turns(prefix: str, n: int) -> list[HumanMessage]:
    return [HumanMessage(f"{prefix} turn {i}: " + "detail " * 15) for i in range(n)]


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def test_summary_persists_per_thread_with_a_checkpointer() -> None:
    summarizer = ScriptedChatModel(default=numbered_summaries())
    agent = ScriptedChatModel(default="noted")
    app = build(summarizer, agent, max_tokens=300, recent_window=2)

    app.invoke({"messages": [SystemMessage("be kind"), *turns("first", 12)]}, thread("t1"))
    state = app.get_state(thread("t1")).values
    assert state["summary"] == "summary number 1"
    assert state["summary_status"] == "ok"
    assert COUNTER.count_messages(state["messages"][:-1]) <= 300
    assert [m.type for m in state["messages"]][:2] == ["system", "system"]
    assert state["messages"][1].id == SUMMARY_MESSAGE_ID
    assert "first turn 0" in str(summarizer.calls[0][-1].content)
    # The model saw the summary, not the summarised turns.
    seen = agent.calls[0]
    assert any(m.id == SUMMARY_MESSAGE_ID for m in seen)
    assert not any("first turn 0" in str(m.content) for m in seen)

    # Second invocation, same thread: the checkpointed summary is extended.
    app.invoke({"messages": turns("second", 12)}, thread("t1"))
    state = app.get_state(thread("t1")).values
    assert state["summary"] == "summary number 2"
    assert "summary number 1" in str(summarizer.calls[-1][-1].content)
    assert sum(m.id == SUMMARY_MESSAGE_ID for m in state["messages"]) == 1
    assert "summary number 2" in str(agent.calls[-1][1].content)

    # Another thread starts clean.
    app.invoke({"messages": [HumanMessage("hello")]}, thread("t2"))
    other = app.get_state(thread("t2")).values
    assert other["summary"] == ""
    assert [m.content for m in other["messages"]] == ["hello", "noted"]
    assert app.get_state(thread("t1")).values["summary"] == "summary number 2"


def test_failing_summariser_keeps_state_under_budget_and_records_error() -> None:
    summarizer = ScriptedChatModel(default=RuntimeError("rate limited"))
    agent = ScriptedChatModel(default="ok")
    app = build(summarizer, agent, max_tokens=300, recent_window=2)
    app.invoke({"messages": turns("x", 12)}, thread("f"))
    state = app.get_state(thread("f")).values
    assert state["summary"] == ""
    assert state["summary_status"] == "failed"
    assert "rate limited" in state["summary_error"]
    assert COUNTER.count_messages(agent.calls[0]) <= 300


async def test_async_graph_uses_the_async_model() -> None:
    summarizer = ScriptedChatModel(default="async summary")
    agent = ScriptedChatModel(default="ok")
    app = build(summarizer, agent, max_tokens=300, recent_window=2)
    await app.ainvoke({"messages": turns("a", 12)}, thread("a"))
    state = (await app.aget_state(thread("a"))).values
    assert state["summary"] == "async summary"


def test_trim_only_node_without_a_model() -> None:
    node = create_working_memory_node(max_tokens=60)
    update = node.invoke({"messages": [HumanMessage("x " * 500, id="1"), AIMessage("y", id="2")]})
    assert update["messages"][0].id == "__remove_all__"
    assert COUNTER.count_messages(update["messages"][1:]) <= 60
    assert update["summary"] == ""


def test_pre_model_hook_in_llm_input_mode_leaves_history_alone() -> None:
    from langgraph.prebuilt.chat_agent_executor import AgentState

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

        class HookState(AgentState, WorkingMemoryState):  # type: ignore[misc]
            pass

        summarizer = ScriptedChatModel(default=numbered_summaries())
        agent_model = ScriptedChatModel(default="fine")
        hook = create_working_memory_node(
            summarizer, max_tokens=300, recent_window=2, output="llm_input_messages"
        )
        app = create_react_agent(
            agent_model,
            tools=[],
            pre_model_hook=hook,
            state_schema=HookState,
            checkpointer=InMemorySaver(),
        )
    app.invoke({"messages": turns("h", 12)}, thread("h"))
    state = app.get_state(thread("h")).values
    assert len(state["messages"]) == 13  # history untouched
    assert state["summary"] == "summary number 1"
    assert state["summarized_through"] == state["messages"][9].id
    seen = agent_model.calls[0]
    assert seen[0].id == SUMMARY_MESSAGE_ID and COUNTER.count_messages(seen) <= 300
    # Next turn: already-summarised messages are not summarised again.
    app.invoke({"messages": [HumanMessage("short")]}, thread("h"))
    assert len(summarizer.calls) == 1


def test_bad_output_mode() -> None:
    with pytest.raises(ConfigurationError, match="output"):
        create_working_memory_node(output="state")  # type: ignore[arg-type]


def test_negative_recent_window_is_refused_as_by_the_buffer() -> None:
    with pytest.raises(ConfigurationError, match="recent_window must be >= 0, got -1"):
        create_working_memory_node(recent_window=-1)


def test_summary_budget_must_fit_inside_the_context_budget() -> None:
    with pytest.raises(ConfigurationError, match=r"summary_max_tokens \(500\) must be smaller"):
        create_working_memory_node(max_tokens=500, summary_max_tokens=500)
