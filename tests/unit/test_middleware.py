"""TieredMemoryMiddleware with LangChain 1.x create_agent and the offline models."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "langchain.agents", reason='the agents extra is not installed: pip install ".[agents]"'
)
from langchain.agents import create_agent
from langchain_core.messages import SystemMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.integrations.middleware import TieredMemoryMiddleware
from langchain_tiered_memory.integrations.nodes import MEMORY_MESSAGE_ID, MemoryAgentContext
from langchain_tiered_memory.testing.fakes import HashingEmbeddings, ScriptedChatModel
from langchain_tiered_memory.testing.offline_model import OfflineChatModel


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[TieredMemory]:
    mem = TieredMemory.open(tmp_path / "memory", embeddings=HashingEmbeddings())
    yield mem
    mem.close()


def recording_offline_model() -> ScriptedChatModel:
    offline = OfflineChatModel()
    return ScriptedChatModel(default=lambda messages: offline.respond(messages))


def as_user(user: str, thread: str = "t") -> dict[str, Any]:
    return {"configurable": {"user_id": user, "thread_id": thread}}


def said(text: str) -> dict[str, Any]:
    return {"messages": [("user", text)]}


def test_memory_is_injected_after_the_system_prompt_for_the_right_user(
    memory: TieredMemory,
) -> None:
    model = recording_offline_model()
    agent = create_agent(
        model,
        system_prompt="You are a dining assistant.",
        middleware=[TieredMemoryMiddleware(memory)],
    )
    agent.invoke(said("I'm allergic to shellfish"), as_user("alice", "1"))
    memory.flush()

    out = agent.invoke(said("Recommend a restaurant for dinner tonight"), as_user("alice", "2"))
    first, second, *rest = model.calls[-1]
    assert isinstance(first, SystemMessage) and first.content == "You are a dining assistant."
    assert second.id == MEMORY_MESSAGE_ID and "shellfish" in str(second.content).lower()
    assert [m.type for m in rest] == ["human"]
    assert "shellfish" in out["messages"][-1].content.lower()
    assert any("shellfish" in item["text"].lower() for item in out["memory_items"])

    agent.invoke(said("Recommend a restaurant for dinner tonight"), as_user("bob", "3"))
    assert "shellfish" not in " ".join(str(m.content) for m in model.calls[-1]).lower()


def test_user_from_run_context(memory: TieredMemory) -> None:
    memory.for_user("alice").remember("I'm allergic to shellfish.")
    model = recording_offline_model()
    agent = create_agent(
        model, middleware=[TieredMemoryMiddleware(memory)], context_schema=MemoryAgentContext
    )
    agent.invoke(said("Dinner ideas?"), context={"user_id": "alice"})
    assert any(
        m.id == MEMORY_MESSAGE_ID and "shellfish" in str(m.content).lower() for m in model.calls[-1]
    )


def test_memory_context_is_not_stored_in_the_thread(memory: TieredMemory) -> None:
    memory.for_user("alice").remember("I'm allergic to shellfish.")
    model = recording_offline_model()
    agent = create_agent(
        model, middleware=[TieredMemoryMiddleware(memory)], checkpointer=InMemorySaver()
    )
    agent.invoke(said("Dinner ideas?"), as_user("alice", "k"))
    agent.invoke(said("And for lunch?"), as_user("alice", "k"))
    state = agent.get_state(as_user("alice", "k")).values
    assert [m.type for m in state["messages"]] == ["human", "ai", "human", "ai"]
    # One memory message per model call, never piled up from earlier turns.
    assert sum(m.id == MEMORY_MESSAGE_ID for m in model.calls[-1]) == 1
    assert len(model.calls) == 2


def test_remember_tool_through_create_agent(memory: TieredMemory) -> None:
    agent = create_agent(OfflineChatModel(), middleware=[TieredMemoryMiddleware(memory)])
    out = agent.invoke(said("Remember that I am vegetarian"), as_user("alice"))
    assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "ai"]
    assert out["messages"][2].response_metadata["execution_time_ms"] >= 0
    memory.flush()
    alice = memory.for_user("alice")
    assert any("vegetarian" in i.text.lower() for i in alice.search("vegetarian diet"))
    assert alice.procedural.get_tool_guidance("remember_fact").successes == 1
    episodes = alice.episodic.retrieve_recent(5)
    assert [e.task_description for e in episodes] == ["Remember that I am vegetarian"]


async def test_async_agent(memory: TieredMemory) -> None:
    model = recording_offline_model()
    agent = create_agent(model, middleware=[TieredMemoryMiddleware(memory)])
    await agent.ainvoke(said("I'm allergic to shellfish"), as_user("alice", "1"))
    await memory.aflush()
    out = await agent.ainvoke(said("Recommend a restaurant for dinner"), as_user("alice", "2"))
    assert "shellfish" in out["messages"][-1].content.lower()


def test_missing_user_names_both_ways(memory: TieredMemory) -> None:
    agent = create_agent(OfflineChatModel(), middleware=[TieredMemoryMiddleware(memory)])
    with pytest.raises(ConfigurationError, match=r"context=.*configurable"):
        agent.invoke(said("hi"))


def test_without_memory_tools(memory: TieredMemory) -> None:
    model = ScriptedChatModel(default="ok")
    agent = create_agent(model, middleware=[TieredMemoryMiddleware(memory, memory_tools=False)])
    agent.invoke(said("Remember that I am vegetarian"), as_user("alice"))
    assert model.bound_tools == []


def test_missing_langchain_extra_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "langchain.agents.middleware.types", None)
    monkeypatch.delitem(sys.modules, "langchain_tiered_memory.integrations.middleware", False)
    with pytest.raises(
        ConfigurationError, match=r'pip install "langchain-tiered-memory\[agents\]"'
    ):
        importlib.import_module("langchain_tiered_memory.integrations.middleware")
