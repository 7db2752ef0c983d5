"""How often each record (an episode, a fact) was retrieved: counted exactly, off the read path.

:class:`RecordAccess` counts the retrievals of one kind of record (a pydantic
model with ``access_count`` and ``last_accessed`` fields) in one scope;
:class:`~.episodic_access.EpisodeAccess` and :class:`~.semantic_access.FactAccess`
are its two uses.

Accesses are an append-only :class:`~.event_log.EventLog` grouped by record:
no counter item is read, incremented and written back, so concurrent retrievals
never lose counts. Events are compacted into per-record segments (when a read
sees more than ``compact_after`` of them, or on :meth:`RecordAccess.compact_plan`),
and ``access_count`` / ``last_accessed`` are read as segments plus newer events.

A retrieval does no store I/O for its accesses: it adds them to an in-process
buffer (shared by every :class:`RecordAccess` on the same store, scope and
tier), where accesses of one record coalesce into one pending event
``{<group field>, "ts", "n"}``. The buffer is written as one batch
``flush_seconds`` after its first access (a timer thread), at once when it
holds ``flush_size`` records, on :meth:`RecordAccess.flush_plan` (the tiers'
``flush_access``), by :func:`flush_access_buffers` and at interpreter exit.
Reads in this process count buffered accesses too (each event once), so they
are exact at once; other processes see them once written. A crash loses at
most the buffered accesses (a usage signal, never a memory).

Namespaces: ``(..., <tier>, "access", "log")`` for the events,
``(..., <tier>, "access", "folded")`` and ``(..., "folded_events")`` for the
heads and bodies of their segments (see :func:`access_log`).
"""

from __future__ import annotations

import asyncio
import atexit
import itertools
import logging
import math
import threading
import uuid
import weakref
from collections.abc import Sequence
from typing import Any, ClassVar, Generic, TypeVar

from langgraph.store.base import BaseStore, PutOp
from pydantic import BaseModel

from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.stores.serialized import thread_safe
from langchain_tiered_memory.tiers.common.args import Clock
from langchain_tiered_memory.tiers.common.event_log import (
    CompactEvent,
    CompactionResult,
    EventKind,
    EventLog,
    LogRead,
)
from langchain_tiered_memory.tiers.common.records import (
    Plan,
    StoreOps,
    arun_plan,
    from_epoch,
    run_plan,
    to_epoch,
)
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.types import Namespace, ensure_aware

__all__ = [
    "AccessBuffer",
    "AccessTally",
    "RecordAccess",
    "access_events",
    "access_log",
    "aflush_access_buffers",
    "check_access_settings",
    "drop_access_buffers",
    "flush_access_buffers",
]

logger = logging.getLogger(__name__)

R = TypeVar("R", bound=BaseModel)

_GROUP_READ_LIMIT = 64
"""Above this many records, one read of every access event beats one read per record."""
_FLUSH_CHUNK = 64
"""Access events per write batch of a flush."""


class AccessTally:
    """Accesses of one record: how many, and the latest (epoch seconds)."""

    def __init__(self, count: int = 0, last: float | None = None) -> None:
        self.count, self.last = count, last

    def add(self, event_id: str, event: CompactEvent) -> None:
        """Fold one access event ``[ts, n]`` (``n`` accesses, the latest at ``ts``)."""
        self.count += int(event[1]) if len(event) > 1 else 1
        ts = float(event[0])
        self.last = ts if self.last is None else max(self.last, ts)

    def merge(self, other: AccessTally) -> None:
        """Fold in the tally of other (disjoint) accesses."""
        self.count += other.count
        if other.last is not None:
            self.last = other.last if self.last is None else max(self.last, other.last)

    def to_json(self) -> list[Any]:
        """``[count, last]``."""
        return [self.count, self.last]

    @classmethod
    def from_json(cls, data: Sequence[Any]) -> AccessTally:
        """Rebuild a tally from :meth:`to_json`."""
        count, last = data
        return cls(int(count), None if last is None else float(last))


def _access_compact(key: str, value: Any) -> CompactEvent:
    return [float(value.get("ts", 0.0)), int(value.get("n", 1))]


def access_events(group_field: str) -> EventKind[AccessTally]:
    """Accesses as an event log, grouped by the record id in ``group_field``."""
    return EventKind(group_field, _access_compact, AccessTally, AccessTally.from_json)


def access_log(scope: MemoryScope, tier: str, group_field: str) -> EventLog[AccessTally]:
    """The access log of a tier's records in a scope (see the module docstring).

    Args:
        scope: Whose records.
        tier: The first namespace label of the log (``"episodic"``, ``"semantic"``).
        group_field: The event field holding the record id.
    """
    return EventLog(
        access_events(group_field),
        scope.namespace(tier, "access", "log"),
        scope.namespace(tier, "access", "folded"),
        scope.namespace(tier, "access", "folded_events"),
    )


