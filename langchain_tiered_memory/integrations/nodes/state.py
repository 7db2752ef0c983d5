"""The memory agent's graph state, its run context, and who the run is for.

:class:`MemoryAgentState` holds plain JSON only, so any checkpointer and the
LangGraph server can store it. :func:`resolve_user` finds the run's user in its
context, then in ``config["configurable"]``, and names both ways when neither has one.

Examples:
    >>> resolve_user({"user_id": "Alice"}, None)
    ('alice', None)
    >>> resolve_user(None, {"configurable": {"user_id": "bob", "agent_id": "planner"}})
    ('bob', 'planner')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import MessagesState

from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.tiers.common.scope import MemoryScope

try:  # the key under which LangGraph passes the Runtime to nodes in their config
    from langgraph._internal._constants import CONFIG_KEY_RUNTIME
except ImportError:  # pragma: no cover - older or reorganised langgraph
    CONFIG_KEY_RUNTIME = "__pregel_runtime"

__all__ = [
    "MemoryAgentContext",
    "MemoryAgentState",
    "PendingWrites",
    "current_turn",
    "last_user_text",
    "message_text",
    "resolve_user",
    "runtime_context",
    "thread_id",
]

_MISSING_USER = (
    "no user_id for this run: pass it in the run's context, "
    "graph.invoke(inputs, context={{'user_id': 'alice'}}), or in the config, "
    "graph.invoke(inputs, {{'configurable': {{'user_id': 'alice'}}}}){detail}"
)


class MemoryAgentContext(TypedDict, total=False):
    """Run context of the memory agent (``context_schema``).

    Attributes:
        user_id: Whose memory the run reads and writes (required, here or in
            ``config["configurable"]``).
        agent_id: Optional agent scope inside the user's memory.
    """

    user_id: str
    agent_id: str


class PendingWrites(TypedDict):
    """What the ``reflect`` node leaves for the ``writeback`` node.

    Attributes:
        episode: The turn as an :class:`~langchain_tiered_memory.Episode` (JSON form), or None.
        facts: The user's words of the turn, for fact extraction.
        tool_uses: Tool calls of the turn as ``ToolUsageRecord`` dicts (JSON form).
    """

    episode: dict[str, Any] | None
    facts: list[str]
    tool_uses: list[dict[str, Any]]


class MemoryAgentState(MessagesState, total=False):
    """``MessagesState`` plus what the memory nodes keep.

    Attributes:
        user_id: The run's user (set by ``retrieve`` from the context or config).
        agent_id: The run's agent scope, if any.
        memory_context: The assembled memory injection for the current turn.
        memory_items: The memories in it (tier, section, id, text, score).
        memory_tokens: Tokens of ``memory_context``.
        pending_writes: Left by ``reflect`` for ``writeback``; cleared after queueing.
        consolidate_now: Set in the input to ask for a consolidation after this turn.
        consolidation_status: What ``consolidate`` did this turn.
        memory_errors: What went wrong in memory this turn (the answer still came).
    """

    user_id: str
    agent_id: str | None
    memory_context: str
    memory_items: list[dict[str, Any]]
    memory_tokens: int
    pending_writes: PendingWrites | None
    consolidate_now: bool
    consolidation_status: str
    memory_errors: list[str]


def runtime_context(config: RunnableConfig | None) -> Any:
    """The ``Runtime.context`` of the graph run that ``config`` belongs to (None outside one)."""
    configurable = (config or {}).get("configurable") or {}
    runtime = configurable.get(CONFIG_KEY_RUNTIME)
    return getattr(runtime, "context", None)


def _lookup(source: Any, key: str) -> Any:
    return source.get(key) if isinstance(source, Mapping) else getattr(source, key, None)


def resolve_user(
    context: Any, config: RunnableConfig | None, state: Any = None
) -> tuple[str, str | None]:
    """Find ``(user_id, agent_id)`` of a run: context first, then configurable, then state.

    Args:
        context: The run's context (a mapping or an object with ``user_id``), or None.
        config: The run's config; ``config["configurable"]["user_id"]`` is the fallback.
        state: Graph state; its ``user_id`` is used last (tools running after ``retrieve``).

    Returns:
        The normalised user id and agent id (None when not given).

    Raises:
        ConfigurationError: No user id anywhere, or one that is not a valid id.
    """
    configurable = (config or {}).get("configurable") or {}
    for source in (context, configurable, state):
        user = _lookup(source, "user_id")
        if user is None or user == "":
            continue
        agent = _lookup(source, "agent_id")
        try:
            scope = MemoryScope(user, agent or None)
        except ValueError as exc:
            raise ConfigurationError(_MISSING_USER.format(detail=f" (got {exc})")) from exc
        return scope.user_id, scope.agent_id
    raise ConfigurationError(_MISSING_USER.format(detail=""))


def thread_id(config: RunnableConfig | None) -> str | None:
    """The run's ``thread_id`` (None when it has none)."""
    value = ((config or {}).get("configurable") or {}).get("thread_id")
    return str(value) if value is not None else None


def message_text(message: BaseMessage) -> str:
    """The text of a message (text blocks joined; tool calls and images left out)."""
    return str(message.text).strip()


def last_user_text(messages: Sequence[BaseMessage]) -> str:
    """The text of the last ``HumanMessage`` ("" when there is none)."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message_text(message)
    return ""


def current_turn(messages: Sequence[BaseMessage]) -> tuple[list[HumanMessage], list[BaseMessage]]:
    """Split off the current turn: the user's messages and what followed them.

    The turn's user messages are the last ``HumanMessage`` and the user (or
    system) messages right before it; the rest of the turn is what followed.

    Returns:
        The turn's user messages, and the messages after the last of them.
    """
    indices = [n for n, message in enumerate(messages) if isinstance(message, HumanMessage)]
    if not indices:
        return [], []
    start = last = indices[-1]
    while start > 0 and isinstance(messages[start - 1], HumanMessage | SystemMessage):
        start -= 1
    humans = [m for m in messages[start : last + 1] if isinstance(m, HumanMessage)]
    return humans, list(messages[last + 1 :])
