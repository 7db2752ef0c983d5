"""Hybrid search on both Qdrant engines: fusion settings, lexical fields, payload fetches."""

from __future__ import annotations

import random
from dataclasses import replace
from itertools import pairwise
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
    dense_heavy = replace(DEFAULT_FUSION, weights={"dense": 1.0, "lexical": 0.1})
    lexical_heavy = replace(DEFAULT_FUSION, weights={"dense": 0.1, "lexical": 1.0})
    assert fuse_hybrid(dense, lexical, dense_heavy)[0][0].id == "d"
    assert fuse_hybrid(dense, lexical, lexical_heavy)[0][0].id == "l"


def test_a_query_without_lexical_terms_ranks_by_dense_alone() -> None:
    dense = [Hit("x", 0.9, {}), Hit("y", 0.2, {})]
    fused = fuse_hybrid(dense, None, DEFAULT_FUSION)
    assert [(h.id, s) for h, s in fused] == [("x", pytest.approx(0.95)), ("y", pytest.approx(0.6))]
    assert fuse_hybrid([], None, DEFAULT_FUSION) == []
    assert fuse_hybrid([], [], DEFAULT_FUSION) == []


def test_equal_fused_scores_are_ordered_by_id() -> None:
    dense = [Hit("z", 0.5, {}), Hit("a", 0.5, {})]
    assert [h.id for h, _ in fuse_hybrid(dense, [], DEFAULT_FUSION)] == ["a", "z"]


def test_a_rare_lexical_match_is_not_ranked_last() -> None:
    # Only "d" holds the rare query word: BM25 returns a and d, nearly tied, and no
    # other document. The lexical match must count for d; b and c have none.
    dense = [Hit("a", 0.62, {}), Hit("b", 0.60, {}), Hit("c", 0.59, {}), Hit("d", 0.58, {})]
    lexical = [Hit("a", 1.937, {}), Hit("d", 1.906, {})]
    for depth in (None, 100):  # BM25 returned fewer than asked: every match
        fused = fuse_hybrid(dense, lexical, DEFAULT_FUSION, depth)
        assert [h.id for h, _ in fused] == ["a", "d", "b", "c"]
        assert all(0 < s <= 1 for _, s in fused)


def _twins(side: str, depth: int | None) -> tuple[list[Hit], list[Hit]]:
    """p and q tie on the other side; ``side`` returned p (and r), not q."""
    scored = {"dense": (0.7, 0.2), "lexical": (5.0, 0.3)}
    top, low = scored[side]
    this = [Hit("r", top, {}), Hit("p", low, {})]
    tie = scored["lexical" if side == "dense" else "dense"][0]
    other = [Hit("p", tie, {}), Hit("q", tie, {})]
    this = this[: depth or 2]
    return (this, other) if side == "dense" else (other, this)


@pytest.mark.parametrize("depth", [None, 2, 1])
@pytest.mark.parametrize("side", ["dense", "lexical"])
def test_a_document_one_side_did_not_return_ranks_below_those_it_did(
    side: str, depth: int | None
) -> None:
    # depth None: each side returned every match; 2 or 1: it was cut at that depth.
    dense, lexical = _twins(side, depth)
    fused = dict((h.id, s) for h, s in fuse_hybrid(dense, lexical, DEFAULT_FUSION, depth))
    returned = {h.id for h in (dense if side == "dense" else lexical)}
    for missed in fused.keys() - returned:
        for got in returned & {"p"}:
            assert fused[missed] < fused[got]
    assert all(0 < s <= 1 for s in fused.values())


@pytest.mark.parametrize("sides", [(1, 1), (1, 0), (2, 1), (2, 2), (1, 2), (0, 2), (0, 1)])
def test_fusion_is_well_defined_with_one_or_two_candidates(sides: tuple[int, int]) -> None:
    dense = [Hit(f"p{i}", 0.7 - i / 10, {}) for i in range(sides[0])]
    lexical = [Hit(f"p{i + 1}", 3.0 - i, {}) for i in range(sides[1])]
    for depth in (None, 2):
        fused = fuse_hybrid(dense, lexical, DEFAULT_FUSION, depth)
        assert fused and all(0 < s <= 1 for _, s in fused)
        assert len({h.id for h, _ in fused}) == len(fused)


def test_scores_stay_in_the_unit_interval_and_follow_each_side() -> None:
    rng = random.Random(7)
    for _ in range(200):
        ids = [f"p{i}" for i in range(rng.randint(1, 12))]
        dense = sorted(
            (Hit(i, rng.uniform(-1, 1), {}) for i in rng.sample(ids, rng.randint(0, len(ids)))),
            key=lambda h: -h.score,
        )
        lexical = sorted(
            (Hit(i, rng.uniform(0.01, 30), {}) for i in rng.sample(ids, rng.randint(1, len(ids)))),
            key=lambda h: -h.score,
        )
        fused = fuse_hybrid(dense, lexical, DEFAULT_FUSION, rng.choice([None, len(ids)]))
        assert all(0 <= s <= 1 for _, s in fused)
        assert [s for _, s in fused] == sorted((s for _, s in fused), reverse=True)
        # With equal dense scores, the larger BM25 score ranks first.
        same = [Hit(h.id, 0.5, {}) for h in lexical]
        scores = dict((h.id, s) for h, s in fuse_hybrid(same, lexical, DEFAULT_FUSION))
        for hi, lo in pairwise(lexical):
            assert scores[hi.id] >= scores[lo.id]


