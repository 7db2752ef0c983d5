"""Pure aggregation of procedural events: tool statistics and strategy counts.

Procedural memory never keeps a counter item that writers update in place
(a read-modify-write would lose counts under concurrent writers). Every tool
use and every strategy outcome is its own store item; :class:`ToolTally` and
:class:`OutcomeTally` fold them into statistics. Both are order-independent
monoids (counts, exact float sums, and "latest"/"first" picked by
``(time, id)``), so events can be folded in any order and tallies of disjoint
events merged: that is what lets :mod:`.event_log` keep compacted segments and
fold only the newer events on read, with exactly the result of folding every
event.

Examples:
    >>> events = [tool_event_value(ToolUsageRecord(tool_name="orders", success=ok,
    ...                                             execution_time_ms=ms, error_message=err))
    ...           for ok, ms, err in [(True, 10, ""), (False, 30, "410 Gone: use orders_v2")]]
    >>> g = aggregate_tool_events("orders", events)
    >>> g.total_uses, g.success_rate, g.avg_execution_time_ms, g.last_error
    (2, 0.5, 20.0, '410 Gone: use orders_v2')
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from langchain_tiered_memory.tiers.common.event_fold import CompactEvent, EventKind
from langchain_tiered_memory.tiers.common.records import (
    check_stored_size,
    from_epoch,
    to_epoch,
    validate_model,
)
from langchain_tiered_memory.tiers.procedural.models import (
    ErrorPattern,
    Strategy,
    ToolGuidance,
    ToolUsageRecord,
)
from langchain_tiered_memory.tiers.procedural.text import normalize_error

__all__ = [
    "OUTCOME_EVENTS",
    "TOOL_EVENTS",
    "OutcomeTally",
    "ToolTally",
    "aggregate_tool_events",
    "parameter_patterns",
    "strategy_from_value",
    "strategy_key",
    "strategy_value",
    "tool_event_value",
    "validate_tool_use",
]

_MAX_VALUE_CHARS = 80
_NO_MESSAGE = "(no error message)"


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


def validate_tool_use(record: ToolUsageRecord | dict[str, Any]) -> ToolUsageRecord:
    """A validated copy of a tool use; direct and queued recording both check here first.

    Raises:
        InvalidInputError: A field is invalid, a text is not valid Unicode, or
            the stored record would be over the one-record limit.
    """
    rec = validate_model(ToolUsageRecord, record, "tool usage record")
    check_stored_size(tool_event_value(rec), "tool usage record")
    return rec


def _param_text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= _MAX_VALUE_CHARS else text[: _MAX_VALUE_CHARS - 1] + "…"


def _param_texts(parameters_json: str) -> dict[str, str]:
    params = json.loads(parameters_json or "{}")
    if not isinstance(params, dict):
        return {}
    return {str(k): _param_text(v) for k, v in params.items()}


# ------------------------------------------------------------------ exact, order-free sums


def _sum_add(partials: list[float], x: float) -> None:
    """Add ``x`` to Shewchuk partials: ``math.fsum(partials)`` is then the exact sum."""
    i = 0
    for y in partials:
        if abs(x) < abs(y):
            x, y = y, x
        hi = x + y
        lo = y - (hi - x)
        if lo:
            partials[i] = lo
            i += 1
        x = hi
    partials[i:] = [x]


def _later(a: list[Any] | None, b: list[Any] | None) -> list[Any] | None:
    """Of two records starting with ``(time, id)``, the later one."""
    if a is None or (b is not None and (b[0], b[1]) > (a[0], a[1])):
        return b
    return a


# ------------------------------------------------------------------ tools


def tool_compact(key: str, value: Mapping[str, Any]) -> CompactEvent:
    """A stored tool use as ``[ts, ok, ms, signature, message, hint, params | None]``.

    ``params`` (each value as the pattern text) is kept for successes only:
    patterns are learned from successful calls.
    """
    ok = bool(value.get("success"))
    return [
        float(value.get("ts", 0.0)),
        1 if ok else 0,
        float(value.get("execution_time_ms", 0.0)),
        str(value.get("error_signature") or ""),
        str(value.get("error_message") or ""),
        str(value.get("hint") or ""),
        _param_texts(str(value.get("parameters_json") or "{}")) if ok else None,
    ]


class ToolTally:
    """Statistics of one tool's uses, mergeable (see the module docstring)."""

    def __init__(self) -> None:
        self.uses = 0
        self.successes = 0
        self.ms: list[float] = []  # Shewchuk partials of the execution times
        self.last: list[Any] | None = None  # [ts, id, ok]
        self.last_failure: list[Any] | None = None  # [ts, id, message, hint]
        # signature -> [count, first_ts, first_id, last_ts, last_id, last_message]
        self.errors: dict[str, list[Any]] = {}
        # key -> [sets with the key, first_ts, first_id, {text: [count, first_ts, first_id]}]
        self.params: dict[str, list[Any]] = {}

    def add(self, event_id: str, event: CompactEvent) -> None:
        """Fold one tool use (compact form, see :func:`tool_compact`)."""
        ts, ok, ms, signature, message, hint, params = event
        self.uses += 1
        _sum_add(self.ms, float(ms))
        self.last = _later(self.last, [ts, event_id, ok])
        if ok:
            self.successes += 1
            for key, text in (params or {}).items():
                self._add_param(key, text, 1, ts, event_id)
            return
        self.last_failure = _later(self.last_failure, [ts, event_id, message, hint])
        self._add_error(signature or _NO_MESSAGE, [1, ts, event_id, ts, event_id, message])

    def _add_error(self, signature: str, stat: list[Any]) -> None:
        mine = self.errors.get(signature)
        if mine is None:
            self.errors[signature] = list(stat)
            return
        mine[0] += stat[0]
        if (stat[1], stat[2]) < (mine[1], mine[2]):
            mine[1:3] = stat[1:3]
        if (stat[3], stat[4]) > (mine[3], mine[4]):
            mine[3:6] = stat[3:6]

    def _add_param(self, key: str, text: str, count: int, ts: float, event_id: str) -> None:
        self._merge_param(key, [count, ts, event_id, {text: [count, ts, event_id]}])

    def _merge_param(self, key: str, stat: list[Any]) -> None:
        mine = self.params.get(key)
        if mine is None:
            self.params[key] = [stat[0], stat[1], stat[2], {t: list(v) for t, v in stat[3].items()}]
            return
        mine[0] += stat[0]
        if (stat[1], stat[2]) < (mine[1], mine[2]):
            mine[1:3] = stat[1:3]
        for text, (count, ts, event_id) in stat[3].items():
            seen = mine[3].get(text)
            if seen is None:
                mine[3][text] = [count, ts, event_id]
                continue
            seen[0] += count
            if (ts, event_id) < (seen[1], seen[2]):
                seen[1:3] = [ts, event_id]

    def merge(self, other: ToolTally) -> None:
        """Fold in the tally of other (disjoint) uses."""
        self.uses += other.uses
        self.successes += other.successes
        for x in other.ms:
            _sum_add(self.ms, x)
        self.last = _later(self.last, other.last)
        self.last_failure = _later(self.last_failure, other.last_failure)
        for signature, stat in other.errors.items():
            self._add_error(signature, stat)
        for key, pstat in other.params.items():
            self._merge_param(key, pstat)

    def to_json(self) -> dict[str, Any]:
        """JSON form (read back with :meth:`from_json`)."""
        return {
            "uses": self.uses,
            "successes": self.successes,
            "ms": self.ms,
            "last": self.last,
            "last_failure": self.last_failure,
            "errors": self.errors,
            "params": self.params,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ToolTally:
        """Rebuild a tally from :meth:`to_json`."""
        tally = cls()
        tally.uses, tally.successes = int(data["uses"]), int(data["successes"])
        tally.ms = [float(x) for x in data["ms"]]
        tally.last, tally.last_failure = data["last"], data["last_failure"]
        tally.errors = {str(k): list(v) for k, v in data["errors"].items()}
        tally.params = {str(k): list(v) for k, v in data["params"].items()}
        return tally

    def patterns(self, min_frequency: float) -> list[str]:
        """Parameter values most successful calls share (see :func:`parameter_patterns`)."""
        n_sets = self.successes
        out = []
        for key, (seen, _, _, values) in sorted(
            self.params.items(), key=lambda kv: (kv[1][1], kv[1][2], kv[0])
        ):
            top, (n, _, _) = min(values.items(), key=lambda kv: (-kv[1][0], kv[1][1], kv[1][2]))
            if len(values) == 1 and seen == n_sets and seen > 1:
                out.append(f"{key}={top} (always)")
            elif seen > 1 and n / n_sets > min_frequency:
                out.append(f"{key}={top} ({n / n_sets:.0%} of successes)")
        return out

    def guidance(
        self, tool_name: str, *, max_errors: int = 5, pattern_min_frequency: float = 0.6
    ) -> ToolGuidance:
        """What the uses say about the tool."""
        if not self.uses or self.last is None:
            return ToolGuidance(tool_name=tool_name, known=False)
        ranked = sorted(self.errors.items(), key=lambda kv: (-kv[1][0], kv[1][1], kv[1][2]))
        failure = self.last_failure
        return ToolGuidance(
            tool_name=tool_name,
            known=True,
            total_uses=self.uses,
            successes=self.successes,
            failures=self.uses - self.successes,
            avg_execution_time_ms=math.fsum(self.ms) / self.uses,
            common_errors=[ErrorPattern(sig, s[0], s[5]) for sig, s in ranked][:max_errors],
            successful_patterns=self.patterns(pattern_min_frequency),
            last_used=from_epoch(float(self.last[0])),
            last_success=bool(self.last[2]),
            last_error=(failure[2] or None) if failure else None,
            last_hint=(failure[3] or None) if failure else None,
        )


TOOL_EVENTS: EventKind[ToolTally] = EventKind(
    "tool_name", tool_compact, ToolTally, ToolTally.from_json
)
"""Tool uses as an event log: grouped by tool name, keyed by record id."""


def parameter_patterns(
    parameter_sets: Sequence[dict[str, Any]], min_frequency: float = 0.6
) -> list[str]:
    """Successful-parameter patterns: values most successful calls share.

    Examples:
        >>> parameter_patterns([{"limit": 50, "q": "a"}, {"limit": 50, "q": "b"}])
        ['limit=50 (always)']
    """
    tally = ToolTally()
    for n, params in enumerate(parameter_sets):
        texts = {str(k): _param_text(v) for k, v in params.items()}
        tally.add(f"{n:012d}", [0.0, 1, 0.0, "", "", "", texts])
    return tally.patterns(min_frequency)


def aggregate_tool_events(
    tool_name: str,
    events: Iterable[dict[str, Any]],
    *,
    max_errors: int = 5,
    pattern_min_frequency: float = 0.6,
) -> ToolGuidance:
    """Fold one tool's stored uses into :class:`ToolGuidance`."""
    tally = ToolTally()
    for event in events:
        tally.add(str(event.get("record_id", "")), tool_compact("", event))
    return tally.guidance(
        tool_name, max_errors=max_errors, pattern_min_frequency=pattern_min_frequency
    )


# ------------------------------------------------------------------ strategies


def outcome_compact(key: str, value: Mapping[str, Any]) -> CompactEvent:
    """A stored strategy outcome as ``[ts, ok]``."""
    return [float(value.get("ts", 0.0)), 1 if value.get("success") else 0]


class OutcomeTally:
    """Successes, failures and the last use of one strategy, mergeable."""

    def __init__(self, wins: int = 0, losses: int = 0, last: float | None = None) -> None:
        self.wins, self.losses, self.last = wins, losses, last

    def add(self, event_id: str, event: CompactEvent) -> None:
        """Fold one outcome ``[ts, ok]``."""
        ts, ok = float(event[0]), bool(event[1])
        self.wins += ok
        self.losses += not ok
        self.last = ts if self.last is None else max(self.last, ts)

    def merge(self, other: OutcomeTally) -> None:
        """Fold in the tally of other (disjoint) outcomes."""
        self.wins += other.wins
        self.losses += other.losses
        if other.last is not None:
            self.last = other.last if self.last is None else max(self.last, other.last)

    def to_json(self) -> list[Any]:
        """``[wins, losses, last]``."""
        return [self.wins, self.losses, self.last]

    @classmethod
    def from_json(cls, data: Sequence[Any]) -> OutcomeTally:
        """Rebuild a tally from :meth:`to_json`."""
        wins, losses, last = data
        return cls(int(wins), int(losses), None if last is None else float(last))

    def apply(self, strategy: Strategy) -> Strategy:
        """``strategy`` with these counts and ``last_used``."""
        return strategy.model_copy(
            update={
                "success_count": self.wins,
                "failure_count": self.losses,
                "last_used": None if self.last is None else from_epoch(self.last),
            }
        )


OUTCOME_EVENTS: EventKind[OutcomeTally] = EventKind(
    "strategy_key", outcome_compact, OutcomeTally, OutcomeTally.from_json
)
"""Strategy outcomes as an event log: grouped by strategy key."""


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
