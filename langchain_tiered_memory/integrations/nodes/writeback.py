"""The ``writeback`` node: queue the turn's memory writes on the durable writer.

Queues the episode, the user's words for fact extraction (linked to the
episode) and the tool uses of ``pending_writes`` on the memory's writer (one
SQLite outbox row each with ``TieredMemory.open``; the work happens after the
answer). A write that cannot be queued does not fail the turn: it is logged,
counted in ``memory.stats()["errors"]`` and listed in ``memory_errors``.

Examples:
    >>> import tempfile
    >>> from langchain_tiered_memory import TieredMemory
    >>> from langchain_tiered_memory.testing.fakes import HashingEmbeddings
    >>> from langchain_tiered_memory.integrations.nodes.reflect import reflect_turn
    >>> memory = TieredMemory.open(tempfile.mkdtemp(), embeddings=HashingEmbeddings())
    >>> writes = reflect_turn([("human", "I'm allergic to shellfish"), ("ai", "Noted.")])
    >>> writeback = create_writeback_node(memory)
    >>> writeback.invoke({"pending_writes": writes}, {"configurable": {"user_id": "alice"}})
    {'pending_writes': None, 'memory_errors': []}
    >>> memory.flush()
    >>> "shellfish" in memory.for_user("alice").build_memory_context("dinner?").text
    True
    >>> memory.close()
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig, RunnableLambda

from langchain_tiered_memory.integrations.nodes.state import (
    PendingWrites,
    resolve_user,
    runtime_context,
)
from langchain_tiered_memory.plans import Plan, arun_plan, run_plan
from langchain_tiered_memory.tiers.episodic.models import Episode
from langchain_tiered_memory.tiers.procedural.models import ToolUsageRecord

if TYPE_CHECKING:
    from langchain_tiered_memory.memory import TieredMemory
    from langchain_tiered_memory.user_memory import UserMemory

__all__ = ["WritebackNode", "aqueue_turn_writes", "create_writeback_node", "queue_turn_writes"]


def _writes(user: UserMemory, writes: PendingWrites) -> Plan[list[str]]:
    """Yield each write as (sync call, async call, arguments); return what went wrong."""
    errors: list[str] = []

    def failed(label: str, exc: Exception) -> None:  # in the state and stats; the turn goes on
        user.runtime.record_error(f"writeback.{label}", exc)
        errors.append(f"writeback.{label}: {type(exc).__name__}: {exc}")

    episode_id = None
    if writes.get("episode"):
        try:
            episode = Episode.model_validate(writes["episode"])
            episode_id = episode.episode_id
            yield user.queue_episode, user.aqueue_episode, (episode,)
        except Exception as exc:
            failed("episode", exc)
    for text in writes.get("facts") or []:
        try:
            yield user.queue_remember, user.aqueue_remember, (text, episode_id)
        except Exception as exc:
            failed("facts", exc)
    for data in writes.get("tool_uses") or []:
        try:
            record = ToolUsageRecord.model_validate(data)
            yield user.queue_tool_use, user.aqueue_tool_use, (record,)
        except Exception as exc:
            failed("tool_use", exc)
    return errors


def queue_turn_writes(user: UserMemory, writes: PendingWrites | None) -> list[str]:
    """Queue ``writes`` for ``user``; returns the errors (empty when all were queued)."""
    return run_plan(_writes(user, writes), lambda w: w[0](*w[2])) if writes else []


async def aqueue_turn_writes(user: UserMemory, writes: PendingWrites | None) -> list[str]:
    """Async twin of :func:`queue_turn_writes`."""
    return await arun_plan(_writes(user, writes), lambda w: w[1](*w[2])) if writes else []


class WritebackNode:
    """Queues ``pending_writes`` for the run's user; see :func:`create_writeback_node`.

    Args:
        memory: The memory whose writer takes the writes.
    """

    def __init__(self, memory: TieredMemory) -> None:
        self.memory = memory

    def _user(self, state: Any, config: RunnableConfig | None) -> UserMemory:
        user_id, agent_id = resolve_user(runtime_context(config), config, state)
        return self.memory.for_user(user_id, agent_id)

    @staticmethod
    def _update(state: Any, errors: list[str]) -> dict[str, Any]:
        earlier = list(state.get("memory_errors") or []) if isinstance(state, dict) else []
        return {"pending_writes": None, "memory_errors": earlier + errors}

    def __call__(self, state: Any, config: RunnableConfig | None = None) -> dict[str, Any]:
        """Run the node: queue the writes, clear ``pending_writes``."""
        writes = state.get("pending_writes") if isinstance(state, dict) else None
        errors = queue_turn_writes(self._user(state, config), writes) if writes else []
        return self._update(state, errors)

    async def acall(self, state: Any, config: RunnableConfig | None = None) -> dict[str, Any]:
        """Async twin of :meth:`__call__`."""
        writes = state.get("pending_writes") if isinstance(state, dict) else None
        errors = await aqueue_turn_writes(self._user(state, config), writes) if writes else []
        return self._update(state, errors)


def create_writeback_node(
    memory: TieredMemory, *, name: str = "writeback"
) -> RunnableLambda[Any, dict[str, Any]]:
    """Create the ``writeback`` node (sync and async) for ``memory``.

    The user comes from the run's context or config (or the state's
    ``user_id``, set by ``retrieve``).
    """
    node = WritebackNode(memory)
    return RunnableLambda(node.__call__, afunc=node.acall, name=name)
