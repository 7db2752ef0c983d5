"""How often each record (an episode, a fact) was retrieved: counted in process, saved later.

A retrieval does no store I/O: :meth:`RecordAccess.touch` adds to a counter in this
process (:class:`AccessCounts`, one per store). Reads of ``access_count`` /
``last_accessed`` add the unsaved counts to the saved ones. :func:`save_access` saves
them when ``TieredMemory`` closes, after a consolidation, before ``stats()`` and on
``flush_access()``; a crash loses the unsaved counts (a usage signal, never a memory).
Saved counts are one item per record under ``(..., <tier>, "access")``, written only
for records that still exist. :meth:`AccessCounts.erasing` drops a user's unsaved
counts and holds off every save while the user's records are deleted.

Example:
    >>> from langgraph.store.memory import InMemoryStore
    >>> from langchain_tiered_memory.testing.fakes import FakeClock
    >>> from langchain_tiered_memory.tiers.common.records import run_plan
    >>> from langchain_tiered_memory.tiers.common.scope import MemoryScope
    >>> store = InMemoryStore()
    >>> store.put(("facts",), "f1", {"fact_id": "f1"})
    >>> access = RecordAccess(store, MemoryScope("bob"), FakeClock(),
    ...                       tier="semantic", id_field="fact_id", records=("facts",))
    >>> access.touch(["f1"]); access.touch(["f1"])  # in memory only
    >>> run_plan(store, access.counts_plan(["f1"]))["f1"][0]
    2
    >>> save_access(store)  # one item: the count of f1
    1
    >>> run_plan(store, access.counts_plan(["f1"]))["f1"][0]
    2
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from langgraph.store.base import BaseStore, GetOp, PutOp

from langchain_tiered_memory.stores.serialized import thread_safe, unwrap
from langchain_tiered_memory.tiers.common.args import Clock
from langchain_tiered_memory.tiers.common.records import (
    Plan,
    StoreOps,
    arun_plan,
    from_epoch,
    run_plan,
    search_all,
    to_epoch,
)
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.tiers.common.slot_lock import SlotLock
from langchain_tiered_memory.types import Namespace, ensure_aware

__all__ = [
    "AccessCounts",
    "CountsAccess",
    "RecordAccess",
    "access_counts",
    "asave_access",
    "save_access",
]

_CHUNK = 128
"""Records per store batch of a save or a read of saved counts."""
_READ_ONE_BY_ONE = 64
"""Above this many records, one listing of the saved counts beats one get per record."""

Count = tuple[int, float | None]
"""``(accesses, latest access in epoch seconds or None)``."""


def _merge(a: Count, b: Count) -> Count:
    last = a[1] if b[1] is None else b[1] if a[1] is None else max(a[1], b[1])
    return a[0] + b[0], last


@dataclass
class _Unsaved:
    """Counts of one access namespace not saved yet, and where their records live."""

    records: Namespace
    id_field: str
    counts: dict[str, Count] = field(default_factory=dict)


class AccessCounts:
    """The retrievals of one store's records counted in this process and not saved yet.

    Get the one of a store with :func:`access_counts`.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards _unsaved (held briefly, never during I/O)
        self.saving = SlotLock()
        """Held by a save and by a user's erasure (threads and asyncio tasks alike)."""
        self._unsaved: dict[Namespace, _Unsaved] = {}

    def add(
        self, namespace: Namespace, records: Namespace, id_field: str, ids: Sequence[str], ts: float
    ) -> None:
        """Count one access of each record in ``ids`` at ``ts``."""
        self.give_back({namespace: _Unsaved(records, id_field, dict.fromkeys(ids, (1, ts)))})

    def peek(self, namespace: Namespace, ids: Sequence[str]) -> dict[str, Count]:
        """The unsaved counts of ``ids`` (those with one)."""
        with self._lock:
            counts = self._unsaved[namespace].counts if namespace in self._unsaved else {}
            return {i: counts[i] for i in ids if i in counts}

    def discard(self, namespace: Namespace, ids: Sequence[str]) -> None:
        """Forget the unsaved counts of deleted records."""
        with self._lock:
            unsaved = self._unsaved.get(namespace)
            for record_id in ids if unsaved is not None else ():
                unsaved.counts.pop(record_id, None)  # type: ignore[union-attr]

    def take(self, prefix: Namespace = ()) -> dict[Namespace, _Unsaved]:
        """Remove and return the unsaved counts under ``prefix`` (all: ``()``)."""
        with self._lock:
            matching = [ns for ns in self._unsaved if ns[: len(prefix)] == prefix]
            return {ns: self._unsaved.pop(ns) for ns in matching}

    def give_back(self, taken: dict[Namespace, _Unsaved]) -> None:
        """Add ``taken`` to the unsaved counts (what a failed save did not write, new accesses)."""
        with self._lock:
            for namespace, back in taken.items():
                unsaved = self._unsaved.setdefault(namespace, _Unsaved(back.records, back.id_field))
                for record_id, count in back.counts.items():
                    unsaved.counts[record_id] = _merge(
                        unsaved.counts.get(record_id, (0, None)), count
                    )

    @contextmanager
    def erasing(self, prefix: Namespace) -> Iterator[int]:
        """Drop the unsaved counts under ``prefix``; no save runs until the block ends.

        Yields:
            How many records' unsaved counts were dropped.
        """
        with self.saving:
            yield sum(len(u.counts) for u in self.take(prefix).values())

    @asynccontextmanager
    async def aerasing(self, prefix: Namespace) -> AsyncIterator[int]:
        """Async twin of :meth:`erasing`."""
        async with self.saving:
            yield sum(len(u.counts) for u in self.take(prefix).values())