def check_access_settings(
    flush_size: int, flush_seconds: float | None, compact_after: int | None, *, prefix: str
) -> None:
    """Validate the access-counting settings of a tier config.

    Raises:
        ConfigurationError: A setting is out of range (the message names it as
            ``<prefix>flush_size`` and so on).
    """
    if flush_size < 1:
        raise ConfigurationError(f"{prefix}flush_size={flush_size}: use at least 1")
    if flush_seconds is not None and not (math.isfinite(flush_seconds) and flush_seconds > 0):
        raise ConfigurationError(
            f"{prefix}flush_seconds={flush_seconds!r}: use a positive number of seconds or None"
        )
    if compact_after is not None and compact_after < 1:
        raise ConfigurationError(f"{prefix}compact_after={compact_after}: use at least 1, or None")


class AccessBuffer:
    """Accesses of one store and scope recorded in this process and not yet written.

    ``queued`` events (one per record, coalesced) wait for a flush; ``inflight``
    ones are being written. Both count for reads until the write has returned.
    """

    def __init__(self, namespace: Namespace, group_field: str) -> None:
        self.namespace = namespace
        self.group_field = group_field
        self.lock = threading.Lock()
        self.queued: dict[str, dict[str, Any]] = {}
        self.inflight: dict[str, dict[str, Any]] = {}
        self._queued_key: dict[str, str] = {}  # record id -> key of its queued event
        self.timer: threading.Timer | None = None
        self._settled = threading.Condition(self.lock)

    def add(self, record_ids: Sequence[str], ts: float) -> int:
        """Queue one access of each record at ``ts``; returns how many events are queued."""
        with self.lock:
            for record_id in record_ids:
                key = self._queued_key.get(record_id)
                if key is None:
                    key = self._queued_key[record_id] = uuid.uuid4().hex
                    self.queued[key] = {self.group_field: record_id, "ts": ts, "n": 1}
                else:
                    event = self.queued[key]
                    event["n"] += 1
                    event["ts"] = max(event["ts"], ts)
            return len(self.queued)

    def snapshot(self, record_ids: set[str] | None) -> list[tuple[str, dict[str, Any]]]:
        """Copies of every unwritten event (of ``record_ids``, if given)."""
        with self.lock:
            events = [(k, dict(v)) for k, v in [*self.inflight.items(), *self.queued.items()]]
        if record_ids is None:
            return events
        return [(k, v) for k, v in events if v[self.group_field] in record_ids]

    def claim(self, limit: int) -> list[tuple[str, dict[str, Any]]]:
        """Take up to ``limit`` queued events (the oldest) for writing."""
        with self.lock:
            claimed = list(itertools.islice(self.queued.items(), limit))
            for key, value in claimed:
                del self.queued[key]
                if self._queued_key.get(value[self.group_field]) == key:
                    del self._queued_key[value[self.group_field]]
            self.inflight.update(claimed)
            return claimed

    def settle(self, events: Sequence[tuple[str, dict[str, Any]]], *, written: bool) -> None:
        """The write of claimed ``events`` returned (or failed: they are queued again)."""
        with self.lock:
            for key, value in events:
                self.inflight.pop(key, None)
                if not written:
                    self.queued.setdefault(key, value)
            if not self.inflight:
                self._settled.notify_all()

    def wait_settled(self, timeout: float | None = None) -> bool:
        """Wait until no write of this buffer is in flight; False if ``timeout`` passed first."""
        with self.lock:
            return self._settled.wait_for(lambda: not self.inflight, timeout)

    def drop(self, record_id: str) -> None:
        """Forget the unwritten accesses of a deleted record."""
        with self.lock:
            self._queued_key.pop(record_id, None)
            for events in (self.queued, self.inflight):
                for key in [k for k, v in events.items() if v[self.group_field] == record_id]:
                    del events[key]


_BUFFERS: weakref.WeakKeyDictionary[BaseStore, dict[Namespace, AccessBuffer]] = (
    weakref.WeakKeyDictionary()
)
_BUFFERS_LOCK = threading.Lock()
_SETTLE_SECONDS = 30.0
"""How long a flush before closing waits for a background write already in flight."""


def _buffer_for(store: BaseStore, namespace: Namespace, group_field: str) -> AccessBuffer:
    with _BUFFERS_LOCK:
        by_namespace = _BUFFERS.setdefault(store, {})
        if namespace not in by_namespace:
            by_namespace[namespace] = AccessBuffer(namespace, group_field)
        return by_namespace[namespace]


