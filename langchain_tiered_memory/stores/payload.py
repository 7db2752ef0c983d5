"""How one store item is laid out as one Qdrant point.

Each item ``(namespace, key) -> value`` is one point whose id is a uuid5 of the
namespace and key, so writing the same item twice replaces it. The payload
carries everything a filter needs, indexed inside the engine:

* ``ns_prefixes``: every prefix of the namespace, JSON-encoded (keyword index),
  so a search under ``("a",)`` is one indexed match and ``("a",)`` can never
  match ``("ab",)``; ``ns_suffixes`` likewise for suffix listing;
* ``ns_path`` (keyword, faceted by ``list_namespaces``; reads take the
  namespace from it) and ``ns_depth``;
* ``value``: the numbers of the user's value (:func:`numeric_view`), ranged over
  as ``value.<field>``; ``value_json`` the exact value that reads come from
  (engines may reorder keys or round floats);
* ``value_marks``: keyword-indexed markers through which every equality filter
  on the value runs (scalars, lists, objects, presence; see :func:`value_marks`),
  so filtering on ``value.<field>`` never reads payloads from disk; numeric
  ranges use float indexes on ``value.<path>`` created on first use;
  strings are left out of ``value`` because no filter reads them there, and
  qdrant-edge-py 0.9 spends about 10 µs converting each payload string (a
  rich episode went from 78 payload values to 62);
* ``created_at``/``updated_at`` (ISO text) with ``updated_us`` (integer
  microseconds, range-indexed) for newest-first ordering and time ranges;
* ``ttl_minutes`` and ``expires_us`` for TTL.

Format 3 (this layout) differs from format 2 only in what is left out (the
``namespace`` list and the non-numeric parts of ``value``): points of both read
the same way, so a format-2 store is read as is and upgraded in place.

Examples:
    >>> point_id(("memories", "alice"), "k1") == point_id(["memories", "alice"], "k1")
    True
    >>> encode_ns(("a", "b"))
    '["a","b"]'
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from langgraph.store.base import Item

from langchain_tiered_memory.errors import InvalidInputError

__all__ = [
    "ITEM_FIELDS",
    "MARK_TEXT_LIMIT",
    "MAX_DEPTH",
    "MAX_VALUE_BYTES",
    "build_payload",
    "dumps",
    "encode_ns",
    "hash_json",
    "item_from_payload",
    "micros",
    "normalize_value",
    "numeric_view",
    "point_id",
    "scalar_token",
    "value_marks",
]

MAX_VALUE_BYTES = 1024 * 1024
"""Largest value accepted, measured as compact UTF-8 JSON (1 MiB)."""

MAX_DEPTH = 32
"""Deepest nesting of objects and lists accepted in a value."""

MARK_TEXT_LIMIT = 64
"""Longest string kept verbatim in an equality marker; longer ones are hashed."""

_MIN_INT, _MAX_INT = -(2**63), 2**63 - 1
_ID_NAMESPACE = uuid.UUID("0d7a0a53-3b8e-4f0c-8c55-6c1e2f4b9a11")

_encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def dumps(value: Any) -> str:
    """Compact, NaN-free JSON text; raises ``ValueError``/``TypeError`` on non-JSON."""
    return _encoder.encode(value)


def encode_ns(labels: Sequence[str]) -> str:
    """Unambiguous text of a namespace or prefix (labels may contain any character)."""
    return dumps(list(labels))


def point_id(namespace: Sequence[str], key: str) -> str:
    """Deterministic point id of an item: the same (namespace, key) gives the same id."""
    return str(uuid.uuid5(_ID_NAMESPACE, dumps([list(namespace), key])))


def micros(moment: datetime) -> int:
    """Integer microseconds since the epoch of an aware datetime."""
    delta = moment - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def hash_json(value: Any) -> str:
    """Content hash of a JSON value where ``1 == 1.0`` and key order does not matter."""

    def canon(v: Any) -> Any:
        if isinstance(v, Mapping):
            return {str(k): canon(v[k]) for k in sorted(v, key=str)}
        if isinstance(v, (list, tuple)):
            return [canon(x) for x in v]
        if isinstance(v, float) and v.is_integer() and abs(v) < 2**63:
            return int(v)
        return v

    text = json.dumps(canon(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()


@functools.lru_cache(maxsize=4096)
def _path_text(path: tuple[str, ...]) -> str:
    """Encoded field path of a marker (cached: every item of a tier has the same fields)."""
    return encode_ns(path)


def scalar_token(value: str | float | None) -> str:
    """Canonical text of a non-boolean JSON scalar, for equality markers.

    Values equal as Python compares them get the same token (``1`` and ``1.0``
    both give ``n:1``); strings and numbers never collide (``"1"`` is ``s:1``).
    Strings longer than :data:`MARK_TEXT_LIMIT` are replaced by a hash.

    Examples:
        >>> scalar_token(1) == scalar_token(1.0), scalar_token("1"), scalar_token(None)
        (True, 's:1', 'null')
    """
    if value is None:
        return "null"
    if isinstance(value, str):
        if len(value) <= MARK_TEXT_LIMIT:
            return f"s:{value}"
        digest = hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=12)
        return f"S:{digest.hexdigest()}"
    if isinstance(value, float) and value.is_integer():
        return f"n:{int(value)}"  # exact: Python compares int and float exactly too
    return f"n:{value!r}"


def value_marks(value: Mapping[str, Any]) -> list[str]:
    """Keyword markers through which equality filters on a value are answered.

    For every field reached through objects (not inside lists), at ``path``:
    ``k:<path>`` says the field is present (whatever its value);
    ``e:<path>:<token>`` holds a string, number or null (see
    :func:`scalar_token`); ``b:<path>:true|false`` a boolean (kept apart from
    numbers; qdrant-edge 0.9 also turns ``MatchValue(True)`` into 1);
    ``a:<path>`` / ``o:<path>`` mark a list / an object, and
    ``h:<path>:<hash>`` is the content hash of either, so ``{"tags": ["x"]}``
    matches only items whose ``tags`` is exactly ``["x"]``.

    Examples:
        >>> value_marks({"n": 1, "tags": ["x"]})[:3]
        ['k:["n"]', 'e:["n"]:n:1', 'k:["tags"]']
    """
    marks: list[str] = []

    def walk(v: Any, path: tuple[str, ...]) -> None:
        where = _path_text(path)
        if path:
            marks.append(f"k:{where}")
        if isinstance(v, Mapping):
            if path:
                marks.extend((f"o:{where}", f"h:{where}:{hash_json(v)}"))
            for k, child in v.items():
                walk(child, (*path, str(k)))
        elif isinstance(v, list):
            marks.extend((f"a:{where}", f"h:{where}:{hash_json(v)}"))
        elif isinstance(v, bool):
            marks.append(f"b:{where}:{'true' if v else 'false'}")
        else:
            marks.append(f"e:{where}:{scalar_token(v)}")

    walk(value, ())
    return marks


def numeric_view(value: Any) -> Any:
    """The numbers of a JSON value, in their places; ``None`` when it holds none.

    Range filters (``$gt`` ...) compare numbers only, through ``value.<path>``:
    objects keep their numeric fields, lists their numeric elements (a filter
    path never names a list position), and strings, booleans and nulls are
    dropped.

    Examples:
        >>> numeric_view({"a": 1, "b": "x", "c": {"d": 2.5, "e": True}, "f": [3, "y"]})
        {'a': 1, 'c': {'d': 2.5}, 'f': [3]}
        >>> numeric_view({"b": "x"}) is None
        True
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, Mapping):
        kept = {k: v for k, v in ((k, numeric_view(c)) for k, c in value.items()) if v is not None}
        return kept or None
    if isinstance(value, list):
        items = [v for v in (numeric_view(c) for c in value) if v is not None]
        return items or None
    return None


