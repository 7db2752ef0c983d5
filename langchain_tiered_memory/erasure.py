"""Forgetting a user, journaled: a crash part-way is finished on the next open.

``TieredMemory.forget_user`` first writes an *erasure marker* to the store
(under :data:`ERASURES_NAMESPACE`, keyed and labelled by a hash of the user id,
with no content), then deletes the user's records, then rewrites the store's
files without them (:class:`~langchain_tiered_memory.stores.abilities.Purging`).
The marker says how far it got:

* ``"delete"``: the records may not all be deleted yet;
* ``"purge"``: they are, but their text may still be in the store's files
  (a crash during the rewrite, or ``forget_user(..., purge=False)``).

``TieredMemory.resume_erasures`` (which ``TieredMemory.open`` calls) finds the
markers left behind, deletes what is left of each user (matched by the hash of
the user ids in the store), purges, and removes the markers. Only
:data:`DELETIONS_NAMESPACE` keeps that a deletion happened.

Example:
    >>> from datetime import datetime, timezone
    >>> op = erasure_marker("alice", "delete", datetime(2026, 1, 1, tzinfo=timezone.utc))
    >>> op.namespace, op.value["stage"], "alice" in repr(op)
    (('tiered_memory_erasures',), 'delete', False)
    >>> unfinished_users([op.value], ["alice", "bob"])
    ['alice']
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Literal

from langgraph.store.base import PutOp

__all__ = [
    "DELETIONS_NAMESPACE",
    "ERASURES_NAMESPACE",
    "Stage",
    "deletion_record",
    "erasure_done",
    "erasure_marker",
    "unfinished_users",
    "user_hash",
]

DELETIONS_NAMESPACE = ("tiered_memory_deletions",)
"""Where :meth:`TieredMemory.forget_user` records that a deletion happened (no content)."""
ERASURES_NAMESPACE = ("tiered_memory_erasures",)
"""Where an unfinished :meth:`TieredMemory.forget_user` leaves its marker (no content)."""

Stage = Literal["delete", "purge"]


def user_hash(user_id: str) -> str:
    """The SHA-256 of a normalised user id (what markers and deletion records keep)."""
    return hashlib.sha256(user_id.encode()).hexdigest()


def erasure_marker(user_id: str, stage: Stage, now: datetime) -> PutOp:
    """The op writing (or advancing) the erasure marker of ``user_id``."""
    digest = user_hash(user_id)
    value = {"user_sha256": digest, "stage": stage, "at": now.isoformat()}
    return PutOp(ERASURES_NAMESPACE, digest, value, index=False)


def erasure_done(user_id: str) -> PutOp:
    """The op removing the erasure marker of ``user_id``."""
    return PutOp(ERASURES_NAMESPACE, user_hash(user_id), None)


def deletion_record(user_id: str, now: datetime, count: int) -> PutOp:
    """The op recording that ``count`` records of ``user_id`` were deleted at ``now``."""
    return PutOp(
        DELETIONS_NAMESPACE,
        hashlib.sha256(f"{user_id}|{now.isoformat()}".encode()).hexdigest(),
        {"user_sha256": user_hash(user_id), "deleted_at": now.isoformat(), "records": count},
        index=False,
    )


def unfinished_users(markers: Iterable[Mapping[str, Any]], user_ids: Iterable[str]) -> list[str]:
    """The ids among ``user_ids`` whose marker says their records may not all be deleted."""
    wanted = {m.get("user_sha256") for m in markers if m.get("stage") == "delete"}
    return sorted(u for u in user_ids if user_hash(u) in wanted)