def _flush_ops(buffer: AccessBuffer) -> Plan[int]:
    """Write what is queued now, in batches of ``_FLUSH_CHUNK`` (other writes fit in between)."""
    written, todo = 0, len(buffer.queued)
    while written < todo:
        claimed = buffer.claim(min(_FLUSH_CHUNK, todo - written))
        if not claimed:
            break
        try:
            yield StoreOps(tuple(PutOp(buffer.namespace, k, v, index=False) for k, v in claimed))
        except BaseException:
            buffer.settle(claimed, written=False)
            raise
        buffer.settle(claimed, written=True)
        written += len(claimed)
    return written


def _buffers_of(store: BaseStore | None) -> list[tuple[BaseStore, AccessBuffer]]:
    with _BUFFERS_LOCK:
        stores = list(_BUFFERS.items()) if store is None else [(store, _BUFFERS.get(store, {}))]
    return [(s, b) for s, by_namespace in stores for b in by_namespace.values()]


def _flush_all_plan(buffers: list[AccessBuffer]) -> Plan[int]:
    written = 0
    for buffer in buffers:
        written += yield from _flush_ops(buffer)
    return written


def flush_access_buffers(store: BaseStore) -> int:
    """Write every buffered access event of ``store`` (all scopes); returns how many.

    Call it before closing a store (``TieredMemory.close`` does), so nothing buffered is lost.
    """
    store = thread_safe(store)  # the tiers hold an unsafe store through its wrapper
    buffers = [b for _, b in _buffers_of(store)]
    written = run_plan(store, _flush_all_plan(buffers))
    # A timer thread may be writing events it claimed before this flush: wait for
    # it, then write what a failed attempt put back (so close() loses nothing).
    for buffer in buffers:
        buffer.wait_settled(_SETTLE_SECONDS)
    return written + run_plan(store, _flush_all_plan(buffers))


async def aflush_access_buffers(store: BaseStore) -> int:
    """Async twin of :func:`flush_access_buffers`."""
    store = thread_safe(store)
    buffers = [b for _, b in _buffers_of(store)]
    written = await arun_plan(store, _flush_all_plan(buffers))
    for buffer in buffers:
        await asyncio.to_thread(buffer.wait_settled, _SETTLE_SECONDS)
    return written + await arun_plan(store, _flush_all_plan(buffers))


def drop_access_buffers(store: BaseStore, prefix: Namespace) -> int:
    """Forget every unwritten access under ``prefix`` (a user being forgotten); returns how many.

    Waits for a background write already in flight, so that nothing buffered is
    written after this returns (the caller deletes what was written before).
    """
    store = thread_safe(store)
    dropped = 0
    for _, buffer in _buffers_of(store):
        if buffer.namespace[: len(prefix)] != prefix:
            continue
        with buffer.lock:
            dropped += len(buffer.queued)
            buffer.queued.clear()
            buffer._queued_key.clear()
        buffer.wait_settled(_SETTLE_SECONDS)
    return dropped


@atexit.register
def _flush_at_exit() -> None:
    """Write what is still buffered when the interpreter exits (closed stores are reported)."""
    failed = 0
    for store, buffer in _buffers_of(None):
        if not buffer.queued:
            continue
        try:
            run_plan(store, _flush_ops(buffer))
        except Exception:
            failed += 1
    if failed:
        logger.warning(
            "%d access buffer(s) could not be written at exit (their stores were closed "
            "first): call flush_access() of the tiers (or TieredMemory.close()) before "
            "closing a store",
            failed,
        )


