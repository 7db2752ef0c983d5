"""Compile store filters into an engine-neutral filter tree.

Both engines translate the same tree (:data:`Condition`, :func:`lower`), so a search
means the same thing everywhere; nothing is filtered in Python. Namespace scoping is
an indexed match on ``ns_prefixes``, expiry an indexed range on ``expires_us``.
Value filters follow ``InMemoryStore`` (``{"field": value}``, ``$eq $ne $gt $gte $lt
$lte``; see ``docs/store.md``, "Filters"): every equality is a match on the
keyword-indexed ``value_marks`` (:func:`~.payload.value_marks`), ranges are
conditions on ``value.<path>``, which engines float-index on first use
(:func:`range_fields`).

Examples:
    >>> spec = search_filter(("docs",), {"year": {"$gte": 2020}}, now_us=0)
    >>> spec.must[0]
    Match(key='ns_prefixes', value='["docs"]')
"""

from __future__ import annotations

import itertools
import math
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeAlias, TypeVar

from langgraph.store.base import MatchCondition

from langchain_tiered_memory.errors import InvalidInputError
from langchain_tiered_memory.stores.payload import encode_ns, hash_json, scalar_token
from langchain_tiered_memory.types import ensure_aware

__all__ = [
    "Condition",
    "Match",
    "Range",
    "Where",
    "expired_filter",
    "fields_present",
    "list_namespaces_filter",
    "lower",
    "namespace_matches",
    "range_fields",
    "search_filter",
    "value_filter",
]


@dataclass(frozen=True)
class Match:
    """The field equals ``value`` (or, for an array field, contains it)."""

    key: str
    value: str | int | bool


@dataclass(frozen=True)
class Range:
    """The numeric field lies within the given bounds."""

    key: str
    gt: float | None = None
    gte: float | None = None
    lt: float | None = None
    lte: float | None = None


@dataclass(frozen=True)
class Where:
    """All of ``must``, at least one of ``should`` (if any), none of ``must_not``."""

    must: tuple[Condition, ...] = ()
    should: tuple[Condition, ...] = ()
    must_not: tuple[Condition, ...] = ()


Condition: TypeAlias = "Match | Range | Where"
_Built = TypeVar("_Built")

_SIMPLE_KEY = re.compile(r"[A-Za-z0-9_\-]+")
_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


def _field_key(parts: tuple[str, ...]) -> str:
    for part in parts:
        if any(c in part for c in '"\\[]'):
            raise InvalidInputError(
                f"filter key {part!r} contains a quote, backslash or bracket: rename the field"
            )
    quoted = (p if _SIMPLE_KEY.fullmatch(p) else f'"{p}"' for p in parts)
    return ".".join(["value", *quoted])


def _mark(kind: str, parts: tuple[str, ...], extra: str = "") -> Match:
    suffix = f":{extra}" if extra else ""
    return Match("value_marks", f"{kind}:{encode_ns(parts)}{suffix}")


def _number(value: Any, op: str) -> float:
    if isinstance(value, bool):
        raise InvalidInputError(f"{op} needs a number, got {value!r}")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            raise InvalidInputError(
                f"{op} needs a number, got the string {value!r}: pass a number"
            ) from None
    if isinstance(value, datetime):
        return ensure_aware(value).timestamp()
    raise InvalidInputError(f"{op} needs a number, got {type(value).__name__} {value!r}")


def _bounds(parts: tuple[str, ...], bounds: dict[str, float]) -> list[Condition]:
    """One range over a field, with non-finite bounds read as ``InMemoryStore`` reads them."""
    finite: dict[str, float] = {}
    for op, bound in bounds.items():
        lower = op in ("gt", "gte")
        if math.isnan(bound) or bound == (math.inf if lower else -math.inf):
            return [_mark("never", parts)]  # no value mark has this kind: matches nothing
        if math.isinf(bound):  # below or above every number: only "is a number" is left
            finite["gte" if bound < 0 else "lte"] = math.copysign(sys.float_info.max, bound)
        else:
            finite[op] = bound
    # Qdrant matches a scalar condition against any element of an array field.
    return [Range(_field_key(parts), **finite), Where(must_not=(_mark("a", parts),))]


