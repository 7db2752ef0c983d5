"""The ``retrieve`` node: assemble the memory context for the current query and user.

The query is the last ``HumanMessage``; the context goes into ``memory_context``,
``memory_items`` (plain dicts) and ``memory_tokens``, a failed tier into
``memory_errors`` (the others still answer). No LLM is called.

Examples:
    >>> import tempfile
    >>> from langchain_tiered_memory import TieredMemory
    >>> from langchain_tiered_memory.testing.fakes import HashingEmbeddings
    >>> memory = TieredMemory.open(tempfile.mkdtemp(), embeddings=HashingEmbeddings())
    >>> _ = memory.for_user("alice").remember("I'm allergic to shellfish.")
    >>> retrieve = create_retrieve_node(memory, token_budget=500)
    >>> update = retrieve.invoke(
    ...     {"messages": [("user", "Recommend a restaurant")]},
    ...     {"configurable": {"user_id": "alice"}},
    ... )
    >>> "shellfish" in update["memory_context"], update["memory_tokens"] <= 500
    (True, True)
    >>> memory.close()
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage, convert_to_messages
from langchain_core.runnables import RunnableConfig, RunnableLambda

from langchain_tiered_memory.assembly.items import MemoryContext, MemoryItem
from langchain_tiered_memory.errors import TokenBudgetError
from langchain_tiered_memory.integrations.nodes.state import (
    last_user_text,
    resolve_user,
    runtime_context,
)

if TYPE_CHECKING:
    from langchain_tiered_memory.memory import TieredMemory
    from langchain_tiered_memory.user_memory import UserMemory

__all__ = ["RetrieveNode", "create_retrieve_node", "item_to_dict"]


def item_to_dict(item: MemoryItem) -> dict[str, Any]:
    """The JSON-safe summary of a memory item kept in the graph state."""
    return {
        "tier": item.tier,
        "section": item.section,
        "id": item.id,
        "text": item.text,
        "score": round(float(item.score), 6),
    }


def state_messages(state: Any) -> list[BaseMessage]:
    """``state["messages"]`` as message objects (tuples and dicts converted)."""
    raw = state.get("messages") if isinstance(state, dict) else getattr(state, "messages", None)
    return list(convert_to_messages(raw or []))


class RetrieveNode:
    """Assembles memory for the last user message; see :func:`create_retrieve_node`.

    Args:
        memory: The memory to read.
        token_budget: Token budget of the memory injection.

    Examples:
        >>> from langgraph.store.memory import InMemoryStore
        >>> from langchain_tiered_memory import TieredMemory
        >>> node = RetrieveNode(TieredMemory(InMemoryStore()), token_budget=300)
        >>> node({"messages": []}, {"configurable": {"user_id": "bob"}})["memory_context"]
        ''
    """

    def __init__(self, memory: TieredMemory, *, token_budget: int = 2000) -> None:
        if isinstance(token_budget, bool) or not isinstance(token_budget, int) or token_budget < 1:
            raise TokenBudgetError(
                f"token_budget must be a positive int of tokens, got {token_budget!r}"
            )
        self.memory = memory
        self.token_budget = token_budget

    def _prepare(self, state: Any, config: RunnableConfig | None) -> tuple[UserMemory, str]:
        user_id, agent_id = resolve_user(runtime_context(config), config)
        return self.memory.for_user(user_id, agent_id), last_user_text(state_messages(state))

    def _update(self, user: UserMemory, ctx: MemoryContext | None) -> dict[str, Any]:
        if ctx is None:  # no user message: nothing to retrieve for
            ctx = MemoryContext(text="", tokens=0, budget=self.token_budget)
        return {
            "user_id": user.scope.user_id,
            "agent_id": user.scope.agent_id,
            "memory_context": ctx.text,
            "memory_items": [item_to_dict(item) for item in ctx.items],
            "memory_tokens": ctx.tokens,
            "memory_errors": [f"retrieval.{t}: {e}" for t, e in sorted(ctx.errors.items())],
        }

    def __call__(self, state: Any, config: RunnableConfig | None = None) -> dict[str, Any]:
        """Run the node: the state update with the memory context."""
        user, query = self._prepare(state, config)
        ctx = user.build_memory_context(query, self.token_budget) if query else None
        return self._update(user, ctx)

    async def acall(self, state: Any, config: RunnableConfig | None = None) -> dict[str, Any]:
        """Async twin of :meth:`__call__`."""
        user, query = self._prepare(state, config)
        ctx = await user.abuild_memory_context(query, self.token_budget) if query else None
        return self._update(user, ctx)


def create_retrieve_node(
    memory: TieredMemory, *, token_budget: int = 2000, name: str = "retrieve"
) -> RunnableLambda[Any, dict[str, Any]]:
    """Create the ``retrieve`` node (sync and async) for any graph with a ``messages`` key.

    Declare ``user_id``, ``memory_context``, ``memory_items``, ``memory_tokens``
    and ``memory_errors`` in your state (or use
    :class:`~langchain_tiered_memory.integrations.nodes.state.MemoryAgentState`): LangGraph
    drops updates to keys a state does not declare.

    Args:
        memory: The memory to read.
        token_budget: Token budget of the memory injection.
        name: The runnable's name.

    Raises:
        ConfigurationError: (when run) no ``user_id`` in the run's context or config.
    """
    node = RetrieveNode(memory, token_budget=token_budget)
    return RunnableLambda(node.__call__, afunc=node.acall, name=name)