class RecordAccess(Generic[R]):
    """Records and reads the access statistics of one scope's records of one kind.

    The records are pydantic models with ``access_count`` and ``last_accessed``
    fields and an id field named :attr:`group_field`; reads return copies with
    the statistics filled in. A subclass names its tier, id field and flush
    method (:class:`~.episodic_access.EpisodeAccess`,
    :class:`~.semantic_access.FactAccess`).

    Args:
        store: The records' store.
        scope: Whose records.
        clock: Returns "now".
        flush_size: Buffered records that make a retrieval write the buffer itself.
        flush_seconds: Delay of the background write after the first buffered
            access (``None``: no timer thread; writes happen at ``flush_size``, on
            :meth:`flush_plan` and at exit).
        compact_after: A record with more events than this is compacted when
            read (``None``: only :meth:`compact_plan` compacts).
    """

    tier: ClassVar[str]
    """The first namespace label of the access log (``"episodic"``, ``"semantic"``)."""
    group_field: ClassVar[str]
    """The record's id field, which also names the record in each access event."""
    flush_hint: ClassVar[str] = "flush_access()"
    """How the warning of a failed background write names the flush method."""

    def __init__(
        self,
        store: BaseStore,
        scope: MemoryScope,
        clock: Clock,
        *,
        flush_size: int = 256,
        flush_seconds: float | None = 1.0,
        compact_after: int | None = 32,
    ) -> None:
        self.store = thread_safe(store)  # written from a timer thread
        self.clock = clock
        self.log = access_log(scope, self.tier, self.group_field)
        self.buffer = _buffer_for(self.store, self.log.events_namespace, self.group_field)
        self.flush_size = flush_size
        self.flush_seconds = flush_seconds
        self.compact_after = compact_after

    def record_id(self, record: R) -> str:
        """The id of ``record`` (its group in the log)."""
        return str(getattr(record, self.group_field))

    # ------------------------------------------------------------------ reading

    def fill_plan(self, records: Sequence[R]) -> Plan[list[R]]:
        """``records`` with their exact ``access_count`` and ``last_accessed``."""
        if not records:
            return []
        ids = [self.record_id(r) for r in records]
        # The buffer before the store: an event written in between is then seen twice
        # (and counted once, by id), never missed.
        unwritten = [
            event
            for key, value in self.buffer.snapshot(set(ids))
            if (event := self.log.kind.raw_event(key, value)) is not None
        ]
        groups = ids if len(ids) <= _GROUP_READ_LIMIT else None
        read: LogRead[AccessTally] = yield from self.log.read_plan(groups, unwritten)
        out = []
        for record, record_id in zip(records, ids, strict=True):
            tally = read.view(record_id).tally
            last = None if tally.last is None else from_epoch(tally.last)
            out.append(
                record.model_copy(update={"access_count": tally.count, "last_accessed": last})
            )
        yield from self.log.auto_compact_plan(read, ids, self.compact_after)
        return out

    # ------------------------------------------------------------------ recording

    def touch(self, records: Sequence[R]) -> bool:
        """Record one access of each record, in memory only.

        Returns:
            Whether the buffer is full: the caller should write it
            (:meth:`flush_plan`) instead of waiting for the timer.
        """
        if not records:
            return False
        ids = list(dict.fromkeys(self.record_id(r) for r in records))
        full = self.buffer.add(ids, to_epoch(ensure_aware(self.clock()))) >= self.flush_size
        if not full:
            self._schedule()
        return full

    def touch_plan(self, records: Sequence[R], *, with_counts: bool) -> Plan[list[R]]:
        """Record one access of each record (see :meth:`touch`); no store I/O unless asked.

        With ``with_counts`` the records come back with their exact counts,
        this access included (one store read); otherwise as given.
        """
        counted = list(records)
        if with_counts:
            counted = yield from self.fill_plan(records)
            now = ensure_aware(self.clock())
            counted = [
                r.model_copy(
                    update={
                        "access_count": getattr(r, "access_count", 0) + 1,
                        "last_accessed": max(getattr(r, "last_accessed", None) or now, now),
                    }
                )
                for r in counted
            ]
        if self.touch(records):
            yield from _flush_ops(self.buffer)
        return counted

    def flush_plan(self) -> Plan[int]:
        """Write every buffered access event now; returns how many were written."""
        return (yield from _flush_ops(self.buffer))

    def _schedule(self) -> None:
        if self.flush_seconds is None:
            return
        with self.buffer.lock:
            if self.buffer.timer is not None:
                return
            timer = threading.Timer(self.flush_seconds, self._background_flush)
            timer.daemon = True
            self.buffer.timer = timer
        timer.start()

    def _background_flush(self) -> None:
        with self.buffer.lock:
            self.buffer.timer = None
        try:
            run_plan(self.store, _flush_ops(self.buffer))
        except Exception as exc:
            logger.warning(
                "writing %d buffered access event(s) failed; they stay buffered for "
                "the next flush (%s): %r",
                len(self.buffer.queued),
                self.flush_hint,
                exc,
            )

    # ------------------------------------------------------------------ maintenance

    def compact_plan(self) -> Plan[CompactionResult]:
        """Write the buffer, then fold every record's access events into segments."""
        yield from _flush_ops(self.buffer)
        read = yield from self.log.read_plan(None)
        return (yield from self.log.compact_plan(read))

    def delete_plan(self, record_id: str) -> Plan[None]:
        """Forget the access statistics of a deleted record."""
        self.buffer.drop(record_id)
        yield from self.log.delete_groups_plan([record_id])
