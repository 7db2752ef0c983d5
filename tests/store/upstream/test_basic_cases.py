"""LangGraph's store cases without vectors: namespaces, batches, filters, pagination."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from upstream_support import MakeStore

DOC = {"foo": "bar"}


def test_cannot_put_invalid_namespaces(store: BaseStore) -> None:
    for namespace in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(namespace, "foo", DOC)
        with pytest.raises(InvalidNamespaceError):
            asyncio.run(store.aput(namespace, "foo", DOC))
    store.put(("foo", "langgraph", "foo"), "bar", DOC)
    item = store.get(("foo", "langgraph", "foo"), "bar")
    assert item is not None and item.value == DOC
    assert store.search(("foo", "langgraph", "foo"))[0].value == DOC
    store.delete(("foo", "langgraph", "foo"), "bar")
    assert store.get(("foo", "langgraph", "foo"), "bar") is None


def test_reserved_root_through_batch(store: BaseStore) -> None:
    # The public put refuses a "langgraph" root; a raw PutOp is let through.
    store.batch([PutOp(("langgraph", "foo"), "bar", DOC)])
    item = store.get(("langgraph", "foo"), "bar")
    assert item is not None and item.value == DOC
    store.delete(("langgraph", "foo"), "bar")
    assert store.get(("langgraph", "foo"), "bar") is None


NAMESPACES = [
    ("a", "b", "c"),
    ("a", "b", "d", "e"),
    ("a", "b", "d", "i"),
    ("a", "b", "f"),
    ("a", "c", "f"),
    ("b", "a", "f"),
    ("users", "123"),
    ("users", "456", "settings"),
    ("admin", "users", "789"),
]


def test_list_namespaces_basic(store: BaseStore) -> None:
    for i, ns in enumerate(NAMESPACES):
        store.put(ns, f"id_{i}", {"data": f"value_{i:02d}"})
    assert sorted(store.list_namespaces(prefix=("a", "b"))) == sorted(NAMESPACES[:4])
    assert sorted(store.list_namespaces(suffix=("f",))) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert sorted(store.list_namespaces(prefix=("a",), suffix=("f",))) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
    ]
    assert sorted(store.list_namespaces(prefix=("a", "b"), max_depth=3)) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == NAMESPACES[:2]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == NAMESPACES[2:4]
    assert sorted(store.list_namespaces(prefix=("a", "*", "f"))) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
    ]
    assert len(store.list_namespaces(suffix=("*", "f"))) == 3
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    assert store.list_namespaces(prefix=("users", "123")) == [("users", "123")]


def test_list_namespaces_with_wildcards(store: BaseStore) -> None:
    namespaces = [
        ("users", "123"),
        ("users", "456"),
        ("users", "789", "settings"),
        ("admin", "users", "789"),
        ("guests", "123"),
        ("guests", "456", "preferences"),
    ]
    for i, ns in enumerate(namespaces):
        store.put(ns, f"id_{i}", {"data": f"value_{i:02d}"})
    assert sorted(store.list_namespaces(prefix=("users", "*"))) == namespaces[:3]
    assert store.list_namespaces(suffix=("*", "preferences")) == [("guests", "456", "preferences")]
    assert store.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []


def test_list_namespaces_pagination_depth_and_empty(make_store: MakeStore) -> None:
    store = make_store()
    assert store.list_namespaces() == []
    for i in range(20):
        store.put(("namespace", f"sub_{i:02d}"), f"id_{i:02d}", {"data": i})
    for offset in (0, 5, 15):
        got = store.list_namespaces(prefix=("namespace",), limit=5, offset=offset)
        assert got == [("namespace", f"sub_{i:02d}") for i in range(offset, offset + 5)]
    other = make_store()
    for i, ns in enumerate(
        [
            ("a", "b", "c", "d"),
            ("a", "b", "c", "e"),
            ("a", "b", "f"),
            ("a", "g"),
            ("h", "i", "j", "k"),
        ]
    ):
        other.put(ns, f"id_{i}", {"data": i})
    assert sorted(other.list_namespaces(max_depth=2)) == [("a", "b"), ("a", "g"), ("h", "i")]


def test_batch_order(store: BaseStore) -> None:
    store.put(("test", "foo"), "key1", {"data": "value1"})
    store.put(("test", "bar"), "key2", {"data": "value2"})
    results = store.batch(
        [
            GetOp(("test", "foo"), "key1"),
            PutOp(("test", "bar"), "key2", {"data": "value2"}),
            SearchOp(("test",), {"data": "value1"}, 10, 0),
            ListNamespacesOp(None, None, 10, 0),
            GetOp(("test",), "key3"),
        ]
    )
    assert isinstance(results[0], Item) and results[0].value == {"data": "value1"}
    assert results[1] is None
    assert [i.key for i in results[2]] == ["key1"]  # type: ignore[union-attr]
    assert {("test", "foo"), ("test", "bar")} <= set(results[3])  # type: ignore[arg-type]
    assert results[4] is None
    again = store.batch(
        [
            SearchOp(("test",), None, 5, 0),
            GetOp(("test", "bar"), "key2"),
            ListNamespacesOp(None, None, 5, 0),
            PutOp(("test",), "key3", {"data": "value3"}),
            GetOp(("test", "foo"), "key1"),
        ]
    )
    assert len(again[0]) >= 2  # type: ignore[arg-type]
    assert isinstance(again[1], Item) and again[1].value == {"data": "value2"}
    assert again[3] is None
    assert isinstance(again[4], Item) and again[4].key == "key1"
    item = store.get(("test",), "key3")
    assert item is not None and item.value == {"data": "value3"}


def test_batch_puts_gets_and_deletes(store: BaseStore) -> None:
    assert store.batch(
        [
            PutOp(("test",), "key1", {"data": "value1"}),
            PutOp(("test",), "key2", {"data": "value2"}),
            PutOp(("test",), "key3", None),
        ]
    ) == [None, None, None]
    got = store.batch(
        [GetOp(("test",), "key1"), GetOp(("test",), "key2"), GetOp(("test",), "key3")]
    )
    assert [g.key if g else None for g in got] == ["key1", "key2", None]  # type: ignore[union-attr]


def test_batch_search_and_list_ops(store: BaseStore) -> None:
    for ns, key, value in [
        (("test", "foo"), "key1", {"data": "value1", "tag": "a"}),
        (("test", "bar"), "key2", {"data": "value2", "tag": "a"}),
        (("test", "baz"), "key3", {"data": "value3", "tag": "b"}),
    ]:
        store.put(ns, key, value)
    tagged, two, foo = store.batch(
        [
            SearchOp(("test",), {"tag": "a"}, 10, 0),
            SearchOp(("test",), None, 2, 0),
            SearchOp(("test", "foo"), None, 10, 0),
        ]
    )
    assert len(tagged) == 2 and all(i.value["tag"] == "a" for i in tagged)  # type: ignore
    assert len(two) == 2  # type: ignore[arg-type]
    assert [i.namespace for i in foo] == [("test", "foo")]  # type: ignore[union-attr]
    every, shallow, public = store.batch(
        [
            ListNamespacesOp(None, None, 10, 0),
            ListNamespacesOp(None, 2, 10, 0),
            ListNamespacesOp((MatchCondition("suffix", ("foo",)),), None, 10, 0),
        ]
    )
    assert len(every) == 3  # type: ignore[arg-type]
    assert all(len(ns) <= 2 for ns in shallow)  # type: ignore[union-attr]
    assert public == [("test", "foo")]


def test_basic_ops_and_search_filters(store: BaseStore) -> None:
    ns = ("test", "documents")
    store.put(ns, "doc1", {"title": "Test Document", "content": "Hello, World!"})
    first = store.get(ns, "doc1")
    assert first is not None and first.namespace == ns and first.key == "doc1"
    store.put(ns, "doc1", {"title": "Updated Document", "content": "Hello, Updated!"})
    updated = store.get(ns, "doc1")
    assert updated is not None and updated.value["title"] == "Updated Document"
    assert updated.updated_at >= first.updated_at and updated.created_at == first.created_at
    assert store.get(("test", "other_documents"), "doc1") is None
    store.delete(ns, "doc1")
    assert store.get(ns, "doc1") is None
    data = [
        (
            ("test", "docs"),
            "doc1",
            {"title": "First Doc", "author": "Alice", "tags": ["important"]},
        ),
        (("test", "docs"), "doc2", {"title": "Second Doc", "author": "Bob", "tags": ["draft"]}),
        (("test", "images"), "img1", {"title": "Image 1", "author": "Alice", "tags": ["final"]}),
    ]
    for namespace, key, value in data:
        store.put(namespace, key, value)
    assert len(store.search(("test",))) == 3
    assert {i.key for i in store.search(("test", "docs"))} == {"doc1", "doc2"}
    assert {i.key for i in store.search(("test",), filter={"author": "Alice"})} == {"doc1", "img1"}
    assert len(store.search(("test",), limit=2)) == 2
    assert len(store.search(("test",), offset=2)) == 1


def test_numeric_filter_operators(store: BaseStore) -> None:
    for i, score in enumerate([4.5, 3.0, 4.0, 3.5]):
        store.put(("f",), f"d{i}", {"score": score, "color": "red" if i < 2 else "blue"})
    keys = lambda flt: sorted(i.key for i in store.search(("f",), filter=flt))  # noqa: E731
    assert keys({"score": {"$gt": 3.2}}) == ["d0", "d2", "d3"]
    assert keys({"score": {"$gte": 4.0}, "color": "blue"}) == ["d2"]
    assert keys({"score": {"$lt": 3.5}}) == ["d1"]
    assert keys({"score": {"$lte": 3.5}}) == ["d1", "d3"]
    assert keys({"color": {"$ne": "red"}}) == ["d2", "d3"]
    assert keys({"score": {"$eq": 3.0}}) == ["d1"]
    assert keys({"score": {"$lt": float("inf")}}) == ["d0", "d1", "d2", "d3"]
    assert keys({"score": {"$gt": -float("inf")}}) == ["d0", "d1", "d2", "d3"]
    assert keys({"score": {"$eq": float("nan")}}) == []


async def test_async_basic_ops(store: BaseStore) -> None:
    ns = ("test", "async")
    await store.aput(ns, "k", {"a": 1})
    item = await store.aget(ns, "k")
    assert item is not None and item.value == {"a": 1}
    assert [i.key for i in await store.asearch(("test",))] == ["k"]
    assert await store.alist_namespaces(prefix=("test",)) == [ns]
    await store.adelete(ns, "k")
    assert await store.aget(ns, "k") is None


async def test_async_concurrent_writes_and_reads(store: BaseStore) -> None:
    docs = [(f"doc{i}", {"text": f"item {i}", "index": i}) for i in range(50)]
    await asyncio.gather(*[store.aput(("test",), k, v) for k, v in docs])
    await asyncio.gather(*[store.adelete(("test",), k) for k, _ in docs[:25]])
    got = await asyncio.gather(*[store.aget(("test",), k) for k, _ in docs])
    assert [g is None for g in got] == [True] * 25 + [False] * 25
    found = await store.asearch(("test",), filter={"index": {"$gt": 40}}, limit=100)
    assert sorted(i.value["index"] for i in found) == list(range(41, 50))


@pytest.mark.parametrize(
    "engine",
    ["embedded", pytest.param("client-local", marks=pytest.mark.slow)],  # local mode: minutes
)
def test_large_batches(engine: str, tmp_path: Path) -> None:
    from store_support import StoreFactory, fast_tmp_dir

    directory = fast_tmp_dir(tmp_path / "stores")
    factory = StoreFactory(engine, directory)
    try:
        store = factory()
        ops = [PutOp(("big", f"n{i % 10}"), f"k{i}", {"i": i}) for i in range(2000)]
        assert store.batch(ops) == [None] * len(ops)
        got = store.batch([GetOp(("big", f"n{i % 10}"), f"k{i}") for i in range(0, 2000, 7)])
        assert [g.value["i"] for g in got] == list(range(0, 2000, 7))  # type: ignore[union-attr]
        assert len(store.search(("big",), filter={"i": {"$gte": 1000}}, limit=2000)) == 1000
        assert len(store.list_namespaces(prefix=("big",))) == 10
    finally:
        factory.close_all()
        shutil.rmtree(directory, ignore_errors=True)
