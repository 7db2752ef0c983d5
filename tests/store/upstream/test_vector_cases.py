"""LangGraph's vector-search store cases: auto-embedding, updates, filters, paths, scores."""

from __future__ import annotations

import math

import pytest
from langgraph.store.base import BaseStore
from upstream_support import CharacterEmbeddings, MakeStore, by_design

DOCS = [
    ("doc1", {"text": "short text"}),
    ("doc2", {"text": "longer text document"}),
    ("doc3", {"text": "longest text document here"}),
    ("doc4", {"description": "text in description field"}),
    ("doc5", {"content": "text in content field"}),
    ("doc6", {"body": "text in body field"}),
]


def test_insert_with_auto_embedding(store: BaseStore) -> None:
    for key, value in DOCS:
        store.put(("test",), key, value)
    keys = [r.key for r in store.search(("test",), query="long text")]
    assert "doc2" in keys and "doc3" in keys


async def test_async_insert_with_auto_embedding(store: BaseStore) -> None:
    for key, value in DOCS:
        await store.aput(("test",), key, value)
    keys = [r.key for r in await store.asearch(("test",), query="long text")]
    assert "doc2" in keys and "doc3" in keys


def test_update_with_embedding(store: BaseStore) -> None:
    store.put(("test",), "doc1", {"text": "zany zebra Xerxes"})
    store.put(("test",), "doc2", {"text": "something about dogs"})
    store.put(("test",), "doc3", {"text": "text about birds"})
    initial = store.search(("test",), query="Zany Xerxes")
    assert initial[0].key == "doc1"
    initial_score = initial[0].score
    assert initial_score is not None
    store.put(("test",), "doc1", {"text": "new text about dogs"})
    after = store.search(("test",), query="Zany Xerxes")
    after_score = next((r.score for r in after if r.key == "doc1"), 0.0)
    assert after_score is not None and after_score < initial_score
    for r in store.search(("test",), query="new text about dogs"):
        if r.key == "doc1":
            assert r.score is not None and r.score > after_score
    store.put(("test",), "doc4", {"text": "new text about dogs"}, index=False)
    found = store.search(("test",), query="new text about dogs", limit=3)
    assert not any(r.key == "doc4" for r in found)


FILTER_DOCS = [
    ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
    ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
    ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
    ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
]


def test_search_with_filters(store: BaseStore) -> None:
    for key, value in FILTER_DOCS:
        store.put(("test",), key, value)
    results = store.search(("test",), query="apple", filter={"color": "red"})
    assert len(results) == 2 and results[0].key == "doc1"
    results = store.search(("test",), query="car", filter={"color": "red"})
    assert len(results) == 2 and results[0].key == "doc2"
    results = store.search(("test",), query="bbbbluuu", filter={"score": {"$gt": 3.2}})
    assert len(results) == 3 and results[0].key == "doc4"
    results = store.search(
        ("test",), query="apple", filter={"score": {"$gte": 4.0}, "color": "green"}
    )
    assert [r.key for r in results] == ["doc3"]


def test_search_pagination(store: BaseStore) -> None:
    for i in range(5):
        store.put(("test",), f"doc{i}", {"text": f"test document number {i}"})
    page1 = store.search(("test",), query="test", limit=2)
    page2 = store.search(("test",), query="test", limit=2, offset=2)
    assert len(page1) == len(page2) == 2
    assert not {r.key for r in page1} & {r.key for r in page2}
    assert page1[0].score >= page1[1].score and page2[0].score >= page2[1].score  # type: ignore
    every = store.search(("test",), query="test", limit=10)
    assert len(every) == 5 and every[0].score >= every[2].score  # type: ignore[operator]


def test_search_edge_cases(store: BaseStore) -> None:
    store.put(("test",), "doc1", {"text": "test document"})
    for query in ("", None, "test " * 100, "test!@#$%^&*()"):
        assert len(store.search(("test",), query=query)) == 1


