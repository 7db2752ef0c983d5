"""Named write-back operations of the tiers, for the durable writer.

Every handler is idempotent under replay: episodes and tool-use events are
keyed by their ids, and a restated fact only reinforces a fact that does not
already cite the same source episode.

Examples:
    >>> op = episode_op(MemoryScope("alice"), {"episode_id": "e1", "task_description": "t",
    ...                                          "outcome": "success"})
    >>> op.name, op.namespace
    ('episodic.record', ('tiered_memory', 'alice'))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langgraph.store.base import BaseStore

from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.tiers.episodic.models import Episode
from langchain_tiered_memory.tiers.procedural.models import ToolUsageRecord
from langchain_tiered_memory.writeback.ops import WriteOp
from langchain_tiered_memory.writeback.writer import DurableMemoryWriter

if TYPE_CHECKING:
    from langchain_tiered_memory.runtime import UserResolver, UserTiers

__all__ = [
    "EPISODE_OP",
    "REMEMBER_OP",
    "TOOL_USE_OP",
    "episode_op",
    "register_memory_handlers",
    "remember_op",
    "tool_use_op",
]

EPISODE_OP = "episodic.record"
REMEMBER_OP = "semantic.remember"
TOOL_USE_OP = "procedural.record_tool_use"


def _scope_payload(scope: MemoryScope) -> dict[str, Any]:
    return {"user_id": scope.user_id, "agent_id": scope.agent_id}


def _record_op(name: str, scope: MemoryScope, field: str, record: dict[str, Any]) -> WriteOp:
    """An op that stores one record, keyed by the record's id (``<field>_id``)."""
    return WriteOp(
        name,
        {**_scope_payload(scope), field: record},
        key=f"{name}:{scope.user_id}:{scope.agent_id}:{record[f'{field}_id']}",
        namespace=scope.user_prefix,
    )


def episode_op(scope: MemoryScope, episode: dict[str, Any]) -> WriteOp:
    """Queue-able "record this episode" (keyed by the episode id)."""
    return _record_op(EPISODE_OP, scope, "episode", episode)


def remember_op(scope: MemoryScope, text: str, source_episode_id: str | None) -> WriteOp:
    """Queue-able "extract and store facts from this text"."""
    payload = {**_scope_payload(scope), "text": text, "source_episode_id": source_episode_id}
    return WriteOp(REMEMBER_OP, payload, namespace=scope.user_prefix)


def tool_use_op(scope: MemoryScope, record: dict[str, Any]) -> WriteOp:
    """Queue-able "record this tool use" (keyed by the record id)."""
    return _record_op(TOOL_USE_OP, scope, "record", record)


def register_memory_handlers(writer: DurableMemoryWriter, users: UserResolver) -> None:
    """Register the tiers' named operations on ``writer`` (call before ``writer.start()``).

    Args:
        writer: The durable writer that applies queued operations.
        users: Gives the memory of the user an operation is for (``memory.for_user``).
    """

    def user(payload: dict[str, Any]) -> UserTiers:
        return users(payload["user_id"], payload.get("agent_id"))

    def record_episode(payload: dict[str, Any], store: BaseStore) -> None:
        user(payload).episodic.record(Episode.model_validate(payload["episode"]))

    def remember(payload: dict[str, Any], store: BaseStore) -> None:
        target = user(payload)
        result = target.semantic.remember_from_text(
            payload["text"], payload.get("source_episode_id")
        )
        if result.errors and not result.writes:
            # Extraction problems are recorded by the tier; a write with nothing stored
            # and errors is still "applied" (retrying would not change the text).
            target.runtime.record_error("writeback.remember", RuntimeError(result.errors[0]))

    def record_tool_use(payload: dict[str, Any], store: BaseStore) -> None:
        user(payload).procedural.record_tool_use(ToolUsageRecord.model_validate(payload["record"]))

    writer.register(EPISODE_OP, record_episode, replace=True)
    writer.register(REMEMBER_OP, remember, replace=True)
    writer.register(TOOL_USE_OP, record_tool_use, replace=True)
