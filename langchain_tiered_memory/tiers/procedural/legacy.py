"""Statistics in the earlier layout (one item per event, folded segments), moved once.

Earlier versions kept each tool use and strategy outcome as an item (``tool_uses``,
``strategy_outcomes``) folded into segments (``..._folded`` heads, ``..._folded_events``
bodies). :func:`fold_legacy_plan` folds each event once into the per-tool and
per-strategy records, marked ``legacy`` so a move cut short never counts twice, then
deletes the old items. ``ProceduralMemory`` runs it once, before its first read or
write; with nothing to move it costs one batch of six single-item searches.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langgraph.store.base import GetOp, PutOp, SearchItem, SearchOp

from langchain_tiered_memory.tiers.common.records import Plan, StoreOps, from_epoch, search_all
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.tiers.procedural.models import ToolUsageRecord
from langchain_tiered_memory.tiers.procedural.stats import OutcomeCounts, ToolStats

__all__ = ["fold_legacy_plan"]

_TOOLS = ("tool_uses", "tool_uses_folded", "tool_uses_folded_events")
_OUTCOMES = ("strategy_outcomes", "strategy_outcomes_folded", "strategy_outcomes_folded_events")


def _events(raw: Sequence[SearchItem], bodies: Sequence[SearchItem], group: str) -> dict[str, Any]:
    """``{group: {event_id: event}}``: raw events (as stored) and segment events (compact)."""
    out: dict[str, dict[str, Any]] = {}
    for item in raw:
        out.setdefault(str(item.value.get(group)), {}).setdefault(item.key, item.value)
    for item in bodies:
        ids, events = json.loads(item.value["ids"]), json.loads(item.value["events"])
        mine = out.setdefault(str(item.value.get(group)), {})
        for event_id, event in zip(ids, events, strict=True):
            mine.setdefault(str(event_id), event)
    return out


def _tool_use(tool: str, event_id: str, event: Any) -> ToolUsageRecord:
    if isinstance(event, dict):  # a raw event, as stored
        params = json.loads(event.get("parameters_json") or "{}")
        ts, ok, ms = event.get("ts", 0.0), event.get("success"), event.get("execution_time_ms")
        message, hint = event.get("error_message"), event.get("hint")
    else:  # [ts, ok, ms, signature, message, hint, params | None]
        ts, ok, ms, _, message, hint, params = event
    return ToolUsageRecord(
        tool_name=tool,
        success=bool(ok),
        execution_time_ms=float(ms or 0.0),
        error_message=str(message or ""),
        hint=str(hint or ""),
        parameters=params if ok and isinstance(params, dict) else {},
        timestamp=from_epoch(float(ts)),
        record_id=event_id,
    )


def _outcome(event: Any) -> tuple[float, bool]:
    if isinstance(event, dict):
        return float(event.get("ts", 0.0)), bool(event.get("success"))
    return float(event[0]), bool(event[1])


def fold_legacy_plan(
    scope: MemoryScope, tools: tuple[str, ...], counts: tuple[str, ...]
) -> Plan[int]:
    """Move statistics of the earlier layout into the records; returns the events moved.

    Args:
        scope: Whose procedural memory.
        tools: The namespace of per-tool statistics records.
        counts: The namespace of per-strategy counts records.
    """
    old = [scope.namespace("procedural", name) for name in _TOOLS + _OUTCOMES]
    probe = yield StoreOps(tuple(SearchOp(ns, None, 1, 0) for ns in old))
    if not any(probe):
        return 0
    found: list[list[SearchItem]] = []
    for ns in old:
        found.append((yield from search_all(ns, [None])))
    tool_events = _events(found[0], found[2], "tool_name")
    outcome_events = _events(found[3], found[5], "strategy_key")
    groups = [(tools, key) for key in tool_events] + [(counts, key) for key in outcome_events]
    records = yield StoreOps(tuple(GetOp(ns, key) for ns, key in groups))
    puts: list[PutOp] = []
    moved = 0
    for (ns, key), item in zip(groups, records, strict=True):
        value = None if item is None else item.value
        if value is not None and value.get("legacy"):
            continue  # folded by a move cut short before its deletes
        if ns == tools:
            stats = ToolStats.from_value(value)
            for event_id, event in tool_events[key].items():
                moved += stats.add(_tool_use(key, event_id, event))
            new = stats.to_value(key)
        else:
            outcome = OutcomeCounts.from_value(value)
            for event in outcome_events[key].values():
                ts, success = _outcome(event)
                outcome.add(from_epoch(ts), success)
                moved += 1
            new = outcome.to_value(key)
        puts.append(PutOp(ns, key, {**new, "legacy": True}, index=False))
    if puts:
        yield StoreOps(tuple(puts))
    deletes = [PutOp(ns, i.key, None) for ns, items in zip(old, found, strict=True) for i in items]
    yield StoreOps(tuple(deletes))
    return moved
