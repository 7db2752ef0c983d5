"""How a filtered dense search walks the index: the engine's choice, ACORN, or an exact scan.

Settled from the engine's cardinality estimates (index lookups, one request for all of
a batch's searches): ACORN is asked for when the value filter keeps under
:data:`ACORN_MAX_SHARE` of the points that carry its fields, and the filtered points are
scanned exactly when the namespace's points times the value filter's share is at most
``full_scan_points`` (by default :func:`auto_full_scan_points`). Why, with the figures:
``docs/store.md``, "Index layout and search walks".

Examples:
    >>> from langgraph.store.base import SearchOp
    >>> op = SearchOp(("u", "facts"), filter={"status": "current"}, query="x")
    >>> asks = estimates(op, full_scan_points=None)
    >>> len(asks)  # the value filter's points, and the points carrying its fields
    2
    >>> choose(op, [900, 1000], full_scan_points=None)
    Walk(exact=False, acorn=False)
    >>> choose(op, [30, 1000], full_scan_points=None)
    Walk(exact=False, acorn=True)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple, TypeAlias

from langgraph.store.base import SearchOp

from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.stores.filters import (
    Where,
    fields_present,
    namespace_filter,
    value_filter,
)

__all__ = [
    "ACORN_MAX_SHARE",
    "FULL_SCAN_VECTOR_KB",
    "FullScan",
    "Walk",
    "auto_full_scan_points",
    "check_full_scan_points",
    "choose",
    "estimates",
]

ACORN_MAX_SHARE = 0.4
"""ACORN is asked for below this share (Qdrant's own default selectivity limit)."""
FULL_SCAN_VECTOR_KB = 30_000
"""Vectors (float32, KB) that ``full_scan_points="auto"`` scans exactly: 20,000 of 384-d."""

FullScan: TypeAlias = "int | Literal['auto'] | None"
"""A store's ``full_scan_points``: a number of points, ``"auto"`` or None (the engine's)."""


def check_full_scan_points(value: FullScan, dims: int | None) -> int | None:
    """A store's ``full_scan_points`` as a number of points (``"auto"`` resolved for ``dims``).

    Raises:
        ConfigurationError: ``value`` is not a positive int, ``"auto"`` or None.
    """
    if value == "auto":
        return auto_full_scan_points(dims)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise ConfigurationError(
            f"full_scan_points must be a positive int, 'auto' or None, got {value!r}: "
            "pass e.g. 20_000"
        )
    return value


def auto_full_scan_points(dims: int | None) -> int | None:
    """The points of ``dims``-d float32 vectors in :data:`FULL_SCAN_VECTOR_KB` (None: no vectors).

    Examples:
        >>> auto_full_scan_points(384), auto_full_scan_points(1536)
        (20000, 5000)
    """
    return None if not dims else FULL_SCAN_VECTOR_KB * 1024 // (4 * dims)


class Walk(NamedTuple):
    """How one dense search runs: an exact scan, ACORN on the graph, or neither."""

    exact: bool
    acorn: bool


ENGINE_CHOICE = Walk(exact=False, acorn=False)


def estimates(op: SearchOp, *, full_scan_points: int | None) -> list[Where]:
    """The filters whose sizes :func:`choose` needs for ``op`` (none: the engine's choice).

    In order: the namespace (with ``full_scan_points``), then the value filter and the
    points carrying its fields (with a value filter).
    """
    asks: list[Where] = []
    if full_scan_points is not None:
        asks.append(namespace_filter(op.namespace_prefix) or Where())
    if op.filter:
        asks += [value_filter(op.filter), fields_present(op.filter)]
    return asks


def choose(op: SearchOp, counts: Sequence[int], *, full_scan_points: int | None) -> Walk:
    """The walk for ``op`` from the estimated ``counts`` of :func:`estimates`' filters."""
    sizes = iter(counts)
    scope = next(sizes) if full_scan_points is not None else 0
    kept, share = 1, 1.0
    if op.filter:
        # ``None`` matches a missing field too, so ``kept`` may exceed ``carrying``.
        kept, carrying = next(sizes), next(sizes)
        share = min(1.0, kept / carrying) if carrying else float(kept > 0)
    if full_scan_points is not None and scope * share <= full_scan_points:
        return Walk(exact=True, acorn=False)
    # A filter estimated to keep nothing is scanned by the engine through its indexes.
    return Walk(exact=False, acorn=kept > 0 and share < ACORN_MAX_SHARE)
