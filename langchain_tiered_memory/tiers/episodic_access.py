"""How often each episode was retrieved, counted exactly and kept off the retrieval path.

Accesses are an append-only :class:`~.event_log.EventLog` grouped by episode:
no counter item is read, incremented and written back, so concurrent retrievals
never lose counts. Events are compacted into per-episode segments (when a read
sees more than ``compact_after`` of them, or on :meth:`EpisodeAccess.compact_plan`),
and ``access_count`` / ``last_accessed`` are read as segments plus newer events.

A retrieval does no store I/O for its accesses: it adds them to an in-process
buffer (shared by every :class:`EpisodeAccess` on the same store and scope),
where accesses of one episode coalesce into one pending event
``{"episode_id", "ts", "n"}``. The buffer is written as one batch
``flush_seconds`` after its first access (a timer thread), at once when it
holds ``flush_size`` episodes, on :meth:`EpisodeAccess.flush_plan`
(``EpisodicMemory.flush_access``), by :func:`flush_access_buffers` and at
interpreter exit. Reads in this process count buffered accesses too (each
event once), so they are exact at once; other processes see them once written.
A crash loses at most the buffered accesses (a usage signal, never an episode).

Namespaces: ``(..., "episodic", "access", "log")`` for the events,
``(..., "episodic", "access", "folded")`` and ``(..., "folded_events")`` for the
heads and bodies of their segments.

Example:
    >>> from langgraph.store.memory import InMemoryStore
    >>> from langchain_tiered_memory.tiers.episodic_models import Episode
    >>> from langchain_tiered_memory.tiers.records import run_plan
    >>> from langchain_tiered_memory.tiers.scope import MemoryScope
    >>> from langchain_tiered_memory.fakes import FakeClock
    >>> store, ep = InMemoryStore(), Episode(task_description="t", outcome="success")
    >>> access = EpisodeAccess(store, MemoryScope("alice"), FakeClock(), flush_seconds=None)
    >>> access.touch([ep]), access.touch([ep])  # in memory; True would mean "write now"
    (False, False)
    >>> [e.access_count for e in run_plan(store, access.fill_plan([ep]))]
    [2]
    >>> run_plan(store, access.flush_plan())  # one coalesced event
    1
    >>> [e.access_count for e in run_plan(store, access.fill_plan([ep]))]
    [2]
"""

from __future__ import annotations

import asyncio
import atexit
import itertools
import logging
import threading
import uuid
import weakref
from collections.abc import Sequence
from typing import Any

from langgraph.store.base import BaseStore, PutOp

from langchain_tiered_memory.stores.serialized import thread_safe
from langchain_tiered_memory.tiers.episodic_models import Episode
from langchain_tiered_memory.tiers.event_log import (
    CompactEvent,
    CompactionResult,
    EventKind,
    EventLog,
    LogRead,
)
from langchain_tiered_memory.tiers.records import (
    Plan,
    StoreOps,
    arun_plan,
    from_epoch,
    run_plan,
    to_epoch,
)
from langchain_tiered_memory.tiers.scope import MemoryScope
from langchain_tiered_memory.tiers.tier_args import Clock
from langchain_tiered_memory.types import Namespace, ensure_aware

__all__ = [
    "ACCESS_EVENTS",
    "AccessBuffer",
    "AccessTally",
    "EpisodeAccess",
    "access_log",
    "aflush_access_buffers",
    "flush_access_buffers",
]

logger = logging.getLogger(__name__)

_GROUP_READ_LIMIT = 64
"""Above this many episodes, one read of every access event beats one read per episode."""
_FLUSH_CHUNK = 64
"""Access events per write batch of a flush."""


class AccessTally:
    """Accesses of one episode: how many, and the latest (epoch seconds)."""

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


ACCESS_EVENTS: EventKind[AccessTally] = EventKind(
    "episode_id", _access_compact, AccessTally, AccessTally.from_json
)
"""Episode accesses as an event log: grouped by episode id."""


def access_log(scope: MemoryScope) -> EventLog[AccessTally]:
    """The access log of a scope (see the module docstring for its namespaces)."""
    return EventLog(
        ACCESS_EVENTS,
        scope.namespace("episodic", "access", "log"),
        scope.namespace("episodic", "access", "folded"),
        scope.namespace("episodic", "access", "folded_events"),
    )


class AccessBuffer:
    """Accesses of one store and scope recorded in this process and not yet written.

    ``queued`` events (one per episode, coalesced) wait for a flush; ``inflight``
    ones are being written. Both count for reads until the write has returned.
    """

    def __init__(self, namespace: Namespace) -> None:
        self.namespace = namespace
        self.lock = threading.Lock()
        self.queued: dict[str, dict[str, Any]] = {}
        self.inflight: dict[str, dict[str, Any]] = {}
        self._queued_key: dict[str, str] = {}  # episode id -> key of its queued event
        self.timer: threading.Timer | None = None
        self._settled = threading.Condition(self.lock)

    def add(self, episode_ids: Sequence[str], ts: float) -> int:
        """Queue one access of each episode at ``ts``; returns how many events are queued."""
        with self.lock:
            for episode_id in episode_ids:
                key = self._queued_key.get(episode_id)
                if key is None:
                    key = self._queued_key[episode_id] = uuid.uuid4().hex
                    self.queued[key] = {"episode_id": episode_id, "ts": ts, "n": 1}
                else:
                    event = self.queued[key]
                    event["n"] += 1
                    event["ts"] = max(event["ts"], ts)
            return len(self.queued)

    def snapshot(self, episode_ids: set[str] | None) -> list[tuple[str, dict[str, Any]]]:
        """Copies of every unwritten event (of ``episode_ids``, if given)."""
        with self.lock:
            events = [(k, dict(v)) for k, v in [*self.inflight.items(), *self.queued.items()]]
        if episode_ids is None:
            return events
        return [(k, v) for k, v in events if v["episode_id"] in episode_ids]

    def claim(self, limit: int) -> list[tuple[str, dict[str, Any]]]:
        """Take up to ``limit`` queued events (the oldest) for writing."""
        with self.lock:
            claimed = list(itertools.islice(self.queued.items(), limit))
            for key, value in claimed:
                del self.queued[key]
                if self._queued_key.get(value["episode_id"]) == key:
                    del self._queued_key[value["episode_id"]]
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

    def drop(self, episode_id: str) -> None:
        """Forget the unwritten accesses of a deleted episode."""
        with self.lock:
            self._queued_key.pop(episode_id, None)
            for events in (self.queued, self.inflight):
                for key in [k for k, v in events.items() if v["episode_id"] == episode_id]:
                    del events[key]


