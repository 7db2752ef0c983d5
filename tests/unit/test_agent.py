"""End-to-end runs of create_memory_agent with the offline and scripted models."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.integrations.agent import create_memory_agent
from langchain_tiered_memory.integrations.nodes import MEMORY_MESSAGE_ID, ConsolidationScheduler
from langchain_tiered_memory.testing.fakes import HashingEmbeddings, ScriptedChatModel
from langchain_tiered_memory.testing.offline_model import OfflineChatModel
from langchain_tiered_memory.user_memory import UserMemory


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[TieredMemory]:
    mem = TieredMemory.open(tmp_path / "memory", embeddings=HashingEmbeddings())
    yield mem
    mem.close()


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def recording_offline_model() -> ScriptedChatModel:
    """A scripted model that answers with the offline rules and records every input."""
    offline = OfflineChatModel()
    return ScriptedChatModel(default=lambda messages: offline.respond(messages))


def memory_message(call: list[BaseMessage]) -> str:
    found = [m for m in call if isinstance(m, SystemMessage) and m.id == MEMORY_MESSAGE_ID]
    return str(found[0].content) if found else ""


def ask(agent: Any, text: str, user: str, thread_id: str) -> dict[str, Any]:
    result: dict[str, Any] = agent.invoke(
        {"messages": [("user", text)]}, thread(thread_id), context={"user_id": user}
    )
    return result


def test_session_two_sees_session_one_memory_and_not_another_users(memory: TieredMemory) -> None:
    model = recording_offline_model()
    agent = create_memory_agent(model, memory=memory)

    ask(agent, "I'm allergic to shellfish", "alice", "alice-1")
    memory.flush()

    answer = ask(agent, "Recommend a restaurant for dinner tonight", "alice", "alice-2")
    alice_input = model.calls[-1]
    assert "shellfish" in memory_message(alice_input).lower()
    assert "shellfish" in answer["messages"][-1].content.lower()
    # Session 2 is a new thread: the allergy came from long-term memory, not the thread.
    assert not any("shellfish" in str(m.content) for m in alice_input if m.type == "human")

    ask(agent, "Recommend a restaurant for dinner tonight", "bob", "bob-2")
    bob_input = model.calls[-1]
    assert "shellfish" not in " ".join(str(m.content) for m in bob_input).lower()


def test_offline_model_answer_cites_the_allergy(memory: TieredMemory) -> None:
    agent = create_memory_agent(OfflineChatModel(), memory=memory)
    ask(agent, "I'm allergic to shellfish", "alice", "s1")
    memory.flush()
    out = ask(agent, "Recommend a restaurant for dinner tonight", "alice", "s2")
    assert "Allergic to shellfish" in out["messages"][-1].content
    assert out["memory_tokens"] > 0
    assert any("shellfish" in item["text"].lower() for item in out["memory_items"])
    out_bob = ask(agent, "Recommend a restaurant for dinner tonight", "bob", "s3")
    assert "shellfish" not in out_bob["messages"][-1].content.lower()


async def test_async_two_sessions(memory: TieredMemory) -> None:
    model = recording_offline_model()
    agent = create_memory_agent(model, memory=memory)
    await agent.ainvoke(
        {"messages": [("user", "I'm allergic to shellfish")]},
        thread("a1"),
        context={"user_id": "alice"},
    )
    await memory.aflush()
    out = await agent.ainvoke(
        {"messages": [("user", "Recommend a restaurant for dinner tonight")]},
        thread("a2"),
        context={"user_id": "alice"},
    )
    assert "shellfish" in memory_message(model.calls[-1]).lower()
    assert "shellfish" in out["messages"][-1].content.lower()


def test_remember_tool_loop_writes_to_memory(memory: TieredMemory) -> None:
    agent = create_memory_agent(OfflineChatModel(), memory=memory)
    out = ask(agent, "Remember that I am vegetarian", "alice", "t1")
    kinds = [m.type for m in out["messages"]]
    assert kinds == ["human", "ai", "tool", "ai"]
    call = out["messages"][1].tool_calls[0]
    assert call["name"] == "remember_fact"
    assert call["args"] == {"fact": "I am vegetarian"}
    assert out["messages"][2].status == "success"
    memory.flush()
    alice = memory.for_user("alice")
    assert any("vegetarian" in item.text.lower() for item in alice.search("vegetarian diet"))
    assert not memory.for_user("bob").search("vegetarian diet", top_k=3) or all(
        "vegetarian" not in i.text.lower() for i in memory.for_user("bob").search("vegetarian")
    )
    guidance = alice.procedural.get_tool_guidance("remember_fact")
    assert guidance.total_uses == 1 and guidance.successes == 1


def test_search_tool_acts_for_the_run_user(memory: TieredMemory) -> None:
    memory.for_user("alice").remember("I'm allergic to shellfish.")
    memory.for_user("bob").remember("I'm allergic to peanuts.")
    agent = create_memory_agent(OfflineChatModel(), memory=memory)
    out = ask(agent, "What do you remember about allergies?", "alice", "t1")
    assert out["messages"][1].tool_calls[0]["name"] == "search_memory"
    tool_text = out["messages"][2].content
    assert "shellfish" in tool_text.lower() and "peanut" not in tool_text.lower()


def forget_through_agent(memory: TieredMemory) -> str:
    memory.for_user("alice").remember("I'm allergic to shellfish.")
    memory.for_user("bob").remember("I'm allergic to shellfish.")
    agent = create_memory_agent(OfflineChatModel(), memory=memory)
    out = ask(agent, "Forget that I am allergic to shellfish", "alice", "t1")
    assert out["messages"][1].tool_calls[0]["name"] == "forget_memory"
    return str(out["messages"][2].content)


def test_forget_tool_acts_for_the_run_user(tmp_path: Path) -> None:
    with TieredMemory.open(tmp_path, embeddings=HashingEmbeddings(), retrieval="dense") as mem:
        assert "shellfish" in forget_through_agent(mem).lower()
        mem.flush()
        facts = [i.text for i in mem.for_user("alice").search("shellfish") if i.tier == "semantic"]
        assert not any("shellfish" in text.lower() for text in facts)
        profile = mem.for_user("bob").build_memory_context("dinner").text.lower()
        assert "allergic to shellfish" in profile


def test_forget_tool_with_default_hybrid_retrieval(memory: TieredMemory) -> None:
    assert "shellfish" in forget_through_agent(memory).lower()
    memory.flush()
    facts = [i.text for i in memory.for_user("alice").search("shellfish") if i.tier == "semantic"]
    assert not any("shellfish" in text.lower() for text in facts)


def test_user_from_config_configurable(memory: TieredMemory) -> None:
    model = recording_offline_model()
    agent = create_memory_agent(model, memory=memory)
    memory.for_user("carol").remember("I'm allergic to shellfish.")
    agent.invoke(
        {"messages": [("user", "Dinner ideas?")]},
        {"configurable": {"thread_id": "c", "user_id": "carol"}},
    )
    assert "shellfish" in memory_message(model.calls[-1]).lower()


def test_missing_user_names_both_ways(memory: TieredMemory) -> None:
    agent = create_memory_agent(OfflineChatModel(), memory=memory)
    with pytest.raises(ConfigurationError) as err:
        agent.invoke({"messages": [("user", "hi")]}, thread("x"))
    assert "context=" in str(err.value) and "configurable" in str(err.value)


def human_inputs(model: ScriptedChatModel) -> list[str]:
    """The user messages of the model's last call."""
    return [str(m.content) for m in model.calls[-1] if m.type == "human"]


