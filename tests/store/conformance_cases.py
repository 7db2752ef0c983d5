"""The store conformance cases, defined once and run by a sync and an async driver.

Each case is an ``async def`` taking a fresh store and an :class:`~store_drivers.Ops`
driver; ``test_conformance.py`` runs them through the sync API and
``test_conformance_async.py`` through the async API. LangGraph's ``InMemoryStore``
proves the suite; where it deviates from the contract that ``PostgresStore`` keeps
(and our store promises), the case lists it in ``xfail`` with the reason, run
strictly so a fix upstream is noticed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import string
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from langgraph.store.base import BaseStore, GetOp, ListNamespacesOp, PutOp, SearchOp
from store_drivers import Case, Ops, keys_of
from store_support import StoreFactory, hashing_index

INMEMORY_CREATED_AT = (
    "InMemoryStore resets created_at on every put; PostgresStore and our store keep it"
)
INMEMORY_EMPTY_NAMESPACES = (
    "InMemoryStore keeps a namespace listed after its last item is deleted (and after a "
    "get on it); PostgresStore and our store list only namespaces that hold items"
)


@dataclasses.dataclass(frozen=True)
class ConformanceCase:
    """One case: its function and what it needs from the store."""

    fn: Case
    index: bool = False
    ttl: bool = False
    xfail: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.fn.__name__.removeprefix("case_")


CASES: list[ConformanceCase] = []


def case(
    *, index: bool = False, ttl: bool = False, xfail: dict[str, str] | None = None
) -> Callable[[Case], Case]:
    """Register a conformance case."""

    def register(fn: Case) -> Case:
        CASES.append(ConformanceCase(fn, index=index, ttl=ttl, xfail=xfail or {}))
        return fn

    return register


def open_store_for(
    spec: ConformanceCase, factory: StoreFactory, request: pytest.FixtureRequest
) -> BaseStore:
    """Open the store a case needs, applying its skip and xfail rules."""
    if spec.ttl and not factory.is_qdrant:
        pytest.skip("InMemoryStore does not support TTL (supports_ttl is False)")
    if factory.kind in spec.xfail:
        request.applymarker(pytest.mark.xfail(reason=spec.xfail[factory.kind], strict=True))
    store = factory(index=hashing_index() if spec.index else None)
    if spec.ttl:
        assert store.supports_ttl, f"{type(store).__name__} must support TTL"
    return store


def _aware_and_recent(when: datetime, start: datetime, end: datetime) -> None:
    assert when.tzinfo is not None and when.utcoffset() is not None, f"{when!r} is naive"
    slack = timedelta(seconds=2)
    assert start - slack <= when <= end + slack, f"{when} outside [{start}, {end}]"


def _now() -> datetime:
    return datetime.now(timezone.utc)


# --------------------------------------------------------------------------- basic ops


@case()
async def case_put_get_roundtrip(store: BaseStore, ops: Ops) -> None:
    ns = ("users", "alice")
    value = {
        "text": "likes green tea",
        "n": 3,
        "ratio": 0.25,
        "flag": True,
        "nothing": None,
        "tags": ["a", "b", 1, 2.5, False, None],
        "nested": {"deep": {"deeper": [1, {"x": "y"}]}},
        "empty": {},
    }
    start = _now()
    await ops.put(ns, "pref-1", value)
    end = _now()
    item = await ops.get(ns, "pref-1")
    assert item is not None
    assert item.value == value
    assert item.key == "pref-1"
    assert item.namespace == ns
    assert isinstance(item.namespace, tuple)
    _aware_and_recent(item.created_at, start, end)
    _aware_and_recent(item.updated_at, start, end)
    assert await ops.get(ns, "missing") is None
    assert await ops.get(("users", "bob"), "pref-1") is None
    assert await ops.get(("users",), "pref-1") is None
    # The stored value is not the caller's object: later mutation does not leak in.
    value["n"] = 99
    again = await ops.get(ns, "pref-1")
    assert again is not None and again.value["n"] == 3


@case()
async def case_delete(store: BaseStore, ops: Ops) -> None:
    ns = ("docs",)
    for key in ("a", "b", "c"):
        await ops.put(ns, key, {"text": key})
    await ops.delete(ns, "b")
    assert await ops.get(ns, "b") is None
    assert await ops.get(ns, "a") is not None
    assert sorted(keys_of(await ops.search(ns))) == ["a", "c"]
    await ops.delete(ns, "never-existed")  # deleting a missing key is not an error
    await ops.delete(("other",), "a")  # nor is deleting in an unknown namespace
    assert sorted(keys_of(await ops.search(ns))) == ["a", "c"]
    await ops.put(ns, "b", {"text": "back"})
    item = await ops.get(ns, "b")
    assert item is not None and item.value == {"text": "back"}


@case(xfail={"inmemory": INMEMORY_CREATED_AT})
async def case_upsert_is_idempotent(store: BaseStore, ops: Ops) -> None:
    ns = ("users", "carol")
    await ops.put(ns, "k", {"text": "first", "v": 1})
    first = await ops.get(ns, "k")
    assert first is not None
    await ops.sleep(0.02)
    await ops.put(ns, "k", {"text": "second", "v": 2})
    second = await ops.get(ns, "k")
    assert second is not None
    assert second.value == {"text": "second", "v": 2}
    found = await ops.search(ns, limit=50)
    assert keys_of(found) == ["k"], "a second put of the same key must not add an item"
    assert second.updated_at > first.updated_at
    assert second.created_at == first.created_at


@case()
async def case_concurrent_puts(store: BaseStore, ops: Ops) -> None:
    ns = ("bulk",)
    await ops.gather(*(ops.put(ns, f"k{i:02d}", {"i": i}) for i in range(40)))
    found = await ops.search(ns, limit=100)
    assert sorted(keys_of(found)) == [f"k{i:02d}" for i in range(40)]
    for i in (0, 17, 39):
        item = await ops.get(ns, f"k{i:02d}")
        assert item is not None and item.value == {"i": i}


# --------------------------------------------------------------------------- namespaces


@case()
async def case_search_prefix_scoping(store: BaseStore, ops: Ops) -> None:
    layout = {
        ("users", "al"): "al-1",
        ("users", "al", "notes"): "al-note",
        ("users", "alice"): "alice-1",
        ("users", "alice", "notes"): "alice-note",
        ("users", "bob"): "bob-1",
        ("teams", "al"): "team-al",
    }
    for ns, key in layout.items():
        await ops.put(ns, key, {"text": "same words everywhere", "owner": ns[-1]})

    async def keys(prefix: tuple[str, ...], **kwargs: Any) -> set[str]:
        return set(keys_of(await ops.search(prefix, limit=100, **kwargs)))

    # "al" is a string prefix of "alice" but a different label: never mixed up.
    assert await keys(("users", "al")) == {"al-1", "al-note"}
    assert await keys(("users", "alice")) == {"alice-1", "alice-note"}
    assert await keys(("users", "al", "notes")) == {"al-note"}
    assert await keys(("users",)) == {"al-1", "al-note", "alice-1", "alice-note", "bob-1"}
    assert await keys(("users", "a")) == set()
    assert await keys(("al",)) == set()
    assert await keys(()) == set(layout.values())
    # A filter matching items everywhere still respects the prefix.
    assert await keys(("users", "al"), filter={"text": "same words everywhere"}) == {
        "al-1",
        "al-note",
    }
    for item in await ops.search(("users", "alice"), limit=100):
        assert item.namespace[:2] == ("users", "alice")


@case()
async def case_list_namespaces(store: BaseStore, ops: Ops) -> None:
    namespaces = [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("al", "x"),
        ("alice", "x"),
        ("z",),
    ]
    for ns in namespaces:
        await ops.put(ns, "k1", {"v": 1})
        await ops.put(ns, "k2", {"v": 2})  # two items: listed once

    every = await ops.list_namespaces()
    assert every == sorted(namespaces)
    assert await ops.list_namespaces(prefix=("a", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert await ops.list_namespaces(prefix=("al",)) == [("al", "x")]
    assert await ops.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert await ops.list_namespaces(suffix=("x",)) == [("al", "x"), ("alice", "x")]
    assert await ops.list_namespaces(prefix=("a",), suffix=("f",)) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
    ]
    assert await ops.list_namespaces(prefix=("a", "*", "f")) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
    ]
    assert await ops.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert await ops.list_namespaces(max_depth=1) == [("a",), ("al",), ("alice",), ("z",)]
    assert await ops.list_namespaces(prefix=("nope",)) == []

    pages: list[tuple[str, ...]] = []
    for offset in range(0, len(namespaces) + 3, 3):
        page = await ops.list_namespaces(limit=3, offset=offset)
        assert len(page) <= 3
        pages.extend(page)
    assert pages == every, "pages must cover every namespace once, in order"
    assert await ops.list_namespaces(limit=2) == every[:2]
    assert await ops.list_namespaces(offset=len(namespaces)) == []


@case(xfail={"inmemory": INMEMORY_EMPTY_NAMESPACES})
async def case_empty_namespaces_are_not_listed(store: BaseStore, ops: Ops) -> None:
    await ops.put(("keep",), "k", {"v": 1})
    await ops.put(("gone",), "k", {"v": 1})
    await ops.delete(("gone",), "k")
    assert await ops.get(("only-read",), "k") is None
    assert await ops.search(("only-searched",)) == []
    assert await ops.list_namespaces() == [("keep",)]


ODD_LABELS = [
    "with space",
    "slash/inside",
    "back\\slash",
    "colon:label",
    "unit\x1fseparator",
    "tab\tand\nnewline",
    "ünïcödé",
    "日本語",
    "🧠🔥",
    "quote'\"",
    "percent%s{}",
    "*",
    "-",
    "a" * 200,
]


@case()
async def case_odd_namespace_labels(store: BaseStore, ops: Ops) -> None:
    for i, label in enumerate(ODD_LABELS):
        await ops.put(("odd", label), f"key-{i}", {"label": label})
    for i, label in enumerate(ODD_LABELS):
        item = await ops.get(("odd", label), f"key-{i}")
        assert item is not None, f"label {label!r} did not round-trip"
        assert item.namespace == ("odd", label)
        assert item.value == {"label": label}
        found = await ops.search(("odd", label))
        assert [(x.namespace, x.key) for x in found] == [(("odd", label), f"key-{i}")]
    listed = await ops.list_namespaces(prefix=("odd",), limit=100)
    assert listed == sorted(("odd", label) for label in ODD_LABELS)


@case()
async def case_separators_never_merge_labels(store: BaseStore, ops: Ops) -> None:
    joined = ["a/b", "a\x1fb", "a:b", "a b", "a\\b", "a|b", "a\x1eb", "a,b"]
    for label in joined:
        await ops.put((label,), "k", {"label": label})
    await ops.put(("a", "b"), "k", {"label": "real two-label namespace"})
    item = await ops.get(("a", "b"), "k")
    assert item is not None and item.value == {"label": "real two-label namespace"}
    assert [(x.namespace, x.key) for x in await ops.search(("a",))] == [(("a", "b"), "k")]
    assert await ops.search(("a", "b", "k")) == []
    for label in joined:
        got = await ops.get((label,), "k")
        assert got is not None and got.value == {"label": label}, label
        assert [x.namespace for x in await ops.search((label,))] == [(label,)]


@case()
async def case_dotted_labels_never_alias_nested_namespaces(store: BaseStore, ops: Ops) -> None:
    # BaseStore forbids "." in labels; the store must reject it or keep it apart from
    # ("x", "y"): a label must never address another namespace.
    with pytest.raises(ValueError):
        await ops.put(("x.y",), "k", {"v": "dotted"})
    with contextlib.suppress(ValueError):
        await ops.batch([PutOp(("x.y",), "k", {"v": "dotted"})])
    assert await ops.get(("x", "y"), "k") is None
    assert await ops.search(("x",)) == []
    await ops.put(("x", "y"), "k", {"v": "nested"})
    try:
        got, searched = await ops.batch([GetOp(("x.y",), "k"), SearchOp(("x.y",))])
    except ValueError:
        return
    assert got is None or got.value == {"v": "dotted"}
    assert all(i.value == {"v": "dotted"} for i in searched)


# --------------------------------------------------------------------------- values


UNICODE_VALUE = {
    "cjk": "記憶は大切です",
    "rtl": "שלום עולם مرحبا",
    "emoji": "🧠💾🔁 👩🏽‍💻",
    "combining": "e\u0301 vs \u00e9",
    "controls": "nul\u0000bell\u0007tab\t",
    "astral_plane": "\U0001d518\U0001d52b\U0001d526 \U0001f600",
    "ключ": {"ñested": ["ü", "ß", "Ω"]},
}


@case()
async def case_unicode_keys_and_values(store: BaseStore, ops: Ops) -> None:
    ns = ("ünï", "👤")
    keys = ["ключ🔑", "with/slash", "with space", "dot.in.key", "x" * 300]
    for key in keys:
        await ops.put(ns, key, UNICODE_VALUE)
    for key in keys:
        item = await ops.get(ns, key)
        assert item is not None, key
        assert item.key == key
        assert item.value == UNICODE_VALUE
    assert sorted(keys_of(await ops.search(ns))) == sorted(keys)
    found = await ops.search(ns, filter={"cjk": "記憶は大切です"})
    assert sorted(keys_of(found)) == sorted(keys)


@case()
async def case_large_values(store: BaseStore, ops: Ops) -> None:
    ns = ("big",)
    blob = "".join(string.ascii_letters[i % 52] for i in range(200_000))
    structured = {"rows": [{"i": i, "s": f"row {i} ✓"} for i in range(3000)]}
    await ops.put(ns, "blob", {"text": blob, "kind": "blob"})
    await ops.put(ns, "rows", structured)
    item = await ops.get(ns, "blob")
    assert item is not None and item.value["text"] == blob
    rows = await ops.get(ns, "rows")
    assert rows is not None and rows.value == structured
    found = await ops.search(ns, filter={"kind": "blob"})
    assert keys_of(found) == ["blob"] and found[0].value["text"] == blob


# --------------------------------------------------------------------------- filters


def _filter_items() -> list[tuple[str, dict[str, Any]]]:
    items = []
    for i in range(10):
        value: dict[str, Any] = {
            "n": i,
            "score": i / 4,
            "cat": "even" if i % 2 == 0 else "odd",
            "flag": i % 3 == 0,
            "meta": {"lang": "en" if i < 5 else "fr", "level": i % 4},
        }
        if i == 9:
            del value["cat"]  # a missing field: matches $ne, never $eq
        items.append((f"i{i}", value))
    return items


FILTER_EXPECTATIONS: list[tuple[dict[str, Any], set[int]]] = [
    ({"cat": "even"}, {0, 2, 4, 6, 8}),
    ({"cat": {"$eq": "odd"}}, {1, 3, 5, 7}),
    ({"cat": {"$ne": "even"}}, {1, 3, 5, 7, 9}),
    ({"n": 4}, {4}),
    ({"n": {"$eq": 4}}, {4}),
    ({"n": {"$ne": 4}}, {0, 1, 2, 3, 5, 6, 7, 8, 9}),
    ({"n": {"$gt": 6}}, {7, 8, 9}),
    ({"n": {"$gte": 6}}, {6, 7, 8, 9}),
    ({"n": {"$lt": 2}}, {0, 1}),
    ({"n": {"$lte": 2}}, {0, 1, 2}),
    ({"n": {"$gte": 3, "$lte": 5}}, {3, 4, 5}),
    ({"n": {"$gt": 3, "$lt": 5}}, {4}),
    ({"score": {"$gt": 1.2}}, {5, 6, 7, 8, 9}),
    ({"score": {"$lte": 0.5}}, {0, 1, 2}),
    ({"n": {"$gte": 2.5}}, {3, 4, 5, 6, 7, 8, 9}),
    ({"flag": True}, {0, 3, 6, 9}),
    ({"flag": False}, {1, 2, 4, 5, 7, 8}),
    ({"cat": "even", "flag": True}, {0, 6}),
    ({"cat": "even", "n": {"$gt": 3}}, {4, 6, 8}),
    ({"meta": {"lang": "fr"}}, {5, 6, 7, 8, 9}),
    ({"meta": {"lang": "en", "level": 1}}, {1}),
    ({"meta": {"level": {"$gte": 2}}}, {2, 3, 6, 7}),
    ({"cat": "none-such"}, set()),
    ({"n": {"$gt": 100}}, set()),
    ({}, set(range(10))),
]


@case()
async def case_filters(store: BaseStore, ops: Ops) -> None:
    ns = ("filters", "x")
    for key, value in _filter_items():
        await ops.put(ns, key, value)
        # The same values elsewhere: filters must never reach outside the prefix.
        await ops.put(("filters", "other"), key, value)
    for flt, expected in FILTER_EXPECTATIONS:
        found = await ops.search(ns, filter=flt, limit=100)
        assert sorted(keys_of(found)) == sorted(f"i{i}" for i in expected), flt
        assert all(item.namespace == ns for item in found), flt


# --------------------------------------------------------------------------- pagination


async def _pages(ops: Ops, prefix: tuple[str, ...], size: int, **kwargs: Any) -> list[str]:
    out: list[str] = []
    for offset in range(0, 1000, size):
        page = await ops.search(prefix, limit=size, offset=offset, **kwargs)
        assert len(page) <= size
        out.extend(keys_of(page))
        if len(page) < size:
            return out
    raise AssertionError(f"paging {prefix} by {size} never ended: is offset ignored?")


@case()
async def case_pagination(store: BaseStore, ops: Ops) -> None:
    ns = ("pages",)
    for i in range(23):
        await ops.put(ns, f"p{i:02d}", {"i": i, "half": i < 12})
    await ops.put(("pages-not",), "x", {"i": 0, "half": True})
    full = keys_of(await ops.search(ns, limit=100))
    assert sorted(full) == [f"p{i:02d}" for i in range(23)]
    for size in (1, 5, 7, 23, 30):
        paged = await _pages(ops, ns, size)
        assert paged == full, f"page size {size}: pages must match one big search"
    half = keys_of(await ops.search(ns, filter={"half": True}, limit=100))
    assert sorted(half) == [f"p{i:02d}" for i in range(12)]
    assert await _pages(ops, ns, 5, filter={"half": True}) == half
    assert keys_of(await ops.search(ns, limit=4)) == full[:4]
    assert await ops.search(ns, offset=23) == []


@case(index=True)
async def case_pagination_with_query(store: BaseStore, ops: Ops) -> None:
    ns = ("qpages",)
    words = ["tea", "coffee", "water", "juice", "milk", "soda"]
    for i in range(18):
        text = " ".join(words[: 1 + i % 6]) + f" number {i}"
        await ops.put(ns, f"q{i:02d}", {"text": text, "i": i})
    ranked = keys_of(await ops.search(ns, query="tea coffee water", limit=100))
    assert sorted(ranked) == sorted(f"q{i:02d}" for i in range(18))
    assert await _pages(ops, ns, 4, query="tea coffee water") == ranked
    top = keys_of(await ops.search(ns, query="tea coffee water", limit=5, offset=5))
    assert top == ranked[5:10]


# --------------------------------------------------------------------------- batches


@case()
async def case_batch_mixing_ops(store: BaseStore, ops: Ops) -> None:
    ns = ("batch",)
    await ops.put(ns, "a", {"v": "a-old"})
    await ops.put(ns, "d", {"v": "d-old"})
    results = await ops.batch(
        [
            PutOp(ns, "b", {"v": "b-new"}),
            GetOp(ns, "a"),
            GetOp(ns, "b"),
            SearchOp(ns, None, 10, 0),
            ListNamespacesOp(match_conditions=(), max_depth=None, limit=10, offset=0),
            PutOp(ns, "a", {"v": "a-new"}),
            PutOp(ns, "c", {"v": "c-first"}),
            PutOp(ns, "c", {"v": "c-last"}),
            PutOp(ns, "d", None),
            PutOp(("batch", "sub"), "e", {"v": "e"}),
            GetOp(ns, "missing"),
        ]
    )
    assert len(results) == 11
    put_results = [results[i] for i in (0, 5, 6, 7, 8, 9)]
    assert put_results == [None] * 6
    # Reads in a batch see the store as it was before the batch's writes
    # (as InMemoryStore and PostgresStore do).
    got_a, got_b = results[1], results[2]
    assert got_a is not None and got_a.value == {"v": "a-old"}
    assert got_b is None
    assert sorted(keys_of(results[3])) == ["a", "d"]
    assert results[4] == [ns]
    assert results[10] is None
    # After the batch every write has landed; the last write to a key wins.
    after = {i.key: i.value for i in await ops.search(ns, limit=100)}
    assert after == {
        "a": {"v": "a-new"},
        "b": {"v": "b-new"},
        "c": {"v": "c-last"},
        "e": {"v": "e"},
    }
    assert await ops.list_namespaces() == [ns, ("batch", "sub")]
    assert await ops.batch([]) == []


@case()
async def case_batch_reads_only(store: BaseStore, ops: Ops) -> None:
    for i in range(5):
        await ops.put(("r", str(i)), "k", {"i": i})
    results = await ops.batch(
        [GetOp(("r", str(i)), "k") for i in range(5)]
        + [SearchOp(("r",), {"i": {"$gte": 3}}, 10, 0)]
    )
    assert [r.value["i"] for r in results[:5]] == [0, 1, 2, 3, 4]
    assert sorted(i.value["i"] for i in results[5]) == [3, 4]


# --------------------------------------------------------------------------- vectors


DOCS = {
    "tea": "Alice drinks green tea every morning",
    "allergy": "Alice is allergic to shellfish and peanuts",
    "python": "Alice writes Python code for data pipelines",
    "paris": "Alice moved to Paris in the spring",
    "dog": "Alice walks her dog named Biscuit",
}
QUERIES = {
    "shellfish peanuts allergic": "allergy",
    "Python code pipelines": "python",
    "dog named Biscuit": "dog",
    "green tea morning": "tea",
    "moved to Paris": "paris",
}


@case(index=True)
async def case_vector_search(store: BaseStore, ops: Ops) -> None:
    ns = ("vec", "alice")
    for key, text in DOCS.items():
        await ops.put(ns, key, {"text": text, "kind": "fact"})
    # The same texts in another user's namespace must never come back.
    for key, text in DOCS.items():
        await ops.put(("vec", "bob"), key, {"text": text, "kind": "fact"})
    for query, expected in QUERIES.items():
        found = await ops.search(ns, query=query, limit=3)
        assert len(found) == 3
        assert found[0].key == expected, f"{query!r} ranked {keys_of(found)}"
        assert all(i.namespace == ns for i in found)
        scores = [i.score for i in found]
        assert all(s is not None for s in scores), scores
        assert scores == sorted(scores, reverse=True), scores  # type: ignore[type-var]
    both = await ops.search(("vec",), query="shellfish peanuts allergic", limit=2)
    assert {i.namespace for i in both} == {("vec", "alice"), ("vec", "bob")}
    assert {i.key for i in both} == {"allergy"}
    filtered = await ops.search(
        ns, query="shellfish peanuts allergic", filter={"kind": "fact"}, limit=10
    )
    assert filtered[0].key == "allergy" and len(filtered) == len(DOCS)
    await ops.put(ns, "tea", {"text": "Alice now prefers black coffee", "kind": "fact"})
    updated = await ops.search(ns, query="black coffee prefers", limit=1)
    assert keys_of(updated) == ["tea"], "an update must re-embed the item"
    await ops.delete(ns, "allergy")
    gone = await ops.search(ns, query="shellfish peanuts allergic", limit=10)
    assert "allergy" not in keys_of(gone)


@case(index=True)
async def case_index_fields(store: BaseStore, ops: Ops) -> None:
    ns = ("fields",)
    # Only "text" is embedded by the store's config ...
    await ops.put(ns, "by-text", {"text": "rocket launch countdown", "title": "fruit salad"})
    await ops.put(ns, "by-title", {"text": "fruit salad recipe", "title": "rocket launch"})
    found = await ops.search(ns, query="rocket launch countdown", limit=2)
    assert keys_of(found)[0] == "by-text"
    # ... unless a put names its own fields.
    await ops.put(
        ns,
        "custom",
        {"text": "nothing relevant here", "summary": "quantum entanglement physics"},
        index=["summary"],
    )
    found = await ops.search(ns, query="quantum entanglement physics", limit=1)
    assert keys_of(found) == ["custom"]
    # index=False: not embedded, still stored, readable and filterable.
    await ops.put(ns, "plain", {"text": "quantum entanglement physics", "x": 1}, index=False)
    item = await ops.get(ns, "plain")
    assert item is not None and item.value["x"] == 1
    assert keys_of(await ops.search(ns, filter={"x": 1})) == ["plain"]
    top = await ops.search(ns, query="quantum entanglement physics", limit=1)
    assert keys_of(top) == ["custom"]


# --------------------------------------------------------------------------- TTL

TTL_SECONDS = 0.8
TTL_MINUTES = TTL_SECONDS / 60


@case(ttl=True)
async def case_ttl_expiry_and_refresh(store: BaseStore, ops: Ops) -> None:
    ns = ("ttl",)
    await ops.put(ns, "read", {"v": 1}, ttl=TTL_MINUTES)
    await ops.put(ns, "searched", {"v": 2, "tag": "s"}, ttl=TTL_MINUTES)
    await ops.put(ns, "untouched", {"v": 3}, ttl=TTL_MINUTES)
    await ops.put(ns, "no-refresh", {"v": 4}, ttl=TTL_MINUTES)
    await ops.put(ns, "forever", {"v": 5})
    # Keep two items alive by reading them well past their original TTL.
    for _ in range(4):
        await ops.sleep(TTL_SECONDS * 0.4)
        assert await ops.get(ns, "read") is not None
        assert keys_of(await ops.search(ns, filter={"tag": "s"})) == ["searched"]
        await ops.get(ns, "no-refresh", refresh_ttl=False)
    # 1.6 x TTL has passed: items nobody refreshed are gone from get and search.
    assert await ops.get(ns, "untouched") is None
    assert await ops.get(ns, "no-refresh") is None
    assert sorted(keys_of(await ops.search(ns, limit=10))) == ["forever", "read", "searched"]
    # Without reads, the refreshed ones expire too; items without TTL stay.
    await ops.sleep(TTL_SECONDS * 1.5)
    assert await ops.get(ns, "read", refresh_ttl=False) is None
    assert keys_of(await ops.search(ns, limit=10)) == ["forever"]
    item = await ops.get(ns, "forever")
    assert item is not None and item.value == {"v": 5}


@case(ttl=True)
async def case_ttl_put_refreshes_and_none_clears(store: BaseStore, ops: Ops) -> None:
    ns = ("ttl2",)
    await ops.put(ns, "k", {"v": 1}, ttl=TTL_MINUTES)
    await ops.sleep(TTL_SECONDS * 0.6)
    await ops.put(ns, "k", {"v": 2}, ttl=TTL_MINUTES)  # a write restarts the clock
    await ops.sleep(TTL_SECONDS * 0.6)
    item = await ops.get(ns, "k", refresh_ttl=False)
    assert item is not None and item.value == {"v": 2}
    await ops.put(ns, "k", {"v": 3}, ttl=None)  # and ttl=None makes it permanent
    await ops.sleep(TTL_SECONDS * 1.3)
    item = await ops.get(ns, "k", refresh_ttl=False)
    assert item is not None and item.value == {"v": 3}
