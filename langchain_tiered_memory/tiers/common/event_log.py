"""Append-only event logs on any ``BaseStore``, with compaction that never loses or double-counts.

Counters that many writers bump (tool statistics, strategy outcomes, episode
accesses) are kept as one store item per event, so no writer reads, increments
and writes back a shared item. Reads fold the events into a *tally*
(:mod:`.event_fold`). To keep reads fast as events pile up,
:meth:`EventLog.compact_plan` folds events into **segments** and deletes them;
a read then costs one small item per segment plus the newer events.

``BaseStore`` has no compare-and-swap, so two compactions (or a compaction and
a writer) can always interleave. The layout makes every interleaving safe:

* A segment is immutable and never rewritten: a *body* (the ids of its events
  and each event in compact form) and a *head* (its id range and the tally of
  its events), under a fresh key. The body is written before the head.
* A compaction writes its segments first and only then deletes what they
  replace: raw events and merged segments' heads, then those segments' bodies.
  So every event is, at every moment, in a raw item or in a live segment whose
  body exists; a crash in between leaves both, and readers ignore a raw event
  whose id a segment holds.
* Readers read raw events first, then heads (an event folded and deleted
  between the two reads is in a segment by then), then the bodies they need
  (segments whose ranges overlap each other or a raw event); a body deleted
  under them means the segment was replaced, and the read starts again. Each
  event id counts once: segments of concurrent compactions may overlap, and
  then the union of their events is folded; the next compaction merges them.
* Segments stay below the store's item size: events are packed, oldest first,
  into bodies of about ``segment_budget`` characters; small segments are merged
  by later compactions, full ones are left alone.

Namespaces: raw events in ``events_namespace`` (keyed by event id), heads in
``folded_namespace`` and bodies in ``bodies_namespace`` (siblings, so a search
of one never sees the others). All carry the group (a tool name, a strategy
key, an episode id) in ``kind.group_field``, the field reads filter on.

Examples:
    >>> from langgraph.store.base import PutOp
    >>> from langgraph.store.memory import InMemoryStore
    >>> from langchain_tiered_memory.tiers.common.event_fold import CountTally
    >>> from langchain_tiered_memory.tiers.common.records import run_plan
    >>> kind = EventKind("group", lambda key, value: [value["ts"]], CountTally, CountTally)
    >>> log = EventLog(kind, ("ev",), ("ev_folded",), ("ev_bodies",))
    >>> store = InMemoryStore()
    >>> store.batch([PutOp(("ev",), f"e{i}", {"group": "g", "ts": float(i)}) for i in range(5)])
    [None, None, None, None, None]
    >>> read = run_plan(store, log.read_plan(["g"]))
    >>> read.view("g").tally.n, read.view("g").pending
    (5, 5)
    >>> run_plan(store, log.compact_plan(read)).events_folded
    5
    >>> store.put(("ev",), "e5", {"group": "g", "ts": 5.0})
    >>> view = run_plan(store, log.read_plan(["g"])).view("g")
    >>> view.tally.n, view.pending, len(view.segments)
    (6, 1, 1)
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic

from langgraph.store.base import GetOp, PutOp

from langchain_tiered_memory.errors import BackendError
from langchain_tiered_memory.tiers.common.event_fold import (
    SEGMENT_BUDGET,
    CompactEvent,
    EventKind,
    GroupView,
    LogRead,
    RawEvent,
    Segment,
    T,
    Tally,
    pack,
    union_events,
)
from langchain_tiered_memory.tiers.common.records import Plan, StoreOps, paginate
from langchain_tiered_memory.types import Namespace

__all__ = [
    "CompactEvent",
    "CompactionResult",
    "EventKind",
    "EventLog",
    "GroupView",
    "LogRead",
    "RawEvent",
    "Segment",
    "Tally",
]

logger = logging.getLogger(__name__)

_RAW_PAGE = 20_000
"""Raw events per search page: large, because pages deep into a big backlog cost the
store more per offset than per item."""
_HEAD_PAGE = 500
_READ_ATTEMPTS = 8


@dataclass(frozen=True)
class CompactionResult:
    """What a compaction did."""

    groups: int = 0
    events_folded: int = 0
    segments_written: int = 0
    segments_replaced: int = 0
    raw_deleted: int = 0

    def __add__(self, other: CompactionResult) -> CompactionResult:
        return CompactionResult(
            self.groups + other.groups,
            self.events_folded + other.events_folded,
            self.segments_written + other.segments_written,
            self.segments_replaced + other.segments_replaced,
            self.raw_deleted + other.raw_deleted,
        )


@dataclass(frozen=True)
class _GroupPlan:
    view: GroupView[Any]
    merge: list[Segment]  # segments to fold into the new ones
    write: bool  # whether new segments are written (else only raw leftovers are deleted)


@dataclass(frozen=True)
class EventLog(Generic[T]):
    """An append-only event log of one kind, under three namespaces (see the module docstring).

    Args:
        kind: How events are grouped, compacted and folded.
        events_namespace: Where raw events live (one item per event).
        folded_namespace: Where segment heads live.
        bodies_namespace: Where segment bodies live.
        segment_budget: Characters of ids and events per segment body.
    """

    kind: EventKind[T]
    events_namespace: Namespace
    folded_namespace: Namespace
    bodies_namespace: Namespace
    segment_budget: int = SEGMENT_BUDGET

    # ---------------------------------------------------------------- reading

    def _filters(self, groups: Sequence[str] | None) -> list[dict[str, Any] | None]:
        if groups is None:
            return [None]
        return [{self.kind.group_field: {"$eq": g}} for g in groups]

    def _load_bodies(self, segments: Sequence[Segment]) -> Plan[bool]:
        """Load the bodies of ``segments``; False if one is gone (its segment was replaced)."""
        todo = list({id(s): s for s in segments if s.body is None}.values())
        if not todo:
            return True
        items = yield StoreOps(tuple(GetOp(self.bodies_namespace, s.key) for s in todo))
        for segment, item in zip(todo, items, strict=True):
            if item is not None:
                segment.body = item.value
        return all(item is not None for item in items)

    def read_plan(
        self,
        groups: Sequence[str] | None = None,
        extra: Iterable[RawEvent] = (),
    ) -> Plan[LogRead[T]]:
        """Read ``groups`` (every group when ``None``): raw events, heads, the bodies needed.

        ``extra`` are events not in the store yet (see :class:`LogRead`).

        Raises:
            BackendError: Segments were replaced under every one of several reads in a row.
        """
        wanted = None if groups is None else list(dict.fromkeys(groups))
        pending: dict[str, list[RawEvent]] = {}
        for event in extra:
            pending.setdefault(event.group, []).append(event)
        if wanted == []:
            return LogRead(self.kind, extra=pending)
        filters = self._filters(wanted)
        for _ in range(_READ_ATTEMPTS):
            read: LogRead[T] = LogRead(self.kind, extra=pending)
            raw_pages = yield from paginate(self.events_namespace, filters, page_size=_RAW_PAGE)
            head_pages = yield from paginate(self.folded_namespace, filters, page_size=_HEAD_PAGE)
            for item in (i for page in raw_pages for i in page):
                stored = self.kind.raw_event(item.key, item.value)
                if stored is not None:
                    read.raw.setdefault(stored.group, []).append(stored)
            for item in (i for page in head_pages for i in page):
                segment = Segment.from_head(self.kind.group_field, item)
                if segment is not None:
                    read.segments.setdefault(segment.group, []).append(segment)
            needed = [s for g in read.groups() for s in read.needs_body(g)]
            if (yield from self._load_bodies(needed)):
                return read
        raise BackendError(
            f"the event log {'/'.join(self.events_namespace[-2:])} was compacted under "
            f"{_READ_ATTEMPTS} reads in a row: too many concurrent compactions; retry the call"
        )

    # ---------------------------------------------------------------- compaction

    def _plan_group(self, view: GroupView[T], min_pending: int) -> _GroupPlan | None:
        small = [s for s in view.segments if s.size < self.segment_budget // 2]
        if not (view.pending >= min_pending or view.overlapping or len(small) > 1):
            return None
        merge = view.segments if view.overlapping else small
        write = bool(view.uncovered) or len(merge) > 1
        return _GroupPlan(view, merge if write else [], write)

    def compact_plan(
        self, read: LogRead[T], groups: Iterable[str] | None = None, *, min_pending: int = 1
    ) -> Plan[CompactionResult]:
        """Fold raw events of ``groups`` (all read) into segments, then delete what they replace.

        ``read`` must come from :meth:`read_plan`. A group is compacted when it
        has at least ``min_pending`` stored raw events, overlapping segments, or
        several small segments to merge. A group whose segments are replaced
        meanwhile (a body is gone) is left for the next compaction.
        """
        plans = [
            p
            for g in (read.groups() if groups is None else groups)
            if (p := self._plan_group(read.view(g), min_pending)) is not None
        ]
        merged = [s for p in plans for s in p.merge]
        if merged and not (yield from self._load_bodies(merged)):
            plans = [p for p in plans if all(s.body is not None for s in p.merge)]
        bodies: list[PutOp] = []
        heads: list[PutOp] = []
        deletes: list[PutOp] = []
        old_bodies: list[PutOp] = []
        result = CompactionResult()
        for p in plans:
            new: list[tuple[dict[str, Any], dict[str, Any]]] = []
            if p.write:
                events = union_events(p.merge)
                for event in p.view.uncovered:
                    events.setdefault(event.event_id, event.event)
                new = pack(self.kind, p.view.group, events, budget=self.segment_budget)
            for head, body in new:
                key = uuid.uuid4().hex
                bodies.append(PutOp(self.bodies_namespace, key, body, index=False))
                heads.append(PutOp(self.folded_namespace, key, head, index=False))
            raw = p.view.uncovered + p.view.leftovers
            deletes += [PutOp(self.folded_namespace, s.key, None) for s in p.merge]
            deletes += [PutOp(self.events_namespace, e.key, None) for e in raw]
            old_bodies += [PutOp(self.bodies_namespace, s.key, None) for s in p.merge]
            folded = len(p.view.uncovered) if p.write else 0
            result = result + CompactionResult(1, folded, len(new), len(p.merge), len(raw))
        for batch in (bodies, heads, deletes, old_bodies):  # this order keeps every event
            if batch:
                yield StoreOps(tuple(batch))
        return result

    def auto_compact_plan(
        self, read: LogRead[T], groups: Iterable[str], after: int | None
    ) -> Plan[CompactionResult]:
        """Compact the groups of ``read`` with more than ``after`` un-compacted events.

        Also groups whose segments overlap. ``after=None`` does nothing. A failure
        is logged, not raised: the caller's result (from ``read``) is exact already,
        compaction only makes later reads cheaper, and the events stay for the next try.
        """
        if after is None:
            return CompactionResult()
        due = [g for g in groups if read.view(g).pending > after or read.view(g).overlapping]
        if not due:
            return CompactionResult()
        try:
            return (yield from self.compact_plan(read, due, min_pending=after + 1))
        except Exception as exc:
            logger.warning(
                "compacting %d group(s) of %s failed; the events stay for the next compaction: %r",
                len(due),
                "/".join(self.events_namespace[-2:]),
                exc,
            )
            return CompactionResult()

    def delete_groups_plan(self, groups: Sequence[str]) -> Plan[int]:
        """Delete every raw event and segment of ``groups``; returns how many items went."""
        filters = self._filters(groups)
        namespaces = (self.events_namespace, self.folded_namespace, self.bodies_namespace)
        ops: list[PutOp] = []
        for namespace in namespaces:
            pages = yield from paginate(namespace, filters, page_size=_HEAD_PAGE)
            ops += [PutOp(namespace, item.key, None) for page in pages for item in page]
        if ops:
            yield StoreOps(tuple(ops))
        return len(ops)