@pytest.mark.parametrize(
    "checkpointer",
    [
        pytest.param(None, id="default"),
        pytest.param(True, id="true"),
        pytest.param(InMemorySaver(), id="saver"),
    ],
)
def test_thread_keeps_working_memory_with_a_checkpointer(
    memory: TieredMemory, checkpointer: InMemorySaver | bool | None
) -> None:
    model = recording_offline_model()
    agent = create_memory_agent(model, memory=memory, checkpointer=checkpointer)
    ask(agent, "My project is called Falcon", "dave", "d1")
    ask(agent, "What was it called?", "dave", "d1")
    assert human_inputs(model) == ["My project is called Falcon", "What was it called?"]
    ask(agent, "What was it called?", "dave", "d2")
    assert human_inputs(model) == ["What was it called?"]


def test_a_saver_of_your_own_keeps_the_thread_for_a_new_agent(
    memory: TieredMemory, tmp_path: Path
) -> None:
    """A durable saver: an agent built later (after a restart) continues the same thread."""
    sqlite = pytest.importorskip(
        "langgraph.checkpoint.sqlite",
        reason='needs langgraph-checkpoint-sqlite from the bench extra: pip install ".[bench]"',
    )
    path = tmp_path / "threads.sqlite3"
    with closing(sqlite3.connect(path, check_same_thread=False)) as conn:
        first = create_memory_agent(
            OfflineChatModel(), memory=memory, checkpointer=sqlite.SqliteSaver(conn)
        )
        ask(first, "My project is called Falcon", "dave", "d1")
    model = recording_offline_model()
    with closing(sqlite3.connect(path, check_same_thread=False)) as conn:
        second = create_memory_agent(model, memory=memory, checkpointer=sqlite.SqliteSaver(conn))
        out = ask(second, "What was it called?", "dave", "d1")
    assert human_inputs(model) == ["My project is called Falcon", "What was it called?"]
    assert [m.content for m in out["messages"] if m.type == "human"] == human_inputs(model)


