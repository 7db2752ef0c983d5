"""``create_memory_agent``: the memory architecture as a compiled LangGraph graph.

The run's user comes from its context (``context={"user_id": "alice"}``) or
``config["configurable"]["user_id"]``; the thread's conversation is kept by the
checkpointer, what lasts across threads by the long-term memory. The graph and
its nodes are drawn in docs/how-to/agent.md.

Examples:
    >>> import tempfile
    >>> from langchain_tiered_memory import TieredMemory
    >>> from langchain_tiered_memory.testing.fakes import HashingEmbeddings
    >>> from langchain_tiered_memory.testing.offline_model import OfflineChatModel
    >>> memory = TieredMemory.open(tempfile.mkdtemp(), embeddings=HashingEmbeddings())
    >>> agent = create_memory_agent(OfflineChatModel(), memory=memory)
    >>> alice = {"user_id": "alice"}
    >>> _ = agent.invoke({"messages": [("user", "I'm allergic to shellfish")]},
    ...                  {"configurable": {"thread_id": "1"}}, context=alice)
    >>> memory.flush()
    >>> out = agent.invoke({"messages": [("user", "Recommend a restaurant for dinner")]},
    ...                    {"configurable": {"thread_id": "2"}}, context=alice)
    >>> "shellfish" in out["messages"][-1].content
    True
    >>> memory.close()
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore

from langchain_tiered_memory.chat_models import load_chat_model
from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.integrations.nodes.consolidate import (
    ConsolidationScheduler,
    create_consolidate_node,
)
from langchain_tiered_memory.integrations.nodes.generate import (
    DEFAULT_SYSTEM_PROMPT,
    create_generate_node,
    tool_rounds,
)
from langchain_tiered_memory.integrations.nodes.reflect import create_reflect_node
from langchain_tiered_memory.integrations.nodes.retrieve import create_retrieve_node
from langchain_tiered_memory.integrations.nodes.state import MemoryAgentContext, MemoryAgentState
from langchain_tiered_memory.integrations.nodes.tools import create_memory_tools, create_tools_node
from langchain_tiered_memory.integrations.nodes.writeback import create_writeback_node
from langchain_tiered_memory.memory import TieredMemory

__all__ = ["create_memory_agent"]


def _checkpointer(value: BaseCheckpointSaver[Any] | bool | None) -> BaseCheckpointSaver[Any] | None:
    if value is None or value is True:
        return InMemorySaver()
    if value is False:
        return None
    if isinstance(value, BaseCheckpointSaver):
        return value
    raise ConfigurationError(
        f"checkpointer must be a LangGraph BaseCheckpointSaver, None (in-memory) or False "
        f"(none), got {type(value).__name__}"
    )


def _router(max_tool_rounds: int) -> Callable[[MemoryAgentState], Literal["tools", "reflect"]]:
    def route_after_generate(state: MemoryAgentState) -> Literal["tools", "reflect"]:
        """Run the tools the model asked for, unless the turn's tool rounds are used up."""
        messages = state["messages"]
        last = messages[-1] if messages else None
        if not isinstance(last, AIMessage) or not last.tool_calls:
            return "reflect"
        return "tools" if tool_rounds(messages) <= max_tool_rounds else "reflect"

    return route_after_generate


