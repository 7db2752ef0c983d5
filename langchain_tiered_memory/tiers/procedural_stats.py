"""Pure aggregation of procedural events: tool statistics and strategy counts.

Procedural memory never keeps a counter item that writers update in place
(a read-modify-write would lose counts under concurrent writers). Every tool
use and every strategy outcome is its own store item; the functions here fold
those items into :class:`ToolGuidance` and strategy counts on read.

Example:
    >>> events = [tool_event_value(ToolUsageRecord(tool_name="orders", success=ok,
    ...                                             execution_time_ms=ms, error_message=err))
    ...           for ok, ms, err in [(True, 10, ""), (False, 30, "410 Gone: use orders_v2")]]
    >>> g = aggregate_tool_events("orders", events)
    >>> g.total_uses, g.success_rate, g.avg_execution_time_ms, g.last_error
    (2, 0.5, 20.0, '410 Gone: use orders_v2')
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from langchain_tiered_memory.tiers.procedural_models import (
    ErrorPattern,
    Strategy,
    ToolGuidance,
    ToolUsageRecord,
)
from langchain_tiered_memory.tiers.procedural_text import normalize_error
from langchain_tiered_memory.tiers.records import from_epoch, to_epoch

__all__ = [
    "aggregate_tool_events",
    "apply_strategy_outcomes",
    "parameter_patterns",
    "strategy_from_value",
    "strategy_key",
    "strategy_value",
    "tool_event_value",
]

_MAX_VALUE_CHARS = 80


def tool_event_value(record: ToolUsageRecord) -> dict[str, Any]:
    """The stored value of one tool use (parameters as JSON text, already redacted)."""
    return {
        "record_id": record.record_id,
        "tool_name": record.tool_name,
        "success": record.success,
        "execution_time_ms": record.execution_time_ms,
        "error_message": record.error_message,
        "error_signature": normalize_error(record.error_message) if record.error_message else "",
        "hint": record.hint,
        "context": record.context,
        "parameters_json": json.dumps(record.parameters, sort_keys=True, default=str),
        "timestamp": record.timestamp.isoformat(),
        "ts": to_epoch(record.timestamp),
    }


def _param_text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= _MAX_VALUE_CHARS else text[: _MAX_VALUE_CHARS - 1] + "…"


def parameter_patterns(
    parameter_sets: Sequence[dict[str, Any]], min_frequency: float = 0.6
) -> list[str]:
    """The seed's successful-parameter patterns: values most successful calls share.

    Example:
        >>> parameter_patterns([{"limit": 50, "q": "a"}, {"limit": 50, "q": "b"}])
        ['limit=50 (always)']
    """
    if not parameter_sets:
        return []
    values: dict[str, list[str]] = {}
    for params in parameter_sets:
        for key, value in params.items():
            values.setdefault(key, []).append(_param_text(value))
    patterns = []
    for key, seen in values.items():
        counts = Counter(seen)
        top, n = counts.most_common(1)[0]
        if len(counts) == 1 and len(seen) == len(parameter_sets) and len(seen) > 1:
            patterns.append(f"{key}={top} (always)")
        elif len(seen) > 1 and n / len(parameter_sets) > min_frequency:
            patterns.append(f"{key}={top} ({n / len(parameter_sets):.0%} of successes)")
    return patterns


def _order(value: dict[str, Any]) -> tuple[float, str]:
    return (float(value.get("ts", 0.0)), str(value.get("record_id", "")))


def aggregate_tool_events(
    tool_name: str,
    events: Iterable[dict[str, Any]],
    *,
    max_errors: int = 5,
    pattern_min_frequency: float = 0.6,
) -> ToolGuidance:
    """Fold one tool's stored uses into :class:`ToolGuidance`."""
    ordered = sorted(events, key=_order)
    if not ordered:
        return ToolGuidance(tool_name=tool_name, known=False)
    successes = [e for e in ordered if e.get("success")]
    failures = [e for e in ordered if not e.get("success")]
    signatures: Counter[str] = Counter()
    last_message: dict[str, str] = {}
    for event in failures:
        signature = event.get("error_signature") or "(no error message)"
        signatures[signature] += 1
        last_message[signature] = event.get("error_message", "")
    common = [
        ErrorPattern(sig, count, last_message[sig]) for sig, count in signatures.most_common()
    ][:max_errors]
    params = [json.loads(e.get("parameters_json") or "{}") for e in successes]
    last = ordered[-1]
    last_failure = failures[-1] if failures else None
    return ToolGuidance(
        tool_name=tool_name,
        known=True,
        total_uses=len(ordered),
        successes=len(successes),
        failures=len(failures),
        avg_execution_time_ms=sum(float(e.get("execution_time_ms", 0.0)) for e in ordered)
        / len(ordered),
        common_errors=common,
        successful_patterns=parameter_patterns(params, pattern_min_frequency),
        last_used=from_epoch(float(last.get("ts", 0.0))),
        last_success=bool(last.get("success")),
        last_error=(last_failure.get("error_message") or None) if last_failure else None,
        last_hint=(last_failure.get("hint") or None) if last_failure else None,
    )


def strategy_key(name: str) -> str:
    """The store key of a strategy: its name, whitespace collapsed, lower-cased."""
    return " ".join(name.split()).lower()


def strategy_value(strategy: Strategy) -> dict[str, Any]:
    """The stored definition of a strategy (counts live in outcome events)."""
    return {
        "name": strategy.name,
        "description": strategy.description,
        "conditions": strategy.conditions,
        "procedure": strategy.procedure,
        "created_at": strategy.created_at.isoformat(),
        "text": f"{strategy.name}: {strategy.description}. When: {strategy.conditions}",
    }


def strategy_from_value(value: dict[str, Any]) -> Strategy:
    """A strategy definition read back (counts zero until outcomes are applied)."""
    return Strategy(
        name=value["name"],
        description=value["description"],
        conditions=value.get("conditions", ""),
        procedure=value.get("procedure", ""),
        created_at=datetime.fromisoformat(value["created_at"]),
    )


def apply_strategy_outcomes(strategy: Strategy, outcomes: Iterable[dict[str, Any]]) -> Strategy:
    """``strategy`` with counts and ``last_used`` folded from its outcome events."""
    wins = losses = 0
    last = None
    for event in outcomes:
        if event.get("success"):
            wins += 1
        else:
            losses += 1
        ts = float(event.get("ts", 0.0))
        last = ts if last is None else max(last, ts)
    return strategy.model_copy(
        update={
            "success_count": wins,
            "failure_count": losses,
            "last_used": None if last is None else from_epoch(last),
        }
    )