async def test_async_thread_keeps_working_memory_with_a_saver(memory: TieredMemory) -> None:
    model = recording_offline_model()
    agent = create_memory_agent(model, memory=memory, checkpointer=InMemorySaver())
    for text in ("My project is called Falcon", "What was it called?"):
        await agent.ainvoke(
            {"messages": [("user", text)]}, thread("d1"), context={"user_id": "dave"}
        )
    assert human_inputs(model) == ["My project is called Falcon", "What was it called?"]


def test_without_a_checkpointer_each_turn_starts_a_fresh_thread(memory: TieredMemory) -> None:
    """``checkpointer=False`` (the platform keeps threads): nothing is carried between runs."""
    model = recording_offline_model()
    agent = create_memory_agent(model, memory=memory, checkpointer=False)
    ask(agent, "My project is called Falcon", "dave", "d1")
    out = ask(agent, "What was it called?", "dave", "d1")
    assert human_inputs(model) == ["What was it called?"]
    assert [m.content for m in out["messages"] if m.type == "human"] == ["What was it called?"]


def test_one_llm_call_per_plain_turn_and_turn_recorded_as_episode(
    memory: TieredMemory,
) -> None:
    model = ScriptedChatModel(default="Sure.")
    agent = create_memory_agent(model, memory=memory)
    out = ask(agent, "Plan my week", "erin", "e1")
    assert len(model.calls) == 1
    assert out["pending_writes"] is None
    memory.flush()
    episodes = memory.for_user("erin").episodic.get_session_episodes("e1")
    assert [e.task_description for e in episodes] == ["Plan my week"]
    assert episodes[0].outcome.value == "success"
    assert episodes[0].trajectory[-1].observation == "Sure."


def test_failing_user_tool_is_recorded_as_a_failure(memory: TieredMemory) -> None:
    @tool
    def orders_v1(order_id: str) -> str:
        """Look up an order (deprecated endpoint)."""
        raise RuntimeError("410 Gone: orders_v1 is deprecated, use orders_v2")

    model = ScriptedChatModel(
        responses=[
            AIMessage(
                "", tool_calls=[{"name": "orders_v1", "args": {"order_id": "42"}, "id": "c1"}]
            ),
            "The order lookup failed.",
        ]
    )
    agent = create_memory_agent(model, [orders_v1], memory=memory)
    out = ask(agent, "Where is order 42?", "frank", "f1")
    tool_message = out["messages"][2]
    assert isinstance(tool_message, ToolMessage) and tool_message.status == "error"
    assert "410 Gone" in str(model.calls[1][-1].content)
    memory.flush()
    frank = memory.for_user("frank")
    guidance = frank.procedural.get_tool_guidance("orders_v1")
    assert guidance.failures == 1 and guidance.successes == 0
    (episode,) = frank.episodic.get_session_episodes("f1")
    assert episode.outcome.value == "partial"
    assert "orders_v1 failed" in episode.reflection


