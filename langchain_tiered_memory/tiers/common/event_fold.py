"""Folding an event log: raw events and segments into one exact tally (pure, no I/O).

The records of :mod:`.event_log`: an :class:`EventKind` says how events of one
kind are grouped, compacted and folded into a :class:`Tally`; a
:class:`Segment` is a head (counts, id range, tally) and, loaded only when
needed, a body (the ids and compact events it folded); a :class:`LogRead` is
what one read saw, and :meth:`LogRead.view` folds a group exactly once per
event id:

* disjoint segments contribute their stored tallies (no body needed);
* segments whose id ranges intersect are checked with their bodies, and if two
  hold a common event, the union of their events is folded instead;
* a raw event is skipped when a segment whose range contains it holds its id.

:func:`pack` turns a set of compact events into segment heads and bodies of
bounded size, deterministically (the same events give the same contents).

Examples:
    >>> kind = EventKind("group", lambda key, value: [value["ts"]], CountTally, CountTally)
    >>> [(head["count"], head["first_id"], head["last_id"]) for head, _ in
    ...  pack(kind, "g", {"b": [2.0], "a": [1.0], "c": [3.0]}, budget=30)]
    [(2, 'a', 'b'), (1, 'c', 'c')]
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from langgraph.store.base import SearchItem

__all__ = [
    "SEGMENT_BUDGET",
    "CompactEvent",
    "CountTally",
    "EventKind",
    "GroupView",
    "LogRead",
    "RawEvent",
    "Segment",
    "Tally",
    "pack",
]

CompactEvent = list[Any]
"""An event as segments keep it: a JSON array whose first element is its time (epoch seconds)."""

SEGMENT_BUDGET = 400_000
"""Characters of ids and events per segment body (escaped JSON), well under a store's item limit."""
HARD_LIMIT = 900_000
"""Characters of a head or body as JSON above which a chunk is split in two."""
FORMAT = 2


class Tally(Protocol):
    """What a log folds its events into; ``add`` and ``merge`` must not depend on order."""

    def add(self, event_id: str, event: CompactEvent) -> None:
        """Fold one event in."""

    def merge(self, other: Any) -> None:
        """Fold in another tally of *other* events."""

    def to_json(self) -> Any:
        """A JSON-serialisable form, read back by the kind's ``load_tally``."""


T = TypeVar("T", bound=Tally)


class CountTally:
    """The simplest tally: how many events (for examples and tests)."""

    def __init__(self, n: int = 0) -> None:
        self.n = n

    def add(self, event_id: str, event: CompactEvent) -> None:
        """Count one event."""
        self.n += 1

    def merge(self, other: CountTally) -> None:
        """Add the count of other events."""
        self.n += other.n

    def to_json(self) -> int:
        """The count (``CountTally(n)`` reads it back)."""
        return self.n


def _key_is_id(key: str, value: Mapping[str, Any]) -> str:
    return key


@dataclass(frozen=True)
class EventKind(Generic[T]):
    """How one kind of event is stored and folded.

    Args:
        group_field: The value field naming the event's group.
        compact: ``(key, value) -> CompactEvent`` for a stored raw event.
        new_tally: An empty tally.
        load_tally: Rebuilds a tally from ``Tally.to_json()``.
        event_id: ``(key, value) -> id``; the store key by default.
    """

    group_field: str
    compact: Callable[[str, Mapping[str, Any]], CompactEvent]
    new_tally: Callable[[], T]
    load_tally: Callable[[Any], T]
    event_id: Callable[[str, Mapping[str, Any]], str] = _key_is_id

    def raw_event(self, key: str, value: Mapping[str, Any]) -> RawEvent | None:
        """A stored event's parsed form; ``None`` if it names no group."""
        group = value.get(self.group_field)
        if not isinstance(group, str):
            return None
        return RawEvent(key, self.event_id(key, value), group, self.compact(key, value))


@dataclass(frozen=True)
class RawEvent:
    """One stored (or about to be stored) event."""

    key: str
    event_id: str
    group: str
    event: CompactEvent

    @property
    def order(self) -> tuple[float, str]:
        """``(time, id)``: the order events are packed and ranges are compared in."""
        return (float(self.event[0]), self.event_id)