_COUNTS: weakref.WeakKeyDictionary[BaseStore, AccessCounts] = weakref.WeakKeyDictionary()
_COUNTS_LOCK = threading.Lock()


def access_counts(store: BaseStore) -> AccessCounts:
    """The unsaved access counts of ``store`` (a thread-safe wrapper shares its store's)."""
    with _COUNTS_LOCK:
        return _COUNTS.setdefault(unwrap(store), AccessCounts())


def _save_plan(taken: dict[Namespace, _Unsaved]) -> Plan[int]:
    """Add ``taken`` to the saved counts of records that still exist; returns items written.

    What was written is removed from ``taken`` as it goes (for :meth:`AccessCounts.give_back`).
    """
    saved = 0
    for namespace, unsaved in taken.items():
        ids = list(unsaved.counts)
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start : start + _CHUNK]
            gets = [GetOp(unsaved.records, i) for i in chunk] + [GetOp(namespace, i) for i in chunk]
            found = yield StoreOps(tuple(gets))
            puts = []
            for record_id, record, item in zip(
                chunk, found[: len(chunk)], found[len(chunk) :], strict=True
            ):
                if record is None:
                    continue  # deleted meanwhile: its counts go with it
                count = _merge(unsaved.counts[record_id], _stored(item.value if item else None))
                value = {unsaved.id_field: record_id, "count": count[0], "last": count[1]}
                puts.append(PutOp(namespace, record_id, value, index=False))
            if puts:
                yield StoreOps(tuple(puts))
            for record_id in chunk:
                del unsaved.counts[record_id]
            saved += len(puts)
    return saved


def _stored(value: dict[str, Any] | None) -> Count:
    if not value:
        return 0, None
    last = value.get("last")
    return int(value.get("count", 0)), None if last is None else float(last)


def save_access(store: BaseStore, prefix: Namespace = ()) -> int:
    """Save the access counts of ``store`` (under ``prefix``) counted in this process.

    ``TieredMemory.close`` calls it, so nothing counted is lost at a clean exit.

    Returns:
        How many records' saved counts were written.
    """
    counts = access_counts(store)
    with counts.saving:
        taken = counts.take(prefix)
        try:
            return run_plan(thread_safe(store), _save_plan(taken))
        finally:
            counts.give_back(taken)  # what a failure left unwritten (nothing, on success)


async def asave_access(store: BaseStore, prefix: Namespace = ()) -> int:
    """Async twin of :func:`save_access`."""
    counts = access_counts(store)
    async with counts.saving:
        taken = counts.take(prefix)
        try:
            return await arun_plan(thread_safe(store), _save_plan(taken))
        finally:
            counts.give_back(taken)


class RecordAccess:
    """Counts and reads the retrievals of one scope's records of one tier.

    Args:
        store: The records' store.
        scope: Whose records.
        clock: Returns "now".
        tier: The first namespace label of the counts (``"episodic"``, ``"semantic"``).
        id_field: The records' id field (also their key in ``records``).
        records: The namespace of the records (a save checks they still exist).
    """

    def __init__(
        self,
        store: BaseStore,
        scope: MemoryScope,
        clock: Clock,
        *,
        tier: str,
        id_field: str,
        records: Namespace,
    ) -> None:
        self.store = store
        self.clock = clock
        self.id_field = id_field
        self.records = records
        self.namespace = scope.namespace(tier, "access")
        self.counts = access_counts(store)

    def touch(self, ids: Sequence[str]) -> None:
        """Count one access of each record in ``ids``, in memory only."""
        if ids:
            now = to_epoch(ensure_aware(self.clock()))
            self.counts.add(self.namespace, self.records, self.id_field, ids, now)

    def counts_plan(self, ids: Sequence[str]) -> Plan[dict[str, Count]]:
        """Saved plus unsaved counts of ``ids`` (records never retrieved are left out)."""
        if not ids:
            return {}
        if len(ids) <= _READ_ONE_BY_ONE:
            items = yield StoreOps(tuple(GetOp(self.namespace, i) for i in ids))
        else:
            items = yield from search_all(self.namespace, [None])
        wanted = set(ids)
        out = {i.key: _stored(i.value) for i in items if i is not None and i.key in wanted}
        # The store before the buffer: a save in between is missed for this read, never
        # counted twice.
        for record_id, count in self.counts.peek(self.namespace, ids).items():
            out[record_id] = _merge(out.get(record_id, (0, None)), count)
        return out

    def with_counts(self, records: Sequence[Any], counts: dict[str, Count]) -> list[Any]:
        """Copies of ``records`` (pydantic models) with ``access_count`` and ``last_accessed``."""
        out = []
        for record in records:
            n, last = counts.get(str(getattr(record, self.id_field)), (0, None))
            when: datetime | None = None if last is None else from_epoch(last)
            out.append(record.model_copy(update={"access_count": n, "last_accessed": when}))
        return out

    def delete_plan(self, record_id: str) -> Plan[None]:
        """Forget the counts of a deleted record."""
        self.counts.discard(self.namespace, [record_id])
        yield StoreOps((PutOp(self.namespace, record_id, None),))


class CountsAccess:
    """A tier whose records count their retrievals in ``access`` (episodes, facts)."""

    store: BaseStore
    access: RecordAccess

    def flush_access(self) -> int:
        """Save the access counts of this scope's records counted in this process.

        Reads in this process already count them; ``TieredMemory.close`` saves
        every count. Returns how many records' counts were written.
        """
        return save_access(self.store, self.access.namespace)

    async def aflush_access(self) -> int:
        """Async twin of :meth:`flush_access`."""
        return await asave_access(self.store, self.access.namespace)