def test_tool_rounds_are_capped(memory: TieredMemory) -> None:
    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    calls = iter(range(1000))

    def always_call_tools(messages: list[BaseMessage]) -> AIMessage:
        return AIMessage("", tool_calls=[{"name": "ping", "args": {}, "id": f"p{next(calls)}"}])

    model = ScriptedChatModel(default=always_call_tools)
    agent = create_memory_agent(model, [ping], memory=memory, max_tool_rounds=2)
    out = ask(agent, "loop forever", "gina", "g1")
    assert len(model.calls) == 3
    assert out["messages"][-1].tool_calls  # the model never answered
    memory.flush()
    (episode,) = memory.for_user("gina").episodic.get_session_episodes("g1")
    assert episode.outcome.value == "failure"


def test_consolidation_runs_in_background_without_blocking(
    memory: TieredMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    started = threading.Event()

    def slow_consolidate(self: UserMemory, progress: Any = None) -> Any:
        started.set()
        assert release.wait(30)
        raise RuntimeError("disk full")

    monkeypatch.setattr(UserMemory, "consolidate", slow_consolidate)
    scheduler = ConsolidationScheduler(memory, every=3)
    agent = create_memory_agent(
        ScriptedChatModel(default="ok"), memory=memory, consolidation=scheduler
    )
    assert ask(agent, "one", "hank", "h1")["consolidation_status"] == "idle"
    assert ask(agent, "two", "hank", "h2")["consolidation_status"] == "idle"
    assert ask(agent, "three", "hank", "h1")["consolidation_status"] == "started"
    assert started.wait(10)
    # The consolidation is still blocked, yet turns go on.
    assert ask(agent, "four", "hank", "h1")["consolidation_status"] == "running"
    release.set()
    assert scheduler.wait(10)
    assert scheduler.failures[0].error == "RuntimeError: disk full"
    assert memory.stats()["errors"].get("consolidation") == 1
    assert (
        ask(agent, "five", "hank", "h1")["consolidation_status"]
        == "failed: RuntimeError: disk full"
    )


def test_consolidate_on_demand(memory: TieredMemory) -> None:
    scheduler = ConsolidationScheduler(memory, every=None)
    agent = create_memory_agent(
        ScriptedChatModel(default="ok"), memory=memory, consolidation=scheduler
    )
    out = agent.invoke(
        {"messages": [("user", "I'm allergic to shellfish")], "consolidate_now": True},
        thread("i1"),
        context={"user_id": "ivy"},
    )
    assert out["consolidation_status"] == "started"
    assert out["consolidate_now"] is False
    assert scheduler.wait(60)
    assert scheduler.status("ivy") == "done"


def test_store_only_memory_writes_directly(tmp_path: Path) -> None:
    store = InMemoryStore(index={"dims": 384, "embed": HashingEmbeddings(), "fields": ["text"]})
    agent = create_memory_agent(OfflineChatModel(), store=store)
    ask(agent, "I'm allergic to shellfish", "jo", "j1")
    out = ask(agent, "Recommend a restaurant for dinner tonight", "jo", "j2")
    assert "shellfish" in out["messages"][-1].content.lower()


def test_configuration_errors(memory: TieredMemory) -> None:
    with pytest.raises(ConfigurationError, match="memory="):
        create_memory_agent(OfflineChatModel())
    with pytest.raises(ConfigurationError, match="unknown model spec"):
        create_memory_agent("nope", memory=memory)

    @tool
    def search_memory(query: str) -> str:
        """Clashes with the memory tool."""
        return query

    with pytest.raises(ConfigurationError, match="search_memory"):
        create_memory_agent(OfflineChatModel(), [search_memory], memory=memory)
    with pytest.raises(ConfigurationError, match="consolidate_every"):
        create_memory_agent(OfflineChatModel(), memory=memory, consolidate_every=-1)
    with pytest.raises(ConfigurationError, match=r"BaseCheckpointSaver.*got str"):
        create_memory_agent(OfflineChatModel(), memory=memory, checkpointer="memory")  # type: ignore[arg-type]