def create_memory_agent(
    model: BaseChatModel | str = "offline",
    tools: Sequence[BaseTool | Callable[..., Any]] = (),
    memory: TieredMemory | None = None,
    *,
    system_prompt: str = DEFAULT_SYSTEM_PROMPT,
    checkpointer: BaseCheckpointSaver[Any] | bool | None = None,
    store: BaseStore | None = None,
    token_budget: int = 2000,
    history_tokens: int = 4000,
    consolidate_every: int | None = 20,
    consolidation: ConsolidationScheduler | None = None,
    memory_tools: bool = True,
    max_tool_rounds: int = 5,
    name: str = "memory_agent",
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Build the memory agent: retrieve, generate (+ tools), reflect, writeback, consolidate.

    Args:
        model: A chat model, or a spec for
            :func:`~langchain_tiered_memory.chat_models.load_chat_model`
            (``"offline"``, ``"openai:gpt-4o-mini"``).
        tools: Your tools; the memory tools are added unless ``memory_tools=False``.
        memory: The long-term memory. Required (or give ``store`` to build
            ``TieredMemory(store)`` on it).
        system_prompt: Instructions, the first system message of every model call.
        checkpointer: ``None`` for an in-process ``InMemorySaver``, a durable saver
            of your own (``SqliteSaver``), or ``False`` for none (``langgraph dev``,
            LangGraph Platform and subgraphs bring their own).
        store: A LangGraph store for your own nodes and tools (``get_store()``);
            also the memory's store when ``memory`` is not given.
        token_budget: Tokens of memory injected per turn.
        history_tokens: Tokens of conversation given to the model per call.
        consolidate_every: Turns per user between background consolidations
            (``None`` or 0: only when the input sets ``consolidate_now``).
        consolidation: A :class:`ConsolidationScheduler` to use (keep it to
            ``wait()`` for running consolidations before closing the memory).
        memory_tools: Give the model ``search_memory``, ``remember_fact`` and ``forget_memory``.
        max_tool_rounds: Tool rounds allowed per turn before the model must answer.
        name: The graph's name.

    Returns:
        A compiled graph; invoke it with ``{"messages": [...]}`` and the user in
        ``context={"user_id": ...}`` or ``config["configurable"]["user_id"]``.

    Raises:
        ConfigurationError: No memory, a bad model spec, or a bad option.
    """
    if memory is None:
        if store is None:
            raise ConfigurationError(
                "create_memory_agent needs memory=: pass memory=TieredMemory.open('./memory') "
                "(or store= a LangGraph BaseStore with a vector index)"
            )
        memory = TieredMemory(store)
    if not isinstance(memory, TieredMemory):
        raise ConfigurationError(
            f"memory must be a TieredMemory, got {type(memory).__name__}: "
            "use TieredMemory.open(path) or TieredMemory(store)"
        )
    chat_model = load_chat_model(model)
    all_tools: list[BaseTool | Callable[..., Any]] = list(tools)
    if memory_tools:
        all_tools.extend(create_memory_tools(memory))
    names = [getattr(t, "name", getattr(t, "__name__", "")) for t in all_tools]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigurationError(
            f"tool names must be unique, {duplicates} appear twice: rename your tool or "
            "pass memory_tools=False"
        )

    graph = StateGraph(MemoryAgentState, context_schema=MemoryAgentContext)
    graph.add_node("retrieve", create_retrieve_node(memory, token_budget=token_budget))
    graph.add_node(
        "generate",
        create_generate_node(
            chat_model,
            all_tools,
            system_prompt=system_prompt,
            history_tokens=history_tokens,
            max_tool_rounds=max_tool_rounds,
            counter=memory.token_counter,
        ),
    )
    graph.add_node("reflect", create_reflect_node(clock=memory.clock))
    graph.add_node("writeback", create_writeback_node(memory))
    graph.add_node(
        "consolidate",
        create_consolidate_node(memory, every=consolidate_every, scheduler=consolidation),
    )
    graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", "generate")
    if all_tools:
        graph.add_node("tools", create_tools_node(all_tools))
        graph.add_conditional_edges("generate", _router(max_tool_rounds), ["tools", "reflect"])
        graph.add_edge("tools", "generate")
    else:
        graph.add_edge("generate", "reflect")
    graph.add_edge("reflect", "writeback")
    graph.add_edge("writeback", "consolidate")
    graph.add_edge("consolidate", END)
    return graph.compile(checkpointer=_checkpointer(checkpointer), store=store, name=name)
