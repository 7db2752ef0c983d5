"""LangGraph nodes of the memory agent, each usable on its own in your graph.

One ``create_*_node`` factory per node (what each reads and writes: docs/how-to/agent.md);
:class:`MemoryAgentState` declares every key they use;
:func:`~langchain_tiered_memory.integrations.agent.create_memory_agent` wires them together.

Examples:
    >>> from langgraph.graph import START, StateGraph
    >>> from langgraph.store.memory import InMemoryStore
    >>> from langchain_tiered_memory import TieredMemory
    >>> from langchain_tiered_memory.testing.fakes import ScriptedChatModel
    >>> memory = TieredMemory(InMemoryStore())
    >>> graph = StateGraph(MemoryAgentState, context_schema=MemoryAgentContext)
    >>> _ = graph.add_node("retrieve", create_retrieve_node(memory))
    >>> _ = graph.add_node("generate", create_generate_node(ScriptedChatModel(default="ok")))
    >>> _ = graph.add_edge(START, "retrieve")
    >>> _ = graph.add_edge("retrieve", "generate")
    >>> out = graph.compile().invoke({"messages": [("user", "hi")]}, context={"user_id": "bob"})
    >>> out["messages"][-1].content
    'ok'
"""

from __future__ import annotations

from langchain_tiered_memory.integrations.nodes.consolidate import (
    ConsolidateNode,
    ConsolidationFailure,
    ConsolidationScheduler,
    create_consolidate_node,
)
from langchain_tiered_memory.integrations.nodes.generate import (
    DEFAULT_SYSTEM_PROMPT,
    MEMORY_MESSAGE_ID,
    GenerateNode,
    create_generate_node,
)
from langchain_tiered_memory.integrations.nodes.reflect import (
    ReflectNode,
    create_reflect_node,
    reflect_turn,
)
from langchain_tiered_memory.integrations.nodes.retrieve import RetrieveNode, create_retrieve_node
from langchain_tiered_memory.integrations.nodes.state import (
    MemoryAgentContext,
    MemoryAgentState,
    PendingWrites,
    resolve_user,
)
from langchain_tiered_memory.integrations.nodes.tools import create_memory_tools, create_tools_node
from langchain_tiered_memory.integrations.nodes.writeback import (
    WritebackNode,
    aqueue_turn_writes,
    create_writeback_node,
    queue_turn_writes,
)

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "MEMORY_MESSAGE_ID",
    "ConsolidateNode",
    "ConsolidationFailure",
    "ConsolidationScheduler",
    "GenerateNode",
    "MemoryAgentContext",
    "MemoryAgentState",
    "PendingWrites",
    "ReflectNode",
    "RetrieveNode",
    "WritebackNode",
    "aqueue_turn_writes",
    "create_consolidate_node",
    "create_generate_node",
    "create_memory_tools",
    "create_reflect_node",
    "create_retrieve_node",
    "create_tools_node",
    "create_writeback_node",
    "queue_turn_writes",
    "reflect_turn",
    "resolve_user",
]