_BUFFERS: weakref.WeakKeyDictionary[BaseStore, dict[Namespace, AccessBuffer]] = (
    weakref.WeakKeyDictionary()
)
_BUFFERS_LOCK = threading.Lock()
_SETTLE_SECONDS = 30.0
"""How long a flush before closing waits for a background write already in flight."""


def _buffer_for(store: BaseStore, namespace: Namespace) -> AccessBuffer:
    with _BUFFERS_LOCK:
        by_namespace = _BUFFERS.setdefault(store, {})
        if namespace not in by_namespace:
            by_namespace[namespace] = AccessBuffer(namespace)
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
            "%d episode access buffer(s) could not be written at exit (their stores were "
            "closed first): call EpisodicMemory.flush_access() before closing a store",
            failed,
        )


class EpisodeAccess:
    """Records and reads the access statistics of one scope's episodes.

    Args:
        store: The episodes' store.
        scope: Whose episodes.
        clock: Returns "now".
        flush_size: Buffered episodes that make a retrieval write the buffer itself.
        flush_seconds: Delay of the background write after the first buffered
            access (``None``: no timer thread; writes happen at ``flush_size``, on
            :meth:`flush_plan` and at exit).
        compact_after: An episode with more events than this is compacted when
            read (``None``: only :meth:`compact_plan` compacts).
    """

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
        self.log = access_log(scope)
        self.buffer = _buffer_for(self.store, self.log.events_namespace)
        self.flush_size = flush_size
        self.flush_seconds = flush_seconds
        self.compact_after = compact_after

    # ------------------------------------------------------------------ reading

    def fill_plan(self, episodes: Sequence[Episode]) -> Plan[list[Episode]]:
        """``episodes`` with their exact ``access_count`` and ``last_accessed``."""
        if not episodes:
            return []
        ids = [e.episode_id for e in episodes]
        # The buffer before the store: an event written in between is then seen twice
        # (and counted once, by id), never missed.
        unwritten = [
            event
            for key, value in self.buffer.snapshot(set(ids))
            if (event := ACCESS_EVENTS.raw_event(key, value)) is not None
        ]
        groups = ids if len(ids) <= _GROUP_READ_LIMIT else None
        read: LogRead[AccessTally] = yield from self.log.read_plan(groups, unwritten)
        out = []
        for episode in episodes:
            tally = read.view(episode.episode_id).tally
            last = None if tally.last is None else from_epoch(tally.last)
            out.append(
                episode.model_copy(update={"access_count": tally.count, "last_accessed": last})
            )
        yield from self.log.auto_compact_plan(read, ids, self.compact_after)
        return out

    # ------------------------------------------------------------------ recording

    def touch(self, episodes: Sequence[Episode]) -> bool:
        """Record one access of each episode, in memory only.

        Returns:
            Whether the buffer is full: the caller should write it
            (:meth:`flush_plan`) instead of waiting for the timer.
        """
        if not episodes:
            return False
        ids = list(dict.fromkeys(e.episode_id for e in episodes))
        full = self.buffer.add(ids, to_epoch(ensure_aware(self.clock()))) >= self.flush_size
        if not full:
            self._schedule()
        return full

    def touch_plan(self, episodes: Sequence[Episode], *, with_counts: bool) -> Plan[list[Episode]]:
        """Record one access of each episode (see :meth:`touch`); no store I/O unless asked.

        With ``with_counts`` the episodes come back with their exact counts,
        this access included (one store read); otherwise as given.
        """
        counted = list(episodes)
        if with_counts:
            counted = yield from self.fill_plan(episodes)
            now = ensure_aware(self.clock())
            counted = [
                e.model_copy(
                    update={
                        "access_count": e.access_count + 1,
                        "last_accessed": max(e.last_accessed or now, now),
                    }
                )
                for e in counted
            ]
        if self.touch(episodes):
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
                "writing %d buffered episode access event(s) failed; they stay buffered for "
                "the next flush (EpisodicMemory.flush_access): %r",
                len(self.buffer.queued),
                exc,
            )

    # ------------------------------------------------------------------ maintenance

    def compact_plan(self) -> Plan[CompactionResult]:
        """Write the buffer, then fold every episode's access events into segments."""
        yield from _flush_ops(self.buffer)
        read = yield from self.log.read_plan(None)
        return (yield from self.log.compact_plan(read))

    def delete_plan(self, episode_id: str) -> Plan[None]:
        """Forget the access statistics of a deleted episode."""
        self.buffer.drop(episode_id)
        yield from self.log.delete_groups_plan([episode_id])
