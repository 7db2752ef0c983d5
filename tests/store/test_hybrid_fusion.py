"""Hybrid search on both Qdrant engines: fusion settings, lexical fields, payload fetches."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.store.base import SearchOp

from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.stores import QdrantMemoryStore
from langchain_tiered_memory.stores.filters import Where
from langchain_tiered_memory.stores.fusion import DEFAULT_FUSION, FusionConfig
from langchain_tiered_memory.stores.plan import Planner
from langchain_tiered_memory.stores.requests import Hit, QueryBatch, Retrieve
from langchain_tiered_memory.stores.search import fuse_hybrid, search_pages
from langchain_tiered_memory.testing.fakes import HashingEmbeddings

NS = ("docs", "alice")


def _index(fields: list[str] | None = None) -> Any:
    return {"dims": 64, "embed": HashingEmbeddings(size=64), "fields": fields or ["text"]}


def _open(kind: str, tmp_path: Any, **options: Any) -> QdrantMemoryStore:
    if kind == "embedded":
        return QdrantMemoryStore.embedded(tmp_path / "store", index=_index(), **options)
    from qdrant_client import QdrantClient

    store = QdrantMemoryStore.from_client(QdrantClient(":memory:"), index=_index(), **options)
    store._owns_engine = True  # close the throwaway client with the store
    return store


@pytest.fixture(params=["embedded", "client-local"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_default_fusion_keeps_the_margin_of_a_strong_lexical_match() -> None:
    # "a" is far ahead lexically and a close second densely: score fusion ranks it first,
    # where rank fusion would tie it with "b" (first in dense, second in lexical).
    dense = [Hit("b", 0.52, {}), Hit("a", 0.50, {}), Hit("c", 0.10, {})]
    lexical = [Hit("a", 9.0, {}), Hit("b", 1.0, {}), Hit("c", 0.9, {})]
    fused = fuse_hybrid(dense, lexical, DEFAULT_FUSION)
    assert [h.id for h, _ in fused] == ["a", "b", "c"]
    rrf = fuse_hybrid(dense, lexical, FusionConfig(method="rrf"))
    assert rrf[0][1] == pytest.approx(rrf[1][1])  # a and b tie under RRF


def test_fusion_weights_follow_the_config() -> None:
    dense = [Hit("d", 0.9, {}), Hit("l", 0.1, {})]
    lexical = [Hit("l", 5.0, {}), Hit("d", 0.5, {})]
    dense_heavy = FusionConfig(weights={"dense": 1.0, "lexical": 0.1}, normalization="zscore")
    lexical_heavy = FusionConfig(weights={"dense": 0.1, "lexical": 1.0}, normalization="zscore")
    assert fuse_hybrid(dense, lexical, dense_heavy)[0][0].id == "d"
    assert fuse_hybrid(dense, lexical, lexical_heavy)[0][0].id == "l"


def test_a_query_without_lexical_candidates_ranks_by_dense_alone() -> None:
    dense = [Hit("x", 0.9, {}), Hit("y", 0.2, {})]
    assert [h.id for h, _ in fuse_hybrid(dense, [], DEFAULT_FUSION)] == ["x", "y"]
    assert fuse_hybrid([], [], DEFAULT_FUSION) == []


def test_equal_fused_scores_are_ordered_by_id() -> None:
    dense = [Hit("z", 0.5, {}), Hit("a", 0.5, {})]
    assert [h.id for h, _ in fuse_hybrid(dense, [], DEFAULT_FUSION)] == ["a", "z"]


def test_hybrid_candidates_carry_no_payload_and_only_the_page_is_fetched() -> None:
    op = SearchOp(NS, query="shellfish allergy", limit=2)
    plan = search_pages([(op, Where(), "hybrid")], {"shellfish allergy": [0.1] * 4}, DEFAULT_FUSION)
    batch = next(plan)
    assert isinstance(batch, QueryBatch)
    assert [q.mode for q in batch.queries] == ["dense", "lexical"]
    assert all(q.fields == [] for q in batch.queries)
    dense = [Hit(f"p{i}", 1.0 - i / 10, {}) for i in range(5)]
    lexical = [Hit("p3", 4.0, {}), Hit("p0", 3.0, {})]
    fetch = plan.send([dense, lexical])
    assert isinstance(fetch, Retrieve)
    assert len(fetch.ids) == 2  # the page, not the 7 candidates
    payloads = {pid: {"key": pid} for pid in fetch.ids[:1]}  # the other one was just deleted
    with pytest.raises(StopIteration) as done:
        plan.send(payloads)
    (page,) = done.value.value
    assert [hit.id for hit, _ in page] == fetch.ids[:1]
    assert page[0][0].payload == {"key": fetch.ids[0]}


def test_store_fusion_setting_changes_the_ranking(kind: str, tmp_path: Any) -> None:
    texts = {
        "m1": "Alice is allergic to shellfish and shrimp",
        "m2": "Alice likes seafood restaurants by the sea",
        "m3": "Bob repairs bicycles on weekends",
    }
    orders = {}
    for name, fusion in (("score", DEFAULT_FUSION), ("rrf", FusionConfig(method="rrf"))):
        with _open(kind, tmp_path / name, fusion=fusion) as store:
            for key, text in texts.items():
                store.put(NS, key, {"text": text})
            hits = store.search(NS, query="shellfish allergy", limit=3)
            assert hits[0].key == "m1"
            assert all(h.value["text"] == texts[h.key] for h in hits)
            orders[name] = [(h.key, h.score) for h in hits]
    rrf_top = orders["rrf"][0][1]
    assert rrf_top is not None and rrf_top <= 2 / 61  # reciprocal-rank scores
    score_top = orders["score"][0][1]
    assert score_top is not None and score_top > 2 / 61  # z-scores of a clear winner


def test_lexical_fields_index_other_text_than_the_embedded_one(kind: str, tmp_path: Any) -> None:
    lexical = {"text": 2, "context": 1}
    with _open(kind, tmp_path, lexical_fields=lexical) as store:
        store.put(NS, "t2", {"text": "Yes, it went well!", "context": "How was the pottery class?"})
        store.put(NS, "t9", {"text": "I painted a sunset yesterday."})
        hits = store.search(NS, query="pottery class", limit=2, retrieval="lexical")
        assert [h.key for h in hits] == ["t2"]  # found through its context only
        # A value without any lexical field is BM25-indexed on its embedded text.
        assert store.search(NS, query="sunset", limit=2, retrieval="lexical")[0].key == "t9"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"fusion": "rrf"}, "FusionConfig"),
        ({"fusion": FusionConfig(weights={"bm25": 1.0})}, "'dense' and 'lexical'"),
        ({"lexical_fields": {"text": 0}}, "from 1 to 10"),
        ({"lexical_fields": {"text": True}}, "from 1 to 10"),
        ({"lexical_fields": [""]}, "non-empty"),
        ({"lexical_idf": "filtered"}, "'namespace' or 'global'"),
    ],
)
def test_bad_search_settings_are_refused_with_a_fix(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        Planner(collection="m", index=_index(), retrieval="hybrid", **options)


def _lexical_scores(store: QdrantMemoryStore, ns: tuple[str, ...]) -> dict[str, float]:
    hits = store.search(ns, query="compiler", limit=10, retrieval="lexical")
    return {h.key: float(h.score or 0.0) for h in hits}


@pytest.mark.parametrize("idf", ["namespace", "global"])
def test_namespace_idf_keeps_a_tenants_bm25_scores_its_own(
    kind: str, idf: str, tmp_path: Any
) -> None:
    store = _open(kind, tmp_path, lexical_idf=idf)
    try:
        bob = ("docs", "bob")
        store.put(NS, "a", {"text": "the rust compiler is slow today"})
        store.put(NS, "b", {"text": "rust never sleeps"})
        store.put(NS, "c", {"text": "weekly planning notes"})
        before = _lexical_scores(store, NS)
        # Another tenant writes many documents about the compiler.
        for i in range(30):
            store.put(bob, f"k{i}", {"text": f"compiler note {i}"})
        after = _lexical_scores(store, NS)
        assert set(after) == set(before) == {"a"}  # results never cross tenants
        a_ratio = after["a"] / before["a"]
        if idf == "namespace":  # the default: statistics of alice's own points only
            assert a_ratio == pytest.approx(1.0, rel=1e-4)
        else:  # "compiler" became common in the collection: worth less
            assert a_ratio < 0.9
    finally:
        store.close()