def blob(value: Any) -> str:
    """Compact JSON text (one string field costs a store far less than a long list)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True)


def _escaped_len(text: str) -> int:
    """Length of ``text`` once embedded as a JSON string (quotes and backslashes escaped)."""
    return len(text) + text.count('"') + text.count("\\")


@dataclass
class Segment:
    """A stored segment: its head, and its body once loaded."""

    key: str
    group: str
    count: int
    size: int
    first: tuple[float, str]
    last: tuple[float, str]
    head: Mapping[str, Any]
    body: Mapping[str, Any] | None = None
    _ids: list[str] | None = field(default=None, repr=False)
    _id_set: frozenset[str] | None = field(default=None, repr=False)

    @classmethod
    def from_head(cls, group_field: str, item: SearchItem) -> Segment | None:
        """Parse a stored head; ``None`` if the item is not one."""
        v = item.value
        try:
            return cls(
                key=item.key,
                group=str(v[group_field]),
                count=int(v["count"]),
                size=int(v["size"]),
                first=(float(v["first_ts"]), str(v["first_id"])),
                last=(float(v["last_ts"]), str(v["last_id"])),
                head=v,
            )
        except (KeyError, TypeError, ValueError):
            return None

    def tally_json(self) -> Any:
        """The stored tally of its events."""
        return json.loads(self.head["tally"])

    def _body(self) -> Mapping[str, Any]:
        if self.body is None:
            raise RuntimeError(f"segment {self.key} was used without its body being loaded")
        return self.body

    def ids(self) -> list[str]:
        """The ids of its events, in packing order (needs the body)."""
        if self._ids is None:
            self._ids = [str(i) for i in json.loads(self._body()["ids"])]
        return self._ids

    def id_set(self) -> frozenset[str]:
        """The ids of its events, as a set (needs the body)."""
        if self._id_set is None:
            self._id_set = frozenset(self.ids())
        return self._id_set

    def events(self) -> list[CompactEvent]:
        """Its events in compact form, aligned with :meth:`ids` (needs the body)."""
        events: list[CompactEvent] = json.loads(self._body()["events"])
        return events

    def spans(self, order: tuple[float, str]) -> bool:
        """Whether ``order`` lies in its id range (it may then hold that event)."""
        return self.first <= order <= self.last

    def holds(self, event: RawEvent) -> bool:
        """Whether it folded ``event`` (a range check, then its ids)."""
        return self.spans(event.order) and event.event_id in self.id_set()


def _ranges_intersect(segments: Sequence[Segment]) -> bool:
    ordered = sorted(segments, key=lambda s: s.first)
    return any(b.first <= a.last for a, b in itertools.pairwise(ordered))


def union_events(segments: Iterable[Segment]) -> dict[str, CompactEvent]:
    """Every event the segments hold, each id once (bodies needed)."""
    events: dict[str, CompactEvent] = {}
    for segment in segments:
        for event_id, event in zip(segment.ids(), segment.events(), strict=True):
            events.setdefault(event_id, event)
    return events


def pack(
    kind: EventKind[Any], group: str, events: Mapping[str, CompactEvent], *, budget: int
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Segments ``(head, body)`` holding ``events``: oldest first, bodies of about ``budget``."""
    ordered = sorted(events.items(), key=lambda kv: (float(kv[1][0]), kv[0]))
    chunks: list[list[tuple[str, CompactEvent]]] = [[]]
    used = 0
    for event_id, event in ordered:
        cost = _escaped_len(blob(event)) + _escaped_len(blob(event_id)) + 2
        if chunks[-1] and used + cost > budget:
            chunks.append([])
            used = 0
        chunks[-1].append((event_id, event))
        used += cost
    out: list[tuple[dict[str, Any], dict[str, Any]]] = []
    todo = [c for c in chunks if c]
    while todo:
        chunk = todo.pop(0)
        head, body = _segment(kind, group, chunk)
        if len(chunk) > 1 and max(len(blob(head)), len(blob(body))) > HARD_LIMIT:
            half = len(chunk) // 2
            todo[:0] = [chunk[:half], chunk[half:]]
            continue
        out.append((head, body))
    return out


