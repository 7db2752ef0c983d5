"""Soft deletion with an audit trail, restore, and hard purge after a grace period.

Forgetting never destroys a memory at once: :meth:`MemoryTrash.soft_delete`
moves the item into the scope's trash namespace and writes an audit record
(what, when, why, and a hash of the content, not the content). After the
policy's grace period :meth:`MemoryTrash.purge_expired` deletes trashed items
for good (audited too). Works on any LangGraph ``BaseStore``; each move is one
``batch`` call (copy to trash, audit, delete original), and replaying it after
a crash is harmless. Sync and async methods run the same plans
(:mod:`~langchain_tiered_memory.tiers.common.records`).

Examples:
    >>> from langgraph.store.memory import InMemoryStore
    >>> from langchain_tiered_memory.tiers.common.scope import MemoryScope
    >>> store, scope = InMemoryStore(), MemoryScope("alice")
    >>> store.put(scope.namespace("episodic"), "e1", {"text": "old"})
    >>> trash = MemoryTrash(store, scope)
    >>> trash.soft_delete(scope.namespace("episodic"), "e1", reason="too old")
    True
    >>> store.get(scope.namespace("episodic"), "e1") is None, len(trash.list_trashed())
    (True, 1)
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from langgraph.store.base import BaseStore, GetOp, Op, PutOp, SearchItem

from langchain_tiered_memory.tiers.common.records import (
    Plan,
    StoreOps,
    arun_plan,
    run_plan,
    search_all,
)
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.types import Namespace, ensure_aware, utcnow

__all__ = ["AUDIT_LABEL", "TRASH_LABEL", "AuditRecord", "MemoryTrash"]

TRASH_LABEL = "_trash"
AUDIT_LABEL = "_audit"


@dataclass(frozen=True)
class AuditRecord:
    """One audited action on a memory (content itself is never kept here)."""

    action: str
    namespace: Namespace
    key: str
    reason: str
    at: datetime
    content_sha256: str


def _trash_key(namespace: Namespace, key: str) -> str:
    return uuid.uuid5(uuid.NAMESPACE_URL, json.dumps([list(namespace), key])).hex


class MemoryTrash:
    """Soft delete, restore and purge for one scope, with an audit trail.

    Args:
        store: Any LangGraph ``BaseStore``.
        scope: Whose memories these are.
        clock: Returns "now" (aware); injectable for tests.
    """

    def __init__(
        self, store: BaseStore, scope: MemoryScope, *, clock: Callable[[], datetime] = utcnow
    ) -> None:
        self.store = store
        self.scope = scope
        self.clock = clock

    @property
    def trash_namespace(self) -> Namespace:
        """Where trashed items live."""
        return self.scope.namespace(TRASH_LABEL)

    @property
    def audit_namespace(self) -> Namespace:
        """Where audit records live."""
        return self.scope.namespace(AUDIT_LABEL)

    # -- plans -----------------------------------------------------------------------

    def _audit_op(
        self, action: str, namespace: Namespace, key: str, reason: str, value: Any
    ) -> PutOp:
        now = self.clock()
        content = json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
        record = {
            "action": action,
            "namespace": list(namespace),
            "key": key,
            "reason": reason,
            "at": now.isoformat(),
            "at_ts": now.timestamp(),
            "content_sha256": hashlib.sha256(content.encode("utf-8")).hexdigest(),
        }
        return PutOp(self.audit_namespace, uuid.uuid4().hex, record, index=False)

    def _soft_delete_plan(self, namespace: Namespace, key: str, reason: str) -> Plan[bool]:
        (item,) = yield StoreOps((GetOp(namespace, key),))
        if item is None:
            return False
        namespace = tuple(item.namespace)
        now = self.clock()
        trashed = {
            "namespace": list(namespace),
            "key": item.key,
            "value": item.value,
            "reason": reason,
            "deleted_at": now.isoformat(),
            "deleted_ts": now.timestamp(),
        }
        moves = (
            PutOp(self.trash_namespace, _trash_key(namespace, item.key), trashed, index=False),
            self._audit_op("soft_delete", namespace, item.key, reason, item.value),
            PutOp(namespace, item.key, None),
        )
        yield StoreOps(moves)
        return True

    def _restore_plan(self, namespace: Namespace, key: str) -> Plan[bool]:
        (trashed,) = yield StoreOps((GetOp(self.trash_namespace, _trash_key(namespace, key)),))
        if trashed is None:
            return False
        v = trashed.value
        namespace = tuple(v["namespace"])
        moves = (
            PutOp(namespace, v["key"], v["value"]),
            self._audit_op("restore", namespace, v["key"], "restored", v["value"]),
            PutOp(self.trash_namespace, trashed.key, None),
        )
        yield StoreOps(moves)
        return True

    def _purge_plan(self, grace_period_days: float) -> Plan[int]:
        trashed = yield from search_all(self.trash_namespace, [None])
        cutoff = self.clock() - timedelta(days=grace_period_days)
        ops: list[Op] = []
        for item in trashed:
            v = item.value
            if ensure_aware(datetime.fromisoformat(v["deleted_at"])) <= cutoff:
                namespace = tuple(v["namespace"])
                ops += [
                    self._audit_op("purge", namespace, v["key"], v["reason"], v["value"]),
                    PutOp(self.trash_namespace, item.key, None),
                ]
        if ops:
            yield StoreOps(tuple(ops))
        return len(ops) // 2

    # -- sync and async ------------------------------------------------------------

    def soft_delete(self, namespace: Namespace, key: str, *, reason: str) -> bool:
        """Move an item to the trash; ``False`` if it does not exist."""
        return run_plan(self.store, self._soft_delete_plan(namespace, key, reason))

    async def asoft_delete(self, namespace: Namespace, key: str, *, reason: str) -> bool:
        """Async twin of :meth:`soft_delete`."""
        return await arun_plan(self.store, self._soft_delete_plan(namespace, key, reason))

    def restore(self, namespace: Namespace, key: str) -> bool:
        """Put a trashed item back where it was; ``False`` if it is not in the trash."""
        return run_plan(self.store, self._restore_plan(namespace, key))

    async def arestore(self, namespace: Namespace, key: str) -> bool:
        """Async twin of :meth:`restore`."""
        return await arun_plan(self.store, self._restore_plan(namespace, key))

    def list_trashed(self) -> list[SearchItem]:
        """Every trashed item of this scope."""
        return run_plan(self.store, search_all(self.trash_namespace, [None]))

    async def alist_trashed(self) -> list[SearchItem]:
        """Async twin of :meth:`list_trashed`."""
        return await arun_plan(self.store, search_all(self.trash_namespace, [None]))

    def purge_expired(self, grace_period_days: float) -> int:
        """Delete for good what has been in the trash longer than the grace period."""
        return run_plan(self.store, self._purge_plan(grace_period_days))

    async def apurge_expired(self, grace_period_days: float) -> int:
        """Async twin of :meth:`purge_expired`."""
        return await arun_plan(self.store, self._purge_plan(grace_period_days))

    def audit_log(self) -> list[AuditRecord]:
        """The audit trail of this scope, oldest first."""
        return _records(run_plan(self.store, search_all(self.audit_namespace, [None])))

    async def aaudit_log(self) -> list[AuditRecord]:
        """Async twin of :meth:`audit_log`."""
        return _records(await arun_plan(self.store, search_all(self.audit_namespace, [None])))


def _records(items: list[SearchItem]) -> list[AuditRecord]:
    records = (
        AuditRecord(
            action=v["action"],
            namespace=tuple(v["namespace"]),
            key=v["key"],
            reason=v["reason"],
            at=ensure_aware(datetime.fromisoformat(v["at"])),
            content_sha256=v["content_sha256"],
        )
        for v in (i.value for i in items)
    )
    return sorted(records, key=lambda r: r.at)
