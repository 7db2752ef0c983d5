"""Tool statistics and strategy counts: one stored record per tool and per strategy.

:class:`ProceduralMemory` updates each record read-modify-write under the record's lock
(:mod:`~langchain_tiered_memory.tiers.common.slot_lock`), so no count is lost. A use
counts once per ``record_id`` among the tool's last :data:`RECENT_IDS`; tables of error
kinds and parameter values are exact up to :data:`MAX_KINDS` entries, beyond which the
least frequent makes room.

Examples:
    >>> stats = ToolStats()
    >>> for ok, ms, err in [(True, 10, ""), (False, 30, "410 Gone: use orders_v2")]:
    ...     _ = stats.add(ToolUsageRecord(tool_name="orders", success=ok,
    ...                                   execution_time_ms=ms, error_message=err))
    >>> g = stats.guidance("orders")
    >>> g.total_uses, g.success_rate, g.avg_execution_time_ms, g.last_error
    (2, 0.5, 20.0, '410 Gone: use orders_v2')
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any

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
    "MAX_KINDS",
    "RECENT_IDS",
    "OutcomeCounts",
    "ToolStats",
    "strategy_key",
    "strategy_value",
    "validate_tool_use",
]

RECENT_IDS = 64
"""Record ids a tool's statistics remember, so a use recorded again counts once."""
MAX_KINDS = 32
"""Error kinds, parameter names, and values per parameter name kept per tool."""
_MAX_TEXT = 1000
"""Characters kept of an error message or hint."""
_MAX_VALUE_CHARS = 80
_NO_MESSAGE = "(no error message)"
_STORED = ("uses", "successes", "ms", "last", "last_failure", "errors", "params", "recent")
"""The :class:`ToolStats` attributes its stored JSON list holds, in order."""


def validate_tool_use(record: ToolUsageRecord | dict[str, Any]) -> ToolUsageRecord:
    """A validated copy of a tool use; direct and queued recording both check here first.

    Raises:
        InvalidInputError: A field is invalid, a text is not valid Unicode, or
            the record would be over the one-record limit.
    """
    rec = validate_model(ToolUsageRecord, record, "tool usage record")
    check_stored_size(rec.model_dump(mode="json"), "tool usage record")
    return rec


