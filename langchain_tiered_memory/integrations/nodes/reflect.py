"""The ``reflect`` node: turn the finished turn into memory writes, without an LLM.

From the current turn's messages :func:`reflect_turn` builds, deterministically, an
:class:`~langchain_tiered_memory.Episode` (tool calls as steps, the answer last, an
outcome and a short reflection), the user's words for fact extraction (none when the
turn called ``remember_fact`` or ``forget_memory``: extracting again would undo a
forget) and one :class:`~langchain_tiered_memory.ToolUsageRecord` per tool call
(success from the tool message's ``status``, time from its ``execution_time_ms``).
They are left in ``pending_writes`` for the ``writeback`` node.

Examples:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> writes = reflect_turn([HumanMessage("I'm allergic to shellfish"), AIMessage("Noted.")])
    >>> writes["episode"]["outcome"], writes["facts"], writes["tool_uses"]
    ('success', ["I'm allergic to shellfish"], [])
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    MessageLikeRepresentation,
    ToolMessage,
    convert_to_messages,
)
from langchain_core.runnables import RunnableConfig, RunnableLambda

from langchain_tiered_memory.integrations.nodes.retrieve import state_messages
from langchain_tiered_memory.integrations.nodes.state import (
    PendingWrites,
    current_turn,
    message_text,
    thread_id,
)
from langchain_tiered_memory.integrations.nodes.tools import FORGET_TOOL, REMEMBER_TOOL
from langchain_tiered_memory.tiers.episodic.models import Episode, Outcome, TrajectoryStep
from langchain_tiered_memory.tiers.procedural.models import ToolUsageRecord
from langchain_tiered_memory.types import utcnow

__all__ = ["ReflectNode", "create_reflect_node", "reflect_turn"]

_TASK_CHARS = 1000
_OBSERVATION_CHARS = 500
_CONTEXT_CHARS = 200


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _tool_steps(
    after: Sequence[BaseMessage], task: str, now: datetime, episode_id: str
) -> tuple[list[TrajectoryStep], list[ToolUsageRecord]]:
    results = {m.tool_call_id: m for m in after if isinstance(m, ToolMessage)}
    steps: list[TrajectoryStep] = []
    records: list[ToolUsageRecord] = []
    for message in after:
        if not isinstance(message, AIMessage):
            continue
        for call in message.tool_calls:
            result = results.get(call.get("id") or "")
            observation = message_text(result) if result is not None else ""
            failed = result is None or result.status == "error"
            if failed:  # consolidation re-reads tool outcomes from this text
                observation = f"error: {observation or 'no result'}"
            args = json.dumps(call.get("args", {}), sort_keys=True, default=str)
            steps.append(
                TrajectoryStep(
                    thought=_clip(message_text(message), _OBSERVATION_CHARS),
                    action=f"tool_call: {call['name']}({_clip(args, _OBSERVATION_CHARS)})",
                    observation=_clip(observation, _OBSERVATION_CHARS),
                    timestamp=now,
                )
            )
            elapsed = result.response_metadata.get("execution_time_ms", 0.0) if result else 0.0
            records.append(
                ToolUsageRecord(
                    tool_name=call["name"],
                    parameters=dict(call.get("args", {})),
                    context=_clip(task, _CONTEXT_CHARS),
                    success=not failed,
                    execution_time_ms=max(0.0, float(elapsed)),
                    error_message=_clip(observation, _OBSERVATION_CHARS) if failed else "",
                    timestamp=now,
                    # The id consolidation gives the same step: a re-read counts it once.
                    record_id=uuid.uuid5(uuid.NAMESPACE_OID, f"{episode_id}:{len(steps) - 1}").hex,
                )
            )
    return steps, records


def _reflection(answered: bool, records: Sequence[ToolUsageRecord], memories: int) -> str:
    used = ", ".join(f"{r.tool_name} ({'ok' if r.success else 'failed'})" for r in records)
    parts = [
        "Answered" if answered else "No answer was given",
        f" after using {used}" if used else " directly",
        f", with {memories} memories in context." if memories else ", with no memories.",
    ]
    for record in records:
        if not record.success:
            parts.append(
                f" Lesson: {record.tool_name} failed ({_clip(record.error_message, 160)});"
                " check this before calling it again."
            )
    return "".join(parts)


def reflect_turn(
    messages: Sequence[MessageLikeRepresentation],
    *,
    session_id: str | None = None,
    memory_items: Sequence[dict[str, Any]] = (),
    now: datetime | None = None,
) -> PendingWrites:
    """The memory writes for the current turn of ``messages`` (pure; no LLM).

    Args:
        messages: The thread's messages; the turn is the last user message(s) and what followed.
        session_id: Recorded on the episode (the agent passes the thread id).
        memory_items: The memories that were in context (their ids go into the episode).
        now: Timestamp of the records (default: now, UTC).

    Returns:
        ``{"episode": ..., "facts": [...], "tool_uses": [...]}``; no episode
        when the turn has no user message.
    """
    humans, after = current_turn(convert_to_messages(messages))
    texts = [t for t in (message_text(m) for m in humans) if t]
    if not texts:
        return {"episode": None, "facts": [], "tool_uses": []}
    when = now or utcnow()
    task = "\n".join(texts)
    episode_id = uuid.uuid4().hex
    steps, records = _tool_steps(after, task, when, episode_id)
    # The memory tools already did what the user asked ("remember that ...", "forget ...");
    # extracting facts from the same words again would undo a forget.
    handled = any(r.tool_name in (REMEMBER_TOOL, FORGET_TOOL) for r in records)
    final = after[-1] if after else None
    answer = message_text(final) if isinstance(final, AIMessage) and not final.tool_calls else ""
    if answer:
        steps.append(
            TrajectoryStep(
                action="respond", observation=_clip(answer, _OBSERVATION_CHARS), timestamp=when
            )
        )
    failures = sum(1 for r in records if not r.success)
    outcome = Outcome.FAILURE if not answer else Outcome.PARTIAL if failures else Outcome.SUCCESS
    tags = ["conversation", *sorted({r.tool_name for r in records})]
    episode = Episode(
        episode_id=episode_id,
        task_description=_clip(task, _TASK_CHARS),
        outcome=outcome,
        trajectory=steps,
        reflection=_reflection(bool(answer), records, len(memory_items)),
        context={
            "memories_used": [f"{m.get('tier')}:{m.get('id')}" for m in memory_items],
            # The writeback node extracts facts from this turn (or deliberately skips a
            # remember/forget command): consolidation must not extract them again.
            "facts_extracted": True,
            # ... and counts its tool uses: consolidation must not count them again.
            "tool_uses_recorded": bool(records),
        },
        created_at=when,
        tags=tags,
        session_id=session_id,
        importance=0.7 if failures or not answer else 0.5,
    )
    return {
        "episode": episode.model_dump(mode="json"),
        "facts": [] if handled else texts,
        "tool_uses": [r.model_dump(mode="json") for r in records],
    }


class ReflectNode:
    """Leaves the turn's memory writes in ``pending_writes``; see :func:`reflect_turn`.

    Args:
        clock: Returns "now" (aware); defaults to UTC now.
    """

    def __init__(self, *, clock: Callable[[], datetime] | None = None) -> None:
        self.clock = clock or utcnow

    def __call__(self, state: Any, config: RunnableConfig | None = None) -> dict[str, Any]:
        """Run the node: ``{"pending_writes": ...}``."""
        writes = reflect_turn(
            state_messages(state),
            session_id=thread_id(config),
            memory_items=(state.get("memory_items") or []) if isinstance(state, dict) else [],
            now=self.clock(),
        )
        return {"pending_writes": writes}

    async def acall(self, state: Any, config: RunnableConfig | None = None) -> dict[str, Any]:
        """Async twin of :meth:`__call__` (the work is pure and fast)."""
        return self(state, config)


def create_reflect_node(
    *, clock: Callable[[], datetime] | None = None, name: str = "reflect"
) -> RunnableLambda[Any, dict[str, Any]]:
    """Create the ``reflect`` node (sync and async); it needs ``pending_writes`` in the state.

    Examples:
        >>> node = create_reflect_node()
        >>> out = node.invoke({"messages": [("user", "hi"), ("ai", "hello")]})
        >>> out["pending_writes"]["episode"]["task_description"]
        'hi'
    """
    node = ReflectNode(clock=clock)
    return RunnableLambda(node.__call__, afunc=node.acall, name=name)
