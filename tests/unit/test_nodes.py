"""Each memory node on its own, and composed into a user's own graph."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.errors import ConfigurationError, TokenBudgetError
from langchain_tiered_memory.integrations.nodes import (
    MEMORY_MESSAGE_ID,
    ConsolidationScheduler,
    MemoryAgentContext,
    create_generate_node,
    create_memory_tools,
    create_reflect_node,
    create_retrieve_node,
    create_writeback_node,
    reflect_turn,
    resolve_user,
)
from langchain_tiered_memory.integrations.nodes.state import current_turn
from langchain_tiered_memory.testing.fakes import FakeClock, HashingEmbeddings, ScriptedChatModel
from langchain_tiered_memory.testing.offline_model import OfflineChatModel


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[TieredMemory]:
    mem = TieredMemory.open(tmp_path / "memory", embeddings=HashingEmbeddings())
    yield mem
    mem.close()


def user(name: str) -> dict[str, Any]:
    return {"configurable": {"user_id": name}}


# -- who the run is for ---------------------------------------------------------------


def test_resolve_user_prefers_context_then_configurable_then_state() -> None:
    config = {"configurable": {"user_id": "from-config"}}
    assert resolve_user({"user_id": "Ctx"}, config) == ("ctx", None)
    assert resolve_user(None, config, {"user_id": "state"}) == ("from-config", None)
    assert resolve_user({}, {}, {"user_id": "state"}) == ("state", None)
    assert resolve_user({"user_id": "a", "agent_id": "Planner"}, None) == ("a", "planner")


@pytest.mark.parametrize("bad", [None, {}, {"user_id": ""}])
def test_resolve_user_error_names_both_ways(bad: Any) -> None:
    with pytest.raises(ConfigurationError) as err:
        resolve_user(bad, {"configurable": {}})
    assert "context={'user_id'" in str(err.value)
    assert "{'configurable': {'user_id'" in str(err.value)


def test_resolve_user_rejects_invalid_ids() -> None:
    with pytest.raises(ConfigurationError, match="control characters"):
        resolve_user({"user_id": "al\x00ice"}, None)


def test_current_turn_takes_the_last_user_messages_and_what_followed() -> None:
    history: list[BaseMessage] = [
        HumanMessage("old"),
        AIMessage("old answer"),
        HumanMessage("first part"),
        HumanMessage("second part"),
        AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": "1"}]),
        ToolMessage("r", tool_call_id="1"),
        AIMessage("answer"),
    ]
    humans, after = current_turn(history)
    assert [m.content for m in humans] == ["first part", "second part"]
    assert [m.type for m in after] == ["ai", "tool", "ai"]
    assert current_turn([AIMessage("hi")]) == ([], [])


# -- retrieve -------------------------------------------------------------------------


def test_retrieve_node_alone(memory: TieredMemory) -> None:
    memory.for_user("alice").remember("I'm allergic to shellfish.")
    node = create_retrieve_node(memory, token_budget=300)
    update = node.invoke({"messages": [("user", "Dinner tonight?")]}, user("alice"))
    assert "shellfish" in update["memory_context"].lower()
    assert 0 < update["memory_tokens"] <= 300
    assert update["user_id"] == "alice"
    assert {"tier", "section", "id", "text", "score"} == set(update["memory_items"][0])
    empty = node.invoke({"messages": [("user", "Dinner tonight?")]}, user("bob"))
    assert "shellfish" not in empty["memory_context"].lower()


async def test_retrieve_node_async_and_without_a_query(memory: TieredMemory) -> None:
    memory.for_user("alice").remember("I'm allergic to shellfish.")
    node = create_retrieve_node(memory)
    update = await node.ainvoke({"messages": [("user", "Dinner?")]}, user("alice"))
    assert "shellfish" in update["memory_context"].lower()
    nothing = await node.ainvoke({"messages": [("ai", "hello")]}, user("alice"))
    assert nothing["memory_context"] == "" and nothing["memory_items"] == []


@pytest.mark.parametrize("budget", [0, -5, True, 2.5])
def test_retrieve_node_rejects_bad_budget(budget: Any) -> None:
    with pytest.raises(TokenBudgetError):
        create_retrieve_node(TieredMemory(InMemoryStore()), token_budget=budget)


# -- generate -------------------------------------------------------------------------


def test_generate_orders_system_memory_conversation() -> None:
    model = ScriptedChatModel(default="ok")
    node = create_generate_node(model, system_prompt="Rules.")
    node.invoke({"messages": [("user", "hi")], "memory_context": "MEMORY"})
    system, mem, human = model.calls[0]
    assert (system.content, mem.content, mem.id, human.content) == (
        "Rules.",
        "MEMORY",
        MEMORY_MESSAGE_ID,
        "hi",
    )
    node.invoke({"messages": [("user", "hi")]})
    assert [m.type for m in model.calls[1]] == ["system", "human"]


def test_generate_trims_the_conversation_not_the_state() -> None:
    model = ScriptedChatModel(default="ok")
    node = create_generate_node(model, system_prompt="", history_tokens=120)
    history = [("user" if i % 2 == 0 else "ai", f"message {i} " + "word " * 30) for i in range(10)]
    state = {"messages": [*history, ("user", "the question")]}
    update = node.invoke(state)
    seen = model.calls[0]
    assert seen[-1].content == "the question"
    assert len(seen) < len(state["messages"])
    assert update == {"messages": [update["messages"][0]]}  # only the reply is added


def test_generate_stops_offering_tools_after_max_rounds() -> None:
    tools = create_memory_tools(TieredMemory(InMemoryStore()), user_id="alice")
    node = create_generate_node(OfflineChatModel(), tools, max_tool_rounds=1)
    call = AIMessage("", tool_calls=[{"name": "remember_fact", "args": {"fact": "x"}, "id": "1"}])
    fresh = node.invoke({"messages": [("user", "Remember that I am vegetarian")]})
    assert fresh["messages"][0].tool_calls
    after_one = node.invoke(
        {
            "messages": [
                HumanMessage("Remember that I am vegetarian"),
                call,
                ToolMessage("Noted", tool_call_id="1"),
                HumanMessage("Remember that I am vegetarian"),
            ]
        }
    )
    assert after_one["messages"][0].tool_calls  # a new turn: rounds start again
    capped = node.invoke(
        {
            "messages": [
                HumanMessage("Remember that I am vegetarian"),
                call,
                ToolMessage("x", tool_call_id="1"),
            ]
        }
    )
    assert not capped["messages"][0].tool_calls


def test_generate_rejects_a_non_chat_model() -> None:
    with pytest.raises(ConfigurationError, match="load_chat_model"):
        create_generate_node("offline")  # type: ignore[arg-type]


# -- memory tools ---------------------------------------------------------------------

ANSWER_WITHOUT = ". Answer without it, and tell the user if it matters."


async def run_tool(tool: Any, args: dict[str, Any], config: Any, use_async: bool) -> str:
    """The tool's answer through ``invoke`` or ``ainvoke``."""
    out = await tool.ainvoke(args, config) if use_async else tool.invoke(args, config)
    assert isinstance(out, str)
    return out


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
async def test_memory_tools_remember_search_and_forget_for_the_runs_user(
    memory: TieredMemory, use_async: bool
) -> None:
    search, remember, forget = create_memory_tools(memory)
    alice = user("alice")

    noted = await run_tool(remember, {"fact": "  I am   vegetarian "}, alice, use_async)
    assert noted == "Noted; I will remember: I am vegetarian"
    memory.flush()
    found = await run_tool(search, {"query": "vegetarian"}, alice, use_async)
    assert "- [profile] Follows a vegetarian diet" in found
    assert await run_tool(search, {"query": "vegetarian"}, user("bob"), use_async) == (
        "No memories match."
    )

    gone = await run_tool(forget, {"query": "vegetarian"}, alice, use_async)
    head, _, framed = gone.partition("\n\n")
    assert head == "Forgot (restorable from the trash):"
    assert "- Follows a vegetarian diet" in framed
    assert await run_tool(forget, {"query": "vegetarian"}, alice, use_async) == (
        "Nothing in memory matched closely enough; nothing was forgotten."
    )
    facts = memory.for_user("alice").semantic.get_facts("alice")
    assert not any("vegetarian" in f.content.lower() for f in facts)
    assert memory.stats()["errors"] == {}


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
@pytest.mark.parametrize(
    ("tool", "args", "expected"),
    [
        (0, {"query": "  \n "}, "Error: query to search is empty; pass what to search."),
        (1, {"fact": ""}, "Error: fact to remember is empty; pass what to remember."),
        (2, {"query": "\t"}, "Error: query to forget is empty; pass what to forget."),
        (
            1,
            {"fact": "x" * 2001},
            "Error: fact to remember is 2001 characters long; keep it under 2000.",
        ),
        (
            0,
            {"query": "y " * 1500},
            "Error: query to search is 2999 characters long; keep it under 2000.",
        ),
    ],
    ids=["empty-query", "empty-fact", "empty-forget", "long-fact", "long-query"],
)
async def test_memory_tools_answer_bad_input_with_an_error_text(
    memory: TieredMemory, use_async: bool, tool: int, args: dict[str, Any], expected: str
) -> None:
    tools = create_memory_tools(memory)
    assert await run_tool(tools[tool], args, user("alice"), use_async) == expected
    await memory.aflush()
    assert memory.users() == []  # nothing was stored for the user
    assert memory.stats()["errors"] == {}  # the model's mistake, not a failure


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
async def test_memory_tools_without_a_user_say_how_to_pass_one(
    memory: TieredMemory, use_async: bool
) -> None:
    search, remember, forget = create_memory_tools(memory)
    answers = [
        await run_tool(search, {"query": "diet"}, {"configurable": {}}, use_async),
        await run_tool(remember, {"fact": "I am vegetarian"}, None, use_async),
        await run_tool(forget, {"query": "diet"}, {"configurable": {"user_id": ""}}, use_async),
    ]
    for answer in answers:
        assert answer.startswith("Error: no user_id for this run: pass it in the run's context")
        assert "{'configurable': {'user_id': 'alice'}}" in answer
    await memory.aflush()
    assert memory.users() == []


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
async def test_memory_tools_turn_a_failing_call_into_an_error_text_and_count_it(
    memory: TieredMemory, use_async: bool
) -> None:
    search, remember, forget = create_memory_tools(memory, user_id="al\x00ice")
    bad_id = "(InvalidInputError: user_id 'al\\x00ice' contains control characters: remove them)"
    assert await run_tool(search, {"query": "diet"}, None, use_async) == (
        f"Error: could not search memory {bad_id}{ANSWER_WITHOUT}"
    )
    assert await run_tool(remember, {"fact": "I am vegetarian"}, None, use_async) == (
        f"Error: could not remember the fact {bad_id}{ANSWER_WITHOUT}"
    )
    assert await run_tool(forget, {"query": "diet"}, None, use_async) == (
        f"Error: could not forget {bad_id}{ANSWER_WITHOUT}"
    )
    assert memory.stats()["errors"] == {
        "tool.search memory": 1,
        "tool.remember the fact": 1,
        "tool.forget": 1,
    }


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
async def test_forget_tool_reports_a_store_failure_during_the_call(
    memory: TieredMemory, use_async: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, _, forget = create_memory_tools(memory, user_id="alice")
    memory.for_user("alice").remember("I am vegetarian.")

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise OSError("disk unplugged")

    async def abroken(*args: Any, **kwargs: Any) -> Any:
        raise OSError("disk unplugged")

    with monkeypatch.context() as patch:
        patch.setattr(memory.store, "batch", broken)
        patch.setattr(memory.store, "abatch", abroken)
        answer = await run_tool(forget, {"query": "vegetarian"}, None, use_async)
    assert answer == f"Error: could not forget (OSError: disk unplugged){ANSWER_WITHOUT}"
    assert memory.stats()["errors"] == {"tool.forget": 1}
    facts = memory.for_user("alice").semantic.get_facts("alice")
    assert any("vegetarian" in f.content.lower() for f in facts)  # nothing was forgotten


# -- reflect --------------------------------------------------------------------------


def tool_turn(status: str = "success") -> list[BaseMessage]:
    return [
        HumanMessage("Where is order 42?"),
        AIMessage(
            "Looking it up.",
            tool_calls=[{"name": "orders_v1", "args": {"order_id": "42"}, "id": "c1"}],
        ),
        ToolMessage(
            "410 Gone" if status == "error" else "shipped",
            tool_call_id="c1",
            status=status,
            response_metadata={"execution_time_ms": 12.5},
        ),
        AIMessage("It has shipped." if status == "success" else "The lookup failed."),
    ]


def test_reflect_turn_success_with_a_tool() -> None:
    clock = FakeClock()
    writes = reflect_turn(tool_turn(), session_id="s1", now=clock())
    episode = writes["episode"]
    assert episode is not None
    assert episode["outcome"] == "success"
    assert episode["session_id"] == "s1"
    assert [s["action"] for s in episode["trajectory"]] == [
        'tool_call: orders_v1({"order_id": "42"})',
        "respond",
    ]
    assert episode["trajectory"][0]["observation"] == "shipped"
    (record,) = writes["tool_uses"]
    assert record["success"] is True and record["execution_time_ms"] == 12.5
    # Same id as consolidation gives this step; the episode says its uses are counted.
    expected = uuid.uuid5(uuid.NAMESPACE_OID, f"{episode['episode_id']}:0").hex
    assert record["record_id"] == expected
    assert episode["context"]["tool_uses_recorded"] is True
    assert writes["facts"] == ["Where is order 42?"]


def test_reflect_turn_failed_tool_is_partial_with_a_lesson() -> None:
    writes = reflect_turn(tool_turn("error"))
    episode = writes["episode"]
    assert episode is not None and episode["outcome"] == "partial"
    assert "orders_v1 failed (error: 410 Gone)" in episode["reflection"]
    assert episode["trajectory"][0]["observation"].startswith("error: ")
    (record,) = writes["tool_uses"]
    assert record["success"] is False and "410 Gone" in record["error_message"]


def test_reflect_turn_without_an_answer_is_a_failure() -> None:
    writes = reflect_turn(tool_turn()[:2])
    assert writes["episode"] is not None and writes["episode"]["outcome"] == "failure"
    assert writes["tool_uses"][0]["success"] is False


def test_reflect_turn_does_not_extract_facts_the_memory_tools_handled() -> None:
    forget = [
        HumanMessage("Forget that I am allergic to shellfish"),
        AIMessage("", tool_calls=[{"name": "forget_memory", "args": {"query": "x"}, "id": "f"}]),
        ToolMessage("Forgot", tool_call_id="f"),
        AIMessage("Done."),
    ]
    assert reflect_turn(forget)["facts"] == []
    assert reflect_turn([HumanMessage("I'm allergic to shellfish"), AIMessage("ok")])["facts"]


def test_reflect_node_uses_thread_and_memory_items() -> None:
    node = create_reflect_node(clock=FakeClock())
    out = node.invoke(
        {
            "messages": [("user", "hi"), ("ai", "hello")],
            "memory_items": [{"tier": "semantic", "id": "f1"}],
        },
        {"configurable": {"thread_id": "t9"}},
    )
    episode = out["pending_writes"]["episode"]
    assert episode["session_id"] == "t9"
    assert episode["context"]["memories_used"] == ["semantic:f1"]
    assert "1 memories in context" in episode["reflection"]


text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
message = st.one_of(
    text.map(HumanMessage),
    text.map(AIMessage),
    text.map(SystemMessage),
    text.map(lambda t: AIMessage(t, tool_calls=[{"name": "x", "args": {}, "id": "1"}])),
    text.map(lambda t: ToolMessage(t, tool_call_id="1")),
)


@given(st.lists(message, max_size=8))
def test_reflect_turn_never_raises_and_facts_are_the_users_words(
    messages: list[BaseMessage],
) -> None:
    writes = reflect_turn(messages)
    humans = {" ".join(str(m.content).split()) for m in messages if isinstance(m, HumanMessage)}
    assert all(" ".join(f.split()) in humans for f in writes["facts"])
    assert (writes["episode"] is None) == (not writes["facts"] and not writes["tool_uses"])


# -- writeback ------------------------------------------------------------------------


def test_writeback_reports_bad_records_and_queues_the_rest(memory: TieredMemory) -> None:
    writes = reflect_turn([HumanMessage("I'm allergic to shellfish"), AIMessage("Noted.")])
    writes["tool_uses"] = [{"tool_name": "", "success": True}]
    node = create_writeback_node(memory)
    out = node.invoke({"pending_writes": writes, "memory_errors": ["earlier"]}, user("alice"))
    assert out["pending_writes"] is None
    assert out["memory_errors"][0] == "earlier"
    assert out["memory_errors"][1].startswith("writeback.tool_use: ValidationError")
    memory.flush()
    assert "shellfish" in memory.for_user("alice").build_memory_context("dinner").text.lower()
    assert memory.stats()["errors"].get("writeback.tool_use") == 1


async def test_writeback_failure_does_not_fail_the_turn(
    memory: TieredMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert memory.writer is not None

    async def broken(op: Any) -> Any:
        raise OSError("outbox disk full")

    monkeypatch.setattr(memory.writer, "asubmit", broken)
    writes = reflect_turn([HumanMessage("I'm allergic to shellfish"), AIMessage("Noted.")])
    out = await create_writeback_node(memory).ainvoke({"pending_writes": writes}, user("alice"))
    assert out["memory_errors"] == [
        "writeback.episode: OSError: outbox disk full",
        "writeback.facts: OSError: outbox disk full",
    ]


def test_writeback_without_a_writer_applies_directly() -> None:
    store = InMemoryStore(index={"dims": 384, "embed": HashingEmbeddings(), "fields": ["text"]})
    memory = TieredMemory(store)
    writes = reflect_turn([HumanMessage("I'm allergic to shellfish"), AIMessage("Noted.")])
    create_writeback_node(memory).invoke({"pending_writes": writes}, user("alice"))
    assert "shellfish" in memory.for_user("alice").build_memory_context("dinner").text.lower()


# -- consolidate ----------------------------------------------------------------------


def test_scheduler_rejects_negative_every() -> None:
    with pytest.raises(ConfigurationError, match="consolidate_every"):
        ConsolidationScheduler(TieredMemory(InMemoryStore()), every=-2)


def test_scheduler_counts_turns_per_user() -> None:
    memory = TieredMemory(InMemoryStore())
    scheduler = ConsolidationScheduler(memory, every=2)
    alice, bob = memory.for_user("alice"), memory.for_user("bob")
    assert scheduler.note_turn(alice) == "idle"
    assert scheduler.note_turn(bob) == "idle"
    assert scheduler.note_turn(alice) == "started"
    assert scheduler.wait(30)
    assert scheduler.status("alice") == "done" and scheduler.status("bob") == "idle"
    assert scheduler.reports


# -- composed into a user's own graph ---------------------------------------------------


class MyState(MessagesState, total=False):
    user_id: str
    agent_id: str | None
    memory_context: str
    memory_items: list[dict[str, Any]]
    memory_tokens: int
    memory_errors: list[str]
    pending_writes: Any
    route: str


def test_nodes_compose_into_a_custom_graph(memory: TieredMemory) -> None:
    model = ScriptedChatModel(default="Here you go.")

    def my_router(state: MyState) -> dict[str, Any]:
        return {"route": "food" if "dinner" in str(state["messages"][-1].content) else "other"}

    graph = StateGraph(MyState, context_schema=MemoryAgentContext)
    graph.add_node("retrieve", create_retrieve_node(memory, token_budget=400))
    graph.add_node("router", my_router)
    graph.add_node("generate", create_generate_node(model, system_prompt="Be brief."))
    graph.add_node("reflect", create_reflect_node())
    graph.add_node("writeback", create_writeback_node(memory))
    graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", "router")
    graph.add_edge("router", "generate")
    graph.add_edge("generate", "reflect")
    graph.add_edge("reflect", "writeback")
    graph.add_edge("writeback", END)
    app = graph.compile()

    app.invoke({"messages": [("user", "I'm allergic to shellfish")]}, context={"user_id": "zoe"})
    memory.flush()
    out = app.invoke({"messages": [("user", "Ideas for dinner?")]}, context={"user_id": "zoe"})
    assert out["route"] == "food"
    assert "shellfish" in out["memory_context"].lower()
    assert any(m.id == MEMORY_MESSAGE_ID for m in model.calls[-1])
    assert out["pending_writes"] is None
