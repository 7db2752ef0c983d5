"""Soft deletion with an audit trail, restore, and hard purge after a grace period.

Forgetting never destroys a memory at once: :meth:`MemoryTrash.soft_delete`
moves the item into the scope's trash namespace and writes an audit record
(what, when, why, and a hash of the content, not the content). After the
policy's grace period :meth:`MemoryTrash.purge_expired` deletes trashed items
for good (audited too). Works on any LangGraph ``BaseStore``; each move is one
``batch`` call (copy to trash, audit, delete original), and replaying it after
a crash is harmless.

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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from langgraph.store.base import BaseStore, Item, Op, PutOp

from langchain_tiered_memory.erasure_fence import awriting, call_started, put_namespaces, writing
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.types import Namespace, ensure_aware, utcnow

__all__ = ["AUDIT_LABEL", "TRASH_LABEL", "AuditRecord", "MemoryTrash"]

TRASH_LABEL = "_trash"
AUDIT_LABEL = "_audit"
_PAGE = 500


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


def _content_hash(value: Any) -> str:
    raw = json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


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

    # -- pure planning ---------------------------------------------------------------

    def _audit_op(
        self, action: str, namespace: Namespace, key: str, reason: str, value: Any
    ) -> PutOp:
        now = self.clock()
        record = {
            "action": action,
            "namespace": list(namespace),
            "key": key,
            "reason": reason,
            "at": now.isoformat(),
            "at_ts": now.timestamp(),
            "content_sha256": _content_hash(value),
        }
        return PutOp(self.audit_namespace, uuid.uuid4().hex, record, index=False)

    def _soft_delete_ops(self, item: Item | None, reason: str) -> list[Op]:
        if item is None:
            return []
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
        return [
            PutOp(self.trash_namespace, _trash_key(namespace, item.key), trashed, index=False),
            self._audit_op("soft_delete", namespace, item.key, reason, item.value),
            PutOp(namespace, item.key, None),
        ]

    def _restore_ops(self, trashed: Item | None) -> list[Op]:
        if trashed is None:
            return []
        v = trashed.value
        namespace = tuple(v["namespace"])
        return [
            PutOp(namespace, v["key"], v["value"]),
            self._audit_op("restore", namespace, v["key"], "restored", v["value"]),
            PutOp(self.trash_namespace, trashed.key, None),
        ]

    def _purge_ops(self, trashed: list[Any], grace: timedelta) -> list[Op]:
        cutoff = self.clock() - grace
        ops: list[Op] = []
        for item in trashed:
            v = item.value
            if ensure_aware(datetime.fromisoformat(v["deleted_at"])) <= cutoff:
                ops.append(
                    self._audit_op(
                        "purge", tuple(v["namespace"]), v["key"], v["reason"], v["value"]
                    )
                )
                ops.append(PutOp(self.trash_namespace, item.key, None))
        return ops

    # -- sync ------------------------------------------------------------------------

    def soft_delete(self, namespace: Namespace, key: str, *, reason: str) -> bool:
        """Move an item to the trash; ``False`` if it does not exist."""
        with call_started():  # what it read may be erased before it writes
            ops = self._soft_delete_ops(self.store.get(namespace, key), reason)
            if ops:
                with writing(self.store, put_namespaces(ops)):
                    self.store.batch(ops)
            return bool(ops)

    def restore(self, namespace: Namespace, key: str) -> bool:
        """Put a trashed item back where it was; ``False`` if it is not in the trash."""
        with call_started():  # what it read may be erased before it writes
            trashed = self.store.get(self.trash_namespace, _trash_key(namespace, key))
            ops = self._restore_ops(trashed)
            if ops:
                with writing(self.store, put_namespaces(ops)):
                    self.store.batch(ops)
            return bool(ops)

    def list_trashed(self) -> list[Item]:
        """Every trashed item of this scope."""
        return _collect(
            lambda offset: self.store.search(self.trash_namespace, limit=_PAGE, offset=offset)
        )

    def purge_expired(self, grace_period_days: float) -> int:
        """Delete for good what has been in the trash longer than the grace period."""
        with call_started():  # what it read may be erased before it writes
            ops = self._purge_ops(self.list_trashed(), timedelta(days=grace_period_days))
            if ops:
                with writing(self.store, put_namespaces(ops)):
                    self.store.batch(ops)
            return len(ops) // 2

    def audit_log(self) -> list[AuditRecord]:
        """The audit trail of this scope, oldest first."""
        items = _collect(
            lambda offset: self.store.search(self.audit_namespace, limit=_PAGE, offset=offset)
        )
        return _records(items)

    # -- async -----------------------------------------------------------------------

    async def asoft_delete(self, namespace: Namespace, key: str, *, reason: str) -> bool:
        """Async twin of :meth:`soft_delete`."""
        with call_started():  # what it read may be erased before it writes
            ops = self._soft_delete_ops(await self.store.aget(namespace, key), reason)
            if ops:
                async with awriting(self.store, put_namespaces(ops)):
                    await self.store.abatch(ops)
            return bool(ops)

    async def arestore(self, namespace: Namespace, key: str) -> bool:
        """Async twin of :meth:`restore`."""
        with call_started():  # what it read may be erased before it writes
            trashed = await self.store.aget(self.trash_namespace, _trash_key(namespace, key))
            ops = self._restore_ops(trashed)
            if ops:
                async with awriting(self.store, put_namespaces(ops)):
                    await self.store.abatch(ops)
            return bool(ops)

    async def alist_trashed(self) -> list[Item]:
        """Async twin of :meth:`list_trashed`."""
        return await _acollect(
            lambda offset: self.store.asearch(self.trash_namespace, limit=_PAGE, offset=offset)
        )

    async def aaudit_log(self) -> list[AuditRecord]:
        """Async twin of :meth:`audit_log`."""
        items = await _acollect(
            lambda offset: self.store.asearch(self.audit_namespace, limit=_PAGE, offset=offset)
        )
        return _records(items)

    async def apurge_expired(self, grace_period_days: float) -> int:
        """Async twin of :meth:`purge_expired`."""
        with call_started():  # what it read may be erased before it writes
            ops = self._purge_ops(await self.alist_trashed(), timedelta(days=grace_period_days))
            if ops:
                async with awriting(self.store, put_namespaces(ops)):
                    await self.store.abatch(ops)
            return len(ops) // 2


def _collect(fetch: Callable[[int], list[Any]]) -> list[Any]:
    out: list[Any] = []
    while True:
        page = fetch(len(out))
        out.extend(page)
        if len(page) < _PAGE:
            return out


async def _acollect(fetch: Callable[[int], Awaitable[list[Any]]]) -> list[Any]:
    """Async twin of :func:`_collect`."""
    out: list[Any] = []
    while True:
        page = await fetch(len(out))
        out.extend(page)
        if len(page) < _PAGE:
            return out


def _records(items: list[Any]) -> list[AuditRecord]:
    records = [
        AuditRecord(
            action=v["action"],
            namespace=tuple(v["namespace"]),
            key=v["key"],
            reason=v["reason"],
            at=ensure_aware(datetime.fromisoformat(v["at"])),
            content_sha256=v["content_sha256"],
        )
        for v in (i.value for i in items)
    ]
    records.sort(key=lambda r: r.at)
    return records