def _segment(
    kind: EventKind[Any], group: str, chunk: list[tuple[str, CompactEvent]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    tally = kind.new_tally()
    for event_id, event in chunk:
        tally.add(event_id, event)
    ids, events = blob([i for i, _ in chunk]), blob([e for _, e in chunk])
    (first_id, first), (last_id, last) = chunk[0], chunk[-1]
    head = {
        kind.group_field: group,
        "segment": FORMAT,
        "count": len(chunk),
        "size": len(ids) + len(events),
        "first_ts": float(first[0]),
        "first_id": first_id,
        "last_ts": float(last[0]),
        "last_id": last_id,
        "tally": blob(tally.to_json()),
    }
    return head, {kind.group_field: group, "segment": FORMAT, "ids": ids, "events": events}


@dataclass
class GroupView(Generic[T]):
    """Everything a read saw of one group, and its exact tally.

    Attributes:
        group: The group.
        tally: Every distinct event of the group folded once.
        segments: Its live segments.
        uncovered: Stored raw events no segment holds (a compaction folds these).
        leftovers: Stored raw events a segment already holds (a compaction deletes these).
        overlapping: Whether two segments hold a common event.
    """

    group: str
    tally: T
    segments: list[Segment]
    uncovered: list[RawEvent]
    leftovers: list[RawEvent]
    overlapping: bool

    @property
    def pending(self) -> int:
        """Stored raw events not yet compacted away."""
        return len(self.uncovered) + len(self.leftovers)


@dataclass
class LogRead(Generic[T]):
    """One read of a log (raw events, then segment heads, then the bodies needed), by group.

    ``extra`` are events not in the store yet (an in-process buffer); views count
    them too, once each, but compactions never fold them.
    """

    kind: EventKind[T]
    raw: dict[str, list[RawEvent]] = field(default_factory=dict)
    segments: dict[str, list[Segment]] = field(default_factory=dict)
    extra: dict[str, list[RawEvent]] = field(default_factory=dict)
    _views: dict[str, GroupView[T]] = field(default_factory=dict, repr=False)

    def groups(self) -> list[str]:
        """Every group with a raw event or a segment, sorted."""
        return sorted(set(self.raw) | set(self.segments))

    def needs_body(self, group: str) -> list[Segment]:
        """The segments of ``group`` whose bodies an exact fold needs."""
        segments = self.segments.get(group, [])
        if len(segments) > 1 and _ranges_intersect(segments):
            return segments
        events = self.raw.get(group, []) + self.extra.get(group, [])
        return [s for s in segments if any(s.spans(e.order) for e in events)]

    def view(self, group: str) -> GroupView[T]:
        """The group's exact tally, and what a compaction of it would do."""
        if group not in self._views:
            self._views[group] = self._fold(group)
        return self._views[group]

    def _fold(self, group: str) -> GroupView[T]:
        kind = self.kind
        segments = self.segments.get(group, [])
        tally = kind.new_tally()
        union: frozenset[str] | None = None
        overlapping = False
        if len(segments) > 1 and _ranges_intersect(segments):
            union = frozenset().union(*(s.id_set() for s in segments))
            overlapping = len(union) < sum(len(s.id_set()) for s in segments)
        if overlapping:
            for event_id, compact in union_events(segments).items():
                tally.add(event_id, compact)
        else:
            for segment in segments:
                tally.merge(kind.load_tally(segment.tally_json()))

        def held(event: RawEvent) -> bool:
            if union is not None:
                return event.event_id in union
            return any(s.holds(event) for s in segments)

        seen: set[str] = set()
        uncovered: list[RawEvent] = []
        leftovers: list[RawEvent] = []
        for event in self.raw.get(group, []):
            if event.event_id in seen or held(event):
                leftovers.append(event)
                continue
            seen.add(event.event_id)
            uncovered.append(event)
            tally.add(event.event_id, event.event)
        for event in self.extra.get(group, []):
            if event.event_id not in seen and not held(event):
                seen.add(event.event_id)
                tally.add(event.event_id, event.event)
        return GroupView(group, tally, segments, uncovered, leftovers, overlapping)