def _equals(parts: tuple[str, ...], value: Any, *, exact: bool) -> list[Condition]:
    if isinstance(value, Mapping):
        if exact:
            return [_mark("h", parts, hash_json(dict(value)))]
        conditions: list[Condition] = [_mark("o", parts)]
        for k, v in value.items():
            conditions.extend(_field((*parts, str(k)), v))
        return conditions
    if isinstance(value, (list, tuple)):
        return [_mark("h", parts, hash_json(list(value)))]
    if value is None:  # null or missing (``dict.get`` gives None for both)
        return [Where(should=(_mark("e", parts, "null"), Where(must_not=(_mark("k", parts),))))]
    if isinstance(value, bool):
        return [_mark("b", parts, "true" if value else "false")]
    if isinstance(value, float) and not math.isfinite(value):
        return [_mark("never", parts)]  # stored numbers are finite, and NaN equals nothing
    if isinstance(value, (str, int, float)):
        return [_mark("e", parts, scalar_token(value))]
    raise InvalidInputError(
        f"cannot filter on {type(value).__name__} {value!r}: use JSON values (str, number, "
        "bool, null, list, dict)"
    )


def _field(parts: tuple[str, ...], value: Any) -> list[Condition]:
    if isinstance(value, Mapping) and any(str(k).startswith("$") for k in value):
        unknown = [k for k in value if k not in _OPERATORS]
        if unknown:
            raise InvalidInputError(
                f"unsupported filter operator {unknown[0]!r}: use one of {', '.join(_OPERATORS)}"
            )
        conditions: list[Condition] = []
        for op, operand in value.items():
            if op == "$eq":
                conditions += _equals(parts, operand, exact=True)
            elif op == "$ne":
                ne = Where(must=tuple(_equals(parts, operand, exact=True)))
                conditions.append(Where(must_not=(ne,)))
        # All bounds in one Range (docs/store.md, "One range per field").
        bounds = {op[1:]: _number(v, op) for op, v in value.items() if op not in ("$eq", "$ne")}
        if bounds:
            conditions += _bounds(parts, bounds)
        return conditions
    return _equals(parts, value, exact=False)


def range_fields(where: Where) -> set[str]:
    """The ``value.<path>`` fields a filter ranges over (they need a float index)."""
    found: set[str] = set()
    for cond in (*where.must, *where.should, *where.must_not):
        if isinstance(cond, Where):
            found |= range_fields(cond)
        elif isinstance(cond, Range) and cond.key.startswith("value."):
            found.add(cond.key)
    return found


def lower(
    where: Where, group: Callable[..., _Built], leaves: Mapping[type, Callable[[Any], Any]]
) -> _Built:
    """``where`` as an engine's own filter: each engine states only its constructors.

    Args:
        where: The engine-neutral filter tree.
        group: Builds one group from the keywords ``must``, ``should`` and
            ``must_not`` (lists of built conditions, ``None`` for an empty one).
        leaves: For each leaf condition type (:class:`Match`, :class:`Range`), how
            to build it.

    Examples:
        >>> lower(Where(must=(Match("k", "v"),)), dict, {Match: lambda c: c.value})
        {'must': ['v'], 'should': None, 'must_not': None}
    """

    def built(conds: tuple[Condition, ...]) -> list[Any] | None:
        return [
            lower(c, group, leaves) if isinstance(c, Where) else leaves[type(c)](c) for c in conds
        ] or None

    return group(must=built(where.must), should=built(where.should), must_not=built(where.must_not))


def not_expired(now_us: int) -> Where:
    """Items without a TTL or not expired: one indexed condition, ``not (expires_us <= now)``."""
    return Where(must_not=(Range("expires_us", lte=now_us),))


def _is_expiry_check(cond: Condition) -> bool:
    return (
        isinstance(cond, Range)
        and cond.lte is not None
        and cond == Range("expires_us", lte=cond.lte)
    )


