"""Writing items back with the timestamps they already have (restoring an export).

A ``PutOp`` is a new write: the store stamps ``updated_at`` (and, for a new
key, ``created_at``) with the current time. Restoring a backup or importing an
export must instead keep each record's own times, so that recency ranking,
``as of`` queries and newest-first listing behave as they did at the source.
A :class:`RestoreOp` carries those times; :func:`restore_plan` compiles a batch
of them into the same engine-neutral requests as a batch of puts (embed the
texts, upsert the points), with ``updated_us`` taken from ``updated_at`` so
newest-first order matches the source.

Restored items get no TTL (exports carry none). A restored item replaces any
item with the same namespace and key, whatever its timestamps.

Examples:
    >>> from datetime import datetime, timezone
    >>> from langchain_tiered_memory.stores.plan import Planner
    >>> when = datetime(2024, 5, 1, tzinfo=timezone.utc)
    >>> op = RestoreOp(("docs",), "a", {"text": "hi"}, created_at=when, updated_at=when)
    >>> plan = restore_plan(Planner(collection="memories", index=None, retrieval="hybrid"), [op])
    >>> upsert = next(plan)
    >>> upsert.points[0].payload["updated_us"]
    1714521600000000
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, NamedTuple

from langgraph.store.base import PutOp

from langchain_tiered_memory.errors import InvalidInputError
from langchain_tiered_memory.stores.payload import (
    ValueLayout,
    item_payload,
    layout_value,
    micros,
    namespace_fields,
    point_id_in,
    stamp,
)
from langchain_tiered_memory.stores.plan import Planner, check_namespace
from langchain_tiered_memory.stores.requests import Plan, PointData, Upsert
from langchain_tiered_memory.stores.sparse import bm25_document
from langchain_tiered_memory.types import ensure_aware

__all__ = ["RestoreOp", "restore_plan"]

_UPSERT_CHUNK = 1024


class RestoreOp(NamedTuple):
    """Write one item as it was: its value and its own ``created_at``/``updated_at``.

    Attributes:
        namespace: The item's namespace.
        key: The item's key.
        value: The item's value (a JSON dict).
        created_at: When the item was first written (naive times are taken as UTC).
        updated_at: When the item was last written (naive times are taken as UTC).
        index: Fields to embed, as in ``PutOp.index`` (``None``: the store's
            configured fields; ``False``: not embedded).
    """

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    index: Literal[False] | list[str] | None = None  # type: ignore[assignment]  # as in PutOp


def _stamp(value: Any, what: str, where: str) -> datetime:
    if not isinstance(value, datetime):
        raise InvalidInputError(
            f"{what} of {where} must be a datetime, got {type(value).__name__} {value!r}: "
            "parse ISO-8601 text with datetime.fromisoformat first"
        )
    return ensure_aware(value)


@dataclass(frozen=True)
class _Prepared:
    pid: str
    op: RestoreOp  # namespace checked, times aware
    layout: ValueLayout
    texts: list[str]  # embedded
    lexical: str  # BM25-indexed


def _prepare(planner: Planner, ops: Sequence[RestoreOp]) -> list[_Prepared]:
    """Validate every op (nothing is written when one is bad); the last op per key wins."""
    latest: dict[str, _Prepared] = {}
    for op in ops:
        if not isinstance(op, RestoreOp):
            raise InvalidInputError(f"restore takes RestoreOp records, got {type(op).__name__}")
        ns = check_namespace(op.namespace)
        if not isinstance(op.key, str):
            raise InvalidInputError(
                f"item key must be a string, got {type(op.key).__name__} {op.key!r}"
            )
        where = f"{ns!r}/{op.key!r}"
        stamped = op._replace(
            namespace=ns,
            created_at=_stamp(op.created_at, "created_at", where),
            updated_at=_stamp(op.updated_at, "updated_at", where),
        )
        layout = layout_value(op.value)
        # The planner's own rules for which texts a put embeds (index fields or
        # op.index) and which text it BM25-indexes (its lexical fields).
        put = PutOp(ns, op.key, layout.value, index=op.index)
        texts = planner.embedded_texts(put, layout.value)
        pid = point_id_in(namespace_fields(ns)[2], op.key)
        latest[pid] = _Prepared(
            pid, stamped, layout, texts, planner.lexical_text(put, layout.value, texts)
        )
    return list(latest.values())


def restore_plan(planner: Planner, ops: Sequence[RestoreOp]) -> Plan[int]:
    """The plan writing ``ops`` with their own timestamps; returns how many items were written.

    Every op is validated before the first request, and the texts are embedded
    before the first write, so a bad op or a failing embedding model writes nothing.

    Raises:
        InvalidInputError: An op has a bad namespace, key, value or timestamp.
        ConfigurationError: The embedding model returned vectors of the wrong size.
    """
    prepared = _prepare(planner, ops)
    vectors = yield from planner.embed_plan(t for p in prepared for t in p.texts)
    points = []
    for p in prepared:
        updated = stamp(p.op.updated_at)
        payload = item_payload(
            p.op.namespace,
            p.op.key,
            p.layout,
            created=stamp(p.op.created_at),
            order_us=micros(p.op.updated_at),
            ttl_minutes=None,
            updated=updated if isinstance(updated, str) else None,
        )
        dense = [vectors[t] for t in p.texts] if p.texts else None
        sparse = bm25_document(p.lexical) if p.texts else None
        points.append(PointData(p.pid, payload, dense, sparse or None))
    for start in range(0, len(points), _UPSERT_CHUNK):
        yield Upsert(points[start : start + _UPSERT_CHUNK])
    return len(points)
