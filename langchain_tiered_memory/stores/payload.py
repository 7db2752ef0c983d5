"""How one store item is laid out as one Qdrant point (payload format 4).

Each item is one point whose id is a uuid5 of its namespace and key. Its payload holds
the indexed fields filters need (:func:`numeric_view`, :func:`value_marks`) and what reads
need packed in ``item`` (:func:`pack_item`); ``docs/store.md`` ("How an item is stored")
has the table. Points of formats 2 and 3 (``key``, ``value_json``, ``created_at``,
``updated_at`` and ``ttl_minutes`` as fields of their own) are read as they are.

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
from datetime import datetime, timedelta, timezone
from json.encoder import encode_basestring as _encode_text  # type: ignore[attr-defined]
from typing import Any, NamedTuple

from langgraph.store.base import Item

from langchain_tiered_memory.errors import InvalidInputError

__all__ = [
    "CREATED_FIELDS",
    "ITEM_FIELDS",
    "MARK_TEXT_LIMIT",
    "MAX_DEPTH",
    "MAX_VALUE_BYTES",
    "ValueLayout",
    "created_of",
    "dumps",
    "encode_ns",
    "hash_json",
    "item_payload",
    "layout_value",
    "micros",
    "namespace_fields",
    "normalize_value",
    "numeric_view",
    "pack_item",
    "point_id",
    "point_id_in",
    "read_item",
    "scalar_token",
    "stamp",
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
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_ZERO = timedelta(0)

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
    delta = moment - _EPOCH
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


_path_text = functools.lru_cache(maxsize=4096)(encode_ns)
"""Encoded field path of a marker (cached: every item of a tier has the same fields)."""


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
    return layout_value(value).marks


def numeric_view(value: Mapping[str, Any]) -> Any:
    """The numbers of a store value, in their places; ``None`` when it holds none.

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
    return layout_value(value).numbers


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
    elif isinstance(value, int):  # bool too: within range
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


class ValueLayout(NamedTuple):
    """A validated value with what its payload needs (see :func:`layout_value`)."""

    value: dict[str, Any]
    """The value as it reads back (plain JSON types)."""
    text: str
    """Its compact JSON text (:func:`dumps`)."""
    marks: list[str]
    """Its equality markers (:func:`value_marks`)."""
    numbers: Any
    """Its numbers (:func:`numeric_view`), None when it holds none."""


class _Unusual(Exception):
    """The value needs the full check: a tuple, a subclass, a bad key or number, deep nesting."""


def _numbers_in_list(v: Any, depth: int) -> Any:
    """:func:`numeric_view` of a value inside a list, checked as :func:`normalize_value` does."""
    if depth > MAX_DEPTH:
        raise _Unusual
    t = type(v)
    if t is str or t is bool or v is None:
        return None
    if t is int or t is float:
        if (t is int and not _MIN_INT <= v <= _MAX_INT) or (t is float and not math.isfinite(v)):
            raise _Unusual
        return v
    if t is dict:
        kept = {}
        for k, child in v.items():
            if type(k) is not str:
                raise _Unusual
            n = _numbers_in_list(child, depth + 1)
            if n is not None:
                kept[k] = n
        return kept or None
    if t is list:
        items = [n for n in (_numbers_in_list(c, depth + 1) for c in v) if n is not None]
        return items or None
    raise _Unusual


def _walk(v: Any, path: tuple[str, ...], depth: int, marks: list[str]) -> Any:
    """One pass of :func:`value_marks`, :func:`numeric_view` and the checks of a field."""
    if depth > MAX_DEPTH:
        raise _Unusual
    t = type(v)
    where = _path_text(path)
    if path:
        marks.append(f"k:{where}")
    if t is str or v is None:
        marks.append(f"e:{where}:{scalar_token(v)}")
        return None
    if t is bool:
        marks.append(f"b:{where}:{'true' if v else 'false'}")
        return None
    if t is int or t is float:
        if (t is int and not _MIN_INT <= v <= _MAX_INT) or (t is float and not math.isfinite(v)):
            raise _Unusual
        marks.append(f"e:{where}:{scalar_token(v)}")
        return v
    if t is dict:
        at = len(marks)
        kept = {}
        for k, child in v.items():
            if type(k) is not str:
                raise _Unusual
            n = _walk(child, (*path, k), depth + 1, marks)
            if n is not None:
                kept[k] = n
        if path:  # hashed once every field is known to be JSON
            marks[at:at] = (f"o:{where}", f"h:{where}:{hash_json(v)}")
        return kept or None
    if t is list:
        items = [n for n in (_numbers_in_list(c, depth + 1) for c in v) if n is not None]
        marks.extend((f"a:{where}", f"h:{where}:{hash_json(v)}"))
        return items or None
    raise _Unusual