def without_expiry_check(where: Where) -> Where:
    """``where`` without :func:`not_expired`'s ``must_not``, for a store with no TTL item.

    Only ``must_not`` conditions are dropped, so :func:`expired_filter` is never widened.

    Examples:
        >>> without_expiry_check(search_filter(("a",), None, now_us=5))
        Where(must=(Match(key='ns_prefixes', value='["a"]'),), should=(), must_not=())
    """

    def nested(conds: tuple[Condition, ...]) -> tuple[Condition, ...]:
        out: list[Condition] = []
        for cond in conds:
            if isinstance(cond, Where):
                cond = without_expiry_check(cond)
                if not (cond.must or cond.should or cond.must_not):
                    continue  # was only the expiry check: nothing left to require
            out.append(cond)
        return tuple(out)

    kept = tuple(c for c in where.must_not if not _is_expiry_check(c))
    return Where(must=nested(where.must), should=nested(where.should), must_not=kept)


def expired_filter(now_us: int) -> Where:
    """Items whose TTL ran out (what the sweeper deletes)."""
    return Where(must=(Range("expires_us", lte=now_us),))


def namespace_filter(prefix: Sequence[str]) -> Where | None:
    """The points under a namespace prefix (None for the empty prefix: every point)."""
    return Where(must=(Match("ns_prefixes", encode_ns(prefix)),)) if prefix else None


def search_filter(
    namespace_prefix: Sequence[str], flt: Mapping[str, Any] | None, *, now_us: int
) -> Where:
    """The filter of a search: namespace prefix, value filter, not expired.

    Raises:
        InvalidInputError: A filter uses an unknown operator or a non-JSON value.
    """
    scope = namespace_filter(namespace_prefix)
    conditions = (scope.must if scope is not None else ()) + value_filter(flt).must
    return Where(must=conditions, must_not=not_expired(now_us).must_not)


def value_filter(flt: Mapping[str, Any] | None) -> Where:
    """The value part of a search filter alone (no namespace, no expiry).

    Raises:
        InvalidInputError: A filter uses an unknown operator or a non-JSON value.
    """
    if flt is not None and not isinstance(flt, Mapping):
        raise InvalidInputError(f"filter must be a dict, got {type(flt).__name__}")
    conditions: list[Condition] = []
    try:
        for key, value in (flt or {}).items():
            conditions.extend(_field((str(key),), value))
    except RecursionError:
        raise InvalidInputError("filter is nested too deeply") from None
    return Where(must=tuple(conditions))


def fields_present(flt: Mapping[str, Any]) -> Where:
    """The points whose value has every top-level field a filter names."""
    return Where(must=tuple(_mark("k", (str(key),)) for key in flt))


def _oriented(labels: Sequence[str], match_type: str) -> tuple[str, ...]:
    return tuple(labels) if match_type == "prefix" else tuple(reversed(labels))


def list_namespaces_filter(conditions: Iterable[MatchCondition], *, now_us: int) -> Where:
    """Indexed pre-filter for ``list_namespaces``: the fixed head of each prefix condition.

    Suffixes, wildcards and depths are matched on the facet's namespaces
    (:func:`namespace_matches`), one check per namespace instead of an indexed
    value per item.
    """
    must: list[Condition] = [not_expired(now_us)]
    for condition in conditions:
        if condition.match_type != "prefix":
            continue
        fixed = list(itertools.takewhile(lambda label: label != "*", condition.path))
        if fixed:
            must.append(Match("ns_prefixes", encode_ns(fixed)))
    return Where(must=tuple(must))


def namespace_matches(namespace: Sequence[str], condition: MatchCondition) -> bool:
    """Whether a namespace satisfies a prefix/suffix condition with ``*`` wildcards."""
    path = _oriented(condition.path, condition.match_type)
    labels = _oriented(namespace, condition.match_type)
    return len(path) <= len(labels) and all(
        p in ("*", lab) for p, lab in zip(path, labels, strict=False)
    )