def _clip(text: str, limit: int = _MAX_TEXT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _param_text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return _clip(text, _MAX_VALUE_CHARS)


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


def _later(a: list[Any] | None, b: list[Any]) -> list[Any]:
    return b if a is None or (b[0], b[1]) > (a[0], a[1]) else a


def _count(table: dict[str, list[Any]], key: str, ts: float, rid: str, new: list[Any]) -> list[Any]:
    """Count one more ``key`` in ``table`` (entries ``[count, first_ts, first_id, ...]``).

    A new key starts as ``new`` (counted once); in a full table the rarest, oldest entry
    makes room for it first.
    """
    entry = table.get(key)
    if entry is None:
        if len(table) >= MAX_KINDS:
            del table[min(table, key=lambda k: (table[k][0], table[k][1], table[k][2]))]
        entry = table[key] = new
        return entry
    entry[0] += 1
    if (ts, rid) < (entry[1], entry[2]):
        entry[1:3] = [ts, rid]
    return entry


class ToolStats:
    """Statistics of one tool's uses, as stored in its record (see the module docstring)."""

    def __init__(self) -> None:
        self.uses = 0
        self.successes = 0
        self.ms: list[float] = []  # Shewchuk partials of the execution times
        self.last: list[Any] | None = None  # [ts, id, ok]
        self.last_failure: list[Any] | None = None  # [ts, id, message, hint]
        # signature -> [count, first_ts, first_id, last_ts, last_id, last_message]
        self.errors: dict[str, list[Any]] = {}
        # name -> [successes with it, first_ts, first_id, {text: [count, first_ts, first_id]}]
        self.params: dict[str, list[Any]] = {}
        self.recent: list[str] = []  # record ids of the latest uses, oldest first

    def add(self, record: ToolUsageRecord) -> bool:
        """Count one use; False (nothing changed) if its ``record_id`` was counted lately."""
        rid = record.record_id
        if rid in self.recent:
            return False
        self.recent = [*self.recent, rid][-RECENT_IDS:]
        ts = to_epoch(record.timestamp)
        self.uses += 1
        _sum_add(self.ms, float(record.execution_time_ms))
        self.last = _later(self.last, [ts, rid, 1 if record.success else 0])
        if record.success:
            self.successes += 1
            for name, value in record.parameters.items():
                values = _count(self.params, str(name), ts, rid, [1, ts, rid, {}])[3]
                _count(values, _param_text(value), ts, rid, [1, ts, rid])
            return True
        message, hint = _clip(record.error_message), _clip(record.hint)
        self.last_failure = _later(self.last_failure, [ts, rid, message, hint])
        signature = normalize_error(record.error_message) if record.error_message else ""
        entry = _count(
            self.errors, signature or _NO_MESSAGE, ts, rid, [1, ts, rid, ts, rid, message]
        )
        if (ts, rid) > (entry[3], entry[4]):
            entry[3:6] = [ts, rid, message]
        return True

    def to_value(self, tool_name: str) -> dict[str, Any]:
        """The stored record (read back with :meth:`from_value`).

        The statistics are one JSON text field: a store builds its payload from
        one string far faster than from the nested tables.
        """
        stats = [getattr(self, name) for name in _STORED]
        text = json.dumps(stats, separators=(",", ":"), ensure_ascii=False)
        return {"tool_name": tool_name, "uses": self.uses, "stats": text}

    @classmethod
    def from_value(cls, data: Mapping[str, Any] | None) -> ToolStats:
        """Statistics read back from :meth:`to_value` (empty for ``None``)."""
        stats = cls()
        if data is None:
            return stats
        for name, stored in zip(_STORED, json.loads(data["stats"]), strict=True):
            setattr(stats, name, stored)
        return stats

    def patterns(self, min_frequency: float) -> list[str]:
        """Parameter values most successful calls share."""
        out = []
        for key, (seen, _, _, values) in sorted(
            self.params.items(), key=lambda kv: (kv[1][1], kv[1][2], kv[0])
        ):
            top, (n, _, _) = min(values.items(), key=lambda kv: (-kv[1][0], kv[1][1], kv[1][2]))
            if len(values) == 1 and seen == self.successes and seen > 1:
                out.append(f"{key}={top} (always)")
            elif seen > 1 and n / self.successes > min_frequency:
                out.append(f"{key}={top} ({n / self.successes:.0%} of successes)")
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


class OutcomeCounts:
    """Successes, failures and the last use of one strategy, as stored in its record."""

    def __init__(self, wins: int = 0, losses: int = 0, last: float | None = None) -> None:
        self.wins, self.losses, self.last = wins, losses, last

    def add(self, when: datetime, success: bool) -> None:
        """Count one outcome."""
        self.wins += success
        self.losses += not success
        ts = to_epoch(when)
        self.last = ts if self.last is None else max(self.last, ts)

    def to_value(self, key: str) -> dict[str, Any]:
        """The stored record (read back with :meth:`from_value`)."""
        return {"strategy_key": key, "wins": self.wins, "losses": self.losses, "last": self.last}

    @classmethod
    def from_value(cls, data: Mapping[str, Any] | None) -> OutcomeCounts:
        """Counts read back from :meth:`to_value` (zero for ``None``)."""
        if data is None:
            return cls()
        last = data["last"]
        return cls(int(data["wins"]), int(data["losses"]), None if last is None else float(last))

    def apply(self, strategy: Strategy) -> Strategy:
        """``strategy`` with these counts and ``last_used``."""
        return strategy.model_copy(
            update={
                "success_count": self.wins,
                "failure_count": self.losses,
                "last_used": None if self.last is None else from_epoch(self.last),
            }
        )


def strategy_key(name: str) -> str:
    """The store key of a strategy: its name, whitespace collapsed, lower-cased."""
    return " ".join(name.split()).lower()


def strategy_value(strategy: Strategy) -> dict[str, Any]:
    """The stored definition of a strategy (its counts are a separate record)."""
    return {
        "name": strategy.name,
        "description": strategy.description,
        "conditions": strategy.conditions,
        "procedure": strategy.procedure,
        "created_at": strategy.created_at.isoformat(),
        "text": f"{strategy.name}: {strategy.description}. When: {strategy.conditions}",
    }