def layout_value(value: Any) -> ValueLayout:
    """Validate a value and compute its JSON text, markers and numbers in one pass.

    The same results as :func:`normalize_value`, :func:`value_marks` and
    :func:`numeric_view` one after another; a value of plain JSON types is not copied.

    Raises:
        InvalidInputError: As :func:`normalize_value`.

    Examples:
        >>> layout_value({"n": 1, "s": "x"}).marks
        ['k:["n"]', 'e:["n"]:n:1', 'k:["s"]', 'e:["s"]:s:x']
    """
    marks: list[str] = []
    if type(value) is dict:  # plain JSON types only: no copy, no second pass
        try:
            numbers = _walk(value, (), 1, marks)
        except (_Unusual, RecursionError):
            marks = []  # the full check below
        else:
            text = dumps(value)
            size = len(text) if text.isascii() else len(text.encode("utf-8"))
            if size > MAX_VALUE_BYTES:
                normalize_value(value)  # raises the size error
            return ValueLayout(value, text, marks, numbers)
    normalized, text = normalize_value(value)
    return ValueLayout(normalized, text, marks, _walk(normalized, (), 1, marks))


@functools.lru_cache(maxsize=4096)
def namespace_fields(namespace: tuple[str, ...]) -> tuple[str, tuple[str, ...], bytes]:
    """Indexed texts of a namespace (its path and prefixes) and its point-id seed (cached)."""
    path = encode_ns(namespace)
    prefixes = tuple(encode_ns(namespace[:d]) for d in range(1, len(namespace) + 1))
    return path, prefixes, _ID_NAMESPACE.bytes + f"[{path},".encode()


def point_id_in(seed: bytes, key: str) -> str:
    """:func:`point_id` from a namespace's seed (:func:`namespace_fields`), without ``uuid``.

    Examples:
        >>> point_id_in(namespace_fields(("a", "b"))[2], "k") == point_id(("a", "b"), "k")
        True
    """
    digest = bytearray(hashlib.sha1(seed + f"{_encode_text(key)}]".encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def stamp(moment: datetime) -> int | str:
    """How a time is kept in the packed item: microseconds if in UTC, else ISO text."""
    return micros(moment) if moment.utcoffset() == _ZERO else moment.isoformat()


def pack_item(
    key: str,
    value_json: str,
    *,
    created: int | str,
    ttl_minutes: float | None,
    updated: str | None = None,
) -> str:
    """The ``item`` text: ``[key, created, ttl_minutes, value]`` (+ ``updated`` if not UTC).

    Examples:
        >>> pack_item("k", '{"a":1}', created=5, ttl_minutes=None)
        '["k",5,null,{"a":1}]'
    """
    created_text = created if type(created) is int else _encode_text(str(created))
    ttl = "null" if ttl_minutes is None else repr(float(ttl_minutes))
    tail = "" if updated is None else f",{_encode_text(updated)}"
    return f"[{_encode_text(key)},{created_text},{ttl},{value_json}{tail}]"


def item_payload(
    namespace: tuple[str, ...],
    key: str,
    layout: ValueLayout,
    *,
    created: int | str,
    order_us: int,
    ttl_minutes: float | None,
    updated: str | None = None,
) -> dict[str, Any]:
    """The payload of one item (format 4, the layout of the module docstring)."""
    path, prefixes, _ = namespace_fields(namespace)
    payload: dict[str, Any] = {
        "ns_path": path,
        "ns_prefixes": list(prefixes),
        "updated_us": order_us,
        "value_marks": layout.marks,
        "item": pack_item(
            key, layout.text, created=created, ttl_minutes=ttl_minutes, updated=updated
        ),
    }
    if layout.numbers is not None:
        payload["value"] = layout.numbers
    if ttl_minutes is not None:
        payload["expires_us"] = order_us + int(ttl_minutes * 60_000_000)
    return payload


ITEM_FIELDS = [
    "ns_path",
    "item",
    "updated_us",
    "expires_us",
    # formats 2 and 3
    "key",
    "value_json",
    "created_at",
    "updated_at",
    "ttl_minutes",
]
"""Payload fields a read needs (the indexed copies are not fetched)."""

CREATED_FIELDS = ["item", "created_at"]
"""Payload fields that hold an item's creation time (format 4, formats 2 and 3)."""


@functools.lru_cache(maxsize=4096)
def _namespace_of(path: str) -> tuple[str, ...]:
    return tuple(json.loads(path))


def _moment(stamped: int | str) -> datetime:
    if type(stamped) is int:
        return _EPOCH + timedelta(microseconds=stamped)
    return datetime.fromisoformat(str(stamped))


def read_item(payload: Mapping[str, Any]) -> tuple[Item, float | None]:
    """The LangGraph ``Item`` stored in a payload (any readable format), and its TTL."""
    packed = payload.get("item")
    if packed is None:  # formats 2 and 3
        key, created, updated = payload["key"], payload["created_at"], payload["updated_at"]
        value, ttl = json.loads(payload["value_json"]), payload.get("ttl_minutes")
    else:
        key, created, ttl, value, *rest = json.loads(packed)
        updated = rest[0] if rest else payload["updated_us"]
    item = Item(
        namespace=_namespace_of(payload["ns_path"]),
        key=key,
        value=value,
        created_at=_moment(created),
        updated_at=_moment(updated),
    )
    return item, ttl


def created_of(payload: Mapping[str, Any]) -> int | str | None:
    """The creation time kept in a payload (see :func:`stamp`), None if it holds none."""
    packed = payload.get("item")
    if packed is not None:
        created: int | str = json.loads(packed)[1]
        return created
    text = payload.get("created_at")
    return None if text is None else stamp(datetime.fromisoformat(text))