PATH_DOCS = {
    "doc1": {"key1": "xxx", "key2": "yyy", "key3": "zzz"},
    "doc2": {"key0": "uuu", "key1": "vvv", "key2": "www", "key3": "xxx"},
}


def test_embed_with_path(make_store: MakeStore) -> None:
    store = make_store(fields=["key0", "key1", "key3"])
    for key, value in PATH_DOCS.items():
        store.put(("test",), key, value)
    results = store.search(("test",), query="uuu")
    assert results[0].key == "doc2" and results[0].score > results[1].score  # type: ignore
    results = store.search(("test",), query="zzz")
    assert results[0].key == "doc1" and results[0].score > results[1].score  # type: ignore
    results = store.search(("test",), query="www")  # not embedded: low for both
    assert len(results) == 2 and all(r.score < 0.9 for r in results)  # type: ignore[operator]


def test_embed_with_path_exact_match_scores_above_point_nine(make_store: MakeStore) -> None:
    store = make_store(fields=["key0", "key1", "key3"])
    for key, value in PATH_DOCS.items():
        store.put(("test",), key, value)
    results = store.search(("test",), query="xxx")
    assert len(results) == 2 and results[0].key != results[1].key
    assert results[0].score > 0.9 and results[1].score > 0.9  # type: ignore[operator]


def test_embed_with_operation_level_paths(make_store: MakeStore) -> None:
    store = make_store(fields=["key17"])
    store.put(
        ("test",), "doc3", {"key0": "aaa", "key1": "bbb", "key2": "ccc"}, index=["key0", "key1"]
    )
    store.put(
        ("test",), "doc4", {"key0": "eee", "key1": "bbb", "key3": "ggg"}, index=["key1", "key3"]
    )
    results = store.search(("test",), query="aaa")
    assert results[0].key == "doc3" and results[0].score > results[1].score  # type: ignore
    results = store.search(("test",), query="ggg")
    assert results[0].key == "doc4" and results[0].score > results[1].score  # type: ignore
    results = store.search(("test",), query="bbb")
    assert abs(results[0].score - results[1].score) < 0.1  # type: ignore[operator]
    results = store.search(("test",), query="ccc")
    assert all(r.score < 0.9 for r in results)  # type: ignore[operator]
    store.put(("test",), "doc5", {"key0": "hhh", "key1": "iii"}, index=False)
    assert any(r.key == "doc5" for r in store.search(("test",)))


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


@by_design(
    "scores are calibrated to [0, 1]: (1 + cosine) / 2 in dense mode, a blend in hybrid "
    "mode, never the raw cosine similarity"
)
@pytest.mark.parametrize("query", ["bbb", "abcd", "poisson"])  # "aaa": 1.0 on both scales
def test_scores_are_the_raw_cosine(make_store: MakeStore, query: str) -> None:
    store = make_store(fields=["key0"])
    store.put(("test",), "doc", {"key0": "aaa"}, index=["key0", "key1"])
    embed = CharacterEmbeddings(dims=500)
    expected = _cosine(embed.embed_query("aaa"), embed.embed_query(query))
    results = store.search((), query=query)
    assert len(results) == 1
    assert results[0].score == pytest.approx(expected, abs=1e-3)


@pytest.mark.parametrize("query", ["aaa", "bbb", "abcd", "poisson"])
def test_dense_scores_are_the_calibrated_cosine(
    make_store: MakeStore, setting: tuple[str, str], query: str
) -> None:
    # The same case, with the score this store documents for dense mode.
    store = make_store(fields=["key0"])
    store.put(("test",), "doc", {"key0": "aaa"}, index=["key0", "key1"])
    embed = CharacterEmbeddings(dims=500)
    expected = (1 + _cosine(embed.embed_query("aaa"), embed.embed_query(query))) / 2
    (hit,) = store.search((), query=query, retrieval="dense")  # type: ignore[call-arg]
    assert hit.score == pytest.approx(expected, abs=1e-3)
    (hybrid,) = store.search((), query=query)
    assert hybrid.score is not None and 0 < hybrid.score <= 1