def _check(value: Any, depth: int, where: str) -> None:
    if depth > MAX_DEPTH:
        raise InvalidInputError(
            f"value{where} is nested deeper than {MAX_DEPTH} levels: flatten it or store it "
            "as a JSON string"
        )
    if isinstance(value, Mapping):
        for k, child in value.items():
            if not isinstance(k, str):
                raise InvalidInputError(
                    f"value{where} has the {type(k).__name__} key {k!r}: JSON object keys are "
                    f"strings, so it would come back changed; use {str(k)!r} instead"
                )
            _check(child, depth + 1, f"{where}[{k!r}]")
    elif isinstance(value, (list, tuple)):
        for i, child in enumerate(value):
            _check(child, depth + 1, f"{where}[{i}]")
    elif isinstance(value, bool) or value is None or isinstance(value, str):
        return
    elif isinstance(value, int):
        if not _MIN_INT <= value <= _MAX_INT:
            raise InvalidInputError(
                f"value{where} = {value} is outside the 64-bit integer range: store it as a string"
            )
    elif isinstance(value, float) and not math.isfinite(value):
        raise InvalidInputError(f"value{where} is {value}: use a finite number or null")


def normalize_value(value: Any) -> tuple[dict[str, Any], str]:
    """Validate a value and return it as read back, with its compact JSON text.

    Raises:
        InvalidInputError: Not a dict, not JSON-serialisable (sets, bytes,
            datetimes, NaN), an integer beyond 64 bits, nested deeper than
            :data:`MAX_DEPTH`, or larger than :data:`MAX_VALUE_BYTES` as JSON.
    """
    if not isinstance(value, Mapping):
        raise InvalidInputError(
            f"store values must be dicts, got {type(value).__name__}: wrap it, e.g. {{'data': ...}}"
        )
    _check(value, 1, "")
    try:
        text = dumps(dict(value))
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInputError(
            f"value is not plain JSON ({exc}): convert sets, bytes, datetimes and NaN to "
            "JSON types (lists, str, ISO-8601 text, null) before storing"
        ) from exc
    size = len(text.encode("utf-8"))
    if size > MAX_VALUE_BYTES:
        raise InvalidInputError(
            f"value is {size} bytes as JSON, over the {MAX_VALUE_BYTES}-byte limit: store large "
            "content elsewhere and keep a reference or summary in the store"
        )
    normalized: dict[str, Any] = json.loads(text)
    return normalized, text


