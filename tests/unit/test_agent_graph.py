"""Graph structure of the memory agent: nodes and edges pinned by a snapshot."""

from __future__ import annotations

from langchain_core.tools import tool
from langgraph.store.memory import InMemoryStore
from syrupy.assertion import SnapshotAssertion

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.integrations.agent import create_memory_agent
from langchain_tiered_memory.testing.offline_model import OfflineChatModel


def edges(agent: object) -> list[tuple[str, str, bool]]:
    graph = agent.get_graph()  # type: ignore[attr-defined]
    return sorted((e.source, e.target, e.conditional) for e in graph.edges)


def test_graph_structure_snapshot(snapshot: SnapshotAssertion) -> None:
    agent = create_memory_agent(OfflineChatModel(), memory=TieredMemory(InMemoryStore()))
    assert agent.get_graph().draw_mermaid() == snapshot


def test_graph_nodes_and_edges() -> None:
    agent = create_memory_agent(OfflineChatModel(), memory=TieredMemory(InMemoryStore()))
    assert set(agent.get_graph().nodes) == {
        "__start__",
        "retrieve",
        "generate",
        "tools",
        "reflect",
        "writeback",
        "consolidate",
        "__end__",
    }
    assert edges(agent) == [
        ("__start__", "retrieve", False),
        ("consolidate", "__end__", False),
        ("generate", "reflect", True),
        ("generate", "tools", True),
        ("reflect", "writeback", False),
        ("retrieve", "generate", False),
        ("tools", "generate", False),
        ("writeback", "consolidate", False),
    ]


def test_user_tools_join_the_memory_tools() -> None:
    @tool
    def weather(city: str) -> str:
        """Weather in a city."""
        return "sunny"

    agent = create_memory_agent(OfflineChatModel(), [weather], memory=TieredMemory(InMemoryStore()))
    tools_node = agent.get_graph().nodes["tools"]
    assert set(tools_node.data.tools_by_name) == {  # type: ignore[union-attr]
        "weather",
        "search_memory",
        "remember_fact",
        "forget_memory",
    }


def test_without_tools_generate_goes_straight_to_reflect() -> None:
    agent = create_memory_agent(
        OfflineChatModel(), memory=TieredMemory(InMemoryStore()), memory_tools=False
    )
    assert "tools" not in agent.get_graph().nodes
    assert ("generate", "reflect", False) in edges(agent)
