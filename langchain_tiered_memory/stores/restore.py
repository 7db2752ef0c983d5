"""Writing items back with the timestamps they already have (restoring an export).

Where a ``PutOp`` stamps the current time, a :class:`RestoreOp` carries each record's own
times, so recency ranking, ``as of`` queries and newest-first listing behave as at the
source. Restored items get no TTL, and replace any item with the same namespace and key.

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
from datetime import datetime
from typing import Any, Literal, NamedTuple

from langchain_tiered_memory.errors import InvalidInputError
from langchain_tiered_memory.stores.payload import item_payload, micros, stamp
from langchain_tiered_memory.stores.plan import (
    Planner,
    PreparedPut,
    check_key,
    check_namespace,
    upsert_plan,
)
from langchain_tiered_memory.stores.requests import Plan
from langchain_tiered_memory.types import ensure_aware

__all__ = ["RestoreOp", "restore_plan"]


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


def _prepare(
    planner: Planner, ops: Sequence[RestoreOp]
) -> list[tuple[PreparedPut, datetime, datetime]]:
    """Validate every op (nothing is written when one is bad); the last op per key wins."""
    latest: dict[str, tuple[PreparedPut, datetime, datetime]] = {}
    for op in ops:
        if not isinstance(op, RestoreOp):
            raise InvalidInputError(f"restore takes RestoreOp records, got {type(op).__name__}")
        ns, key = check_namespace(op.namespace), check_key(op.key)
        where = f"{ns!r}/{key!r}"
        created = _stamp(op.created_at, "created_at", where)
        updated = _stamp(op.updated_at, "updated_at", where)
        put = planner.prepare_put(ns, key, op.value, op.index)  # the planner's embedding rules
        latest[put.pid] = (put, created, updated)
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
    vectors = yield from planner.embed_plan(t for put, _, _ in prepared for t in put.texts)
    points = []
    for put, created_at, updated_at in prepared:
        updated = stamp(updated_at)
        payload = item_payload(
            put.namespace,
            put.key,
            put.layout,
            created=stamp(created_at),
            order_us=micros(updated_at),
            ttl_minutes=None,
            updated=updated if isinstance(updated, str) else None,
        )
        points.append(planner.point(put, payload, vectors))
    yield from upsert_plan(points)
    return len(points)