@functools.lru_cache(maxsize=4096)
def _namespace_fields(
    namespace: tuple[str, ...],
) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """Indexed texts of a namespace: its path, prefixes and suffixes.

    Cached: bulk writes repeat a few namespaces, and encoding them was a third of
    the Python cost of a put.
    """
    depths = range(1, len(namespace) + 1)
    return (
        encode_ns(namespace),
        tuple(encode_ns(namespace[:d]) for d in depths),
        tuple(encode_ns(namespace[-d:]) for d in depths),
    )


def build_payload(
    namespace: tuple[str, ...],
    key: str,
    value: dict[str, Any],
    value_json: str,
    *,
    created_at: datetime,
    updated_at: datetime,
    order_us: int,
    ttl_minutes: float | None,
) -> dict[str, Any]:
    """The full payload of one item (the layout of the module docstring)."""
    path, prefixes, suffixes = _namespace_fields(namespace)
    expires = None if ttl_minutes is None else order_us + int(ttl_minutes * 60_000_000)
    return {
        "ns_path": path,
        "ns_prefixes": list(prefixes),
        "ns_suffixes": list(suffixes),
        "ns_depth": len(namespace),
        "key": key,
        "value": numeric_view(value) or {},
        "value_json": value_json,
        "value_marks": value_marks(value),
        "created_at": created_at.isoformat(),
        "updated_at": updated_at.isoformat(),
        "updated_us": order_us,
        "ttl_minutes": ttl_minutes,
        "expires_us": expires,
    }


ITEM_FIELDS = [
    "ns_path",
    "key",
    "value_json",
    "created_at",
    "updated_at",
    "updated_us",
    "ttl_minutes",
    "expires_us",
]
"""Payload fields a read needs (the indexed copies are not fetched)."""


@functools.lru_cache(maxsize=4096)
def _namespace_of(path: str) -> tuple[str, ...]:
    return tuple(json.loads(path))


def item_from_payload(payload: Mapping[str, Any]) -> Item:
    """The LangGraph ``Item`` stored in a payload."""
    return Item(
        namespace=_namespace_of(payload["ns_path"]),
        key=payload["key"],
        value=json.loads(payload["value_json"]),
        created_at=datetime.fromisoformat(payload["created_at"]),
        updated_at=datetime.fromisoformat(payload["updated_at"]),
    )