def test_one_lexical_match_among_many_keeps_the_other_scores_meaningful() -> None:
    # BM25 matched one of twenty documents: it ranks first, and the others keep
    # scores near their dense scores instead of collapsing towards 0.
    dense = [Hit(f"p{i}", 0.5 - i / 100, {}) for i in range(20)]
    fused = fuse_hybrid(dense, [Hit("p10", 2.0, {})], DEFAULT_FUSION, 100)
    assert fused[0][0].id == "p10"
    rest = dict((h.id, s) for h, s in fused[1:])
    assert list(rest)[:3] == ["p0", "p1", "p2"]
    assert rest["p0"] > 0.5 * (1 + 0.5) / 2


def test_a_single_genuine_hit_gets_a_real_score() -> None:
    # One candidate per side: no spread, so the base weights (0.75 dense, 1.0 lexical)
    # mix the calibrated cosine and the best BM25 match's share (1.0).
    (only,) = fuse_hybrid([Hit("a", 0.8, {})], [Hit("a", 4.0, {})], DEFAULT_FUSION)
    assert only[1] == pytest.approx((0.75 * 0.9 + 1.0 * 1.0) / 1.75)
    (dense_only,) = fuse_hybrid([Hit("a", 0.8, {})], [], DEFAULT_FUSION)
    assert dense_only[1] > 0


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
    for name in ("score", "rrf"):
        assert all(0 < score <= 1 for _, score in orders[name])  # type: ignore[operator]
    assert orders["rrf"][0][1] <= 1.0 and orders["score"] != orders["rrf"]


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


ZOO = {
    "a": "the zoo keeper feeds the lions and the zebras in the morning",
    "b": "a keeper walks the lions to the new enclosure at the zoo",
    "c": "the zoo opens at nine and the lions sleep until noon",
    "d": "a zebra foal was born at the zoo",
    "e": "Bob repairs bicycles on weekends",
}


@pytest.mark.parametrize("retrieval", ["hybrid", "dense", "lexical"])
def test_scores_are_in_the_unit_interval_in_every_mode(
    kind: str, tmp_path: Any, retrieval: str
) -> None:
    with _open(kind, tmp_path, retrieval=retrieval) as store:
        for key, text in ZOO.items():
            store.put(NS, key, {"text": text})
        for query in ("zebra", "lions at the zoo", "bicycles", "the"):
            hits = store.search(NS, query=query, limit=10)
            assert all(h.score is not None and 0 <= h.score <= 1 for h in hits), query
            scores = [h.score for h in hits]
            assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
        (only,) = store.search(NS, query="bicycles", filter={"text": ZOO["e"]})
        assert only.key == "e" and only.score is not None and only.score > 0.1


def test_dense_order_is_the_cosine_order(kind: str, tmp_path: Any) -> None:
    from langgraph.store.memory import InMemoryStore

    reference = InMemoryStore(index=_index())
    with _open(kind, tmp_path, retrieval="dense") as store:
        for key, text in ZOO.items():
            store.put(NS, key, {"text": text})
            reference.put(NS, key, {"text": text})
        for query in ("zebra", "lions at the zoo", "keeper"):
            ours = store.search(NS, query=query, limit=10)
            theirs = reference.search(NS, query=query, limit=10)
            assert [h.key for h in ours] == [h.key for h in theirs]
            for mine, cosine in zip(ours, theirs, strict=True):
                assert mine.score == pytest.approx((1 + cosine.score) / 2, abs=1e-4)  # type: ignore


def test_the_one_document_with_a_rare_query_word_is_not_ranked_last(
    kind: str, tmp_path: Any
) -> None:
    with _open(kind, tmp_path) as store:
        for key, text in ZOO.items():
            store.put(NS, key, {"text": text})
        hits = store.search(NS, query="zebra zoo", limit=5)
        order = [h.key for h in hits]
        assert order.index("d") < order.index("b") and order.index("d") < order.index("c")


@pytest.mark.parametrize("distance", ["l2", "inner_product", "manhattan"])
def test_an_unsupported_distance_type_is_refused(tmp_path: Any, distance: str) -> None:
    index = {**_index(), "distance_type": distance}
    with pytest.raises(ConfigurationError, match="distance_type"):
        QdrantMemoryStore.embedded(tmp_path / "s", index=index)


def test_cosine_distance_type_is_accepted(tmp_path: Any) -> None:
    index = {**_index(), "distance_type": "cosine"}
    with QdrantMemoryStore.embedded(tmp_path / "s", index=index) as store:
        store.put(NS, "a", {"text": "hello"})
        assert store.search(NS, query="hello")[0].key == "a"


@pytest.mark.parametrize("normalization", ["zscore", "none", {"dense": "zscore"}])
def test_a_fusion_that_leaves_the_unit_interval_is_refused(
    tmp_path: Any, normalization: Any
) -> None:
    with pytest.raises(ConfigurationError, match=r"outside \[0, 1\]"):
        QdrantMemoryStore.embedded(
            tmp_path / "s", index=_index(), fusion=FusionConfig(normalization=normalization)
        )
