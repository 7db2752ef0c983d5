"""How filtered dense searches walk the index: ACORN and exact scans (``search_walk``).

Only namespace prefixes have HNSW links of their own
(:data:`~langchain_tiered_memory.stores.requests.LINKED_INDEXES`). A value filter
that keeps more points than the engine scans exactly (about 6,700 of 384-d)
sends the search through the graph, where the filtered-out neighbours strand it:
a 10% value range over 100k random vectors found 18% of the true top 10. With
ACORN (neighbours of neighbours) it found 98% (``docs/benchmarks.md``). But
ACORN costs 4-6 ms on a filter that keeps most of a user's facts, so it is asked
for only when the value filter keeps under 40% of the points carrying its
fields. The benefit needs that scale; these tests pin the decision and that the
request carries it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import SearchOp
from qdrant_client import QdrantClient
from store_support import record_queries

from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.stores import QdrantMemoryStore, engine_client
from langchain_tiered_memory.stores.edge import engine as engine_edge
from langchain_tiered_memory.stores.filters import Where, fields_present, value_filter
from langchain_tiered_memory.stores.requests import Estimate, Query
from langchain_tiered_memory.stores.search_walk import (
    Walk,
    auto_full_scan_points,
    choose,
    estimates,
)
from langchain_tiered_memory.testing.fakes import HashingEmbeddings

DIMS = 32


def _index() -> Any:
    return {"dims": DIMS, "embed": HashingEmbeddings(size=DIMS), "fields": ["text"]}


def _store(engine: str, path: Path, **options: Any) -> QdrantMemoryStore:
    if engine == "embedded":
        return QdrantMemoryStore.embedded(path, index=_index(), **options)
    store = QdrantMemoryStore.from_client(QdrantClient(":memory:"), index=_index(), **options)
    # Local mode counts in Python, so the store does not ask it for estimates; a
    # server does. Asking local mode anyway runs the server's code path.
    store._planner.estimate = True
    return store


@pytest.fixture
def sent(engine: str, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The queries that the engine under test translates, in order."""
    return record_queries(monkeypatch, engine_edge if engine == "embedded" else engine_client)


def _notes(store: QdrantMemoryStore) -> None:
    """Five notes carry ``kind``: one ``ops`` (20%) and four ``current`` (80%)."""
    store.put(("u", "notes"), "a", {"text": "deploy failed on a probe", "kind": "ops"})
    for i, text in enumerate(["dinner plans", "deploy window", "book club", "deploy notes"]):
        store.put(("u", "notes"), f"n{i}", {"text": text, "kind": "current"})
    store.put(("u", "notes"), "bare", {"text": "deploy without a kind"})


@pytest.mark.parametrize("engine", ["embedded", "client"])
@pytest.mark.parametrize("retrieval", ["dense", "hybrid"])
def test_acorn_only_for_value_filters_keeping_few_points_that_carry_the_field(
    engine: str, retrieval: str, tmp_path: Path, sent: list[Any]
) -> None:
    # Above full_scan_points (here: none) the search walks the graph, where ACORN matters.
    with _store(engine, tmp_path / "s", full_scan_points=None) as store:
        _notes(store)
        hits = store.search(("u",), query="deploy", filter={"kind": "ops"}, retrieval=retrieval)
        assert [h.key for h in hits] == ["a"]
        assert {q.mode: q.acorn for q in sent} == (
            {"dense": True} if retrieval == "dense" else {"dense": True, "lexical": False}
        )
        sent.clear()
        hits = store.search(("u",), query="deploy", filter={"kind": "current"}, retrieval=retrieval)
        assert {h.key for h in hits} == {"n0", "n1", "n2", "n3"}
        assert sent and not any(q.acorn for q in sent)  # keeps 80%: the graph serves it
        sent.clear()
        assert store.search(("u",), query="deploy", retrieval=retrieval)
        assert sent and not any(q.acorn or q.exact for q in sent)  # a namespace alone is linked


def test_local_mode_is_not_asked_for_estimates(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[Any] = []
    calls = engine_client._calls

    def recording(name: str, request: Any, indexed: set[str]) -> Any:
        asked.append(request)
        return calls(name, request, indexed)

    monkeypatch.setattr(engine_client, "_calls", recording)
    client = QdrantClient(":memory:")
    with QdrantMemoryStore.from_client(client, index=_index(), full_scan_points=None) as store:
        _notes(store)
        assert store.search(("u",), query="deploy", filter={"kind": "ops"})
    assert not any(isinstance(r, Estimate) for r in asked)


@pytest.mark.parametrize("engine", ["embedded"])
def test_the_walk_follows_the_data_after_writes(
    engine: str, tmp_path: Path, sent: list[Any]
) -> None:
    with _store(engine, tmp_path / "s", full_scan_points=None) as store:
        _notes(store)
        store.search(("u",), query="deploy", filter={"kind": "ops"}, retrieval="dense")
        assert [q.acorn for q in sent] == [True]  # 1 of 5 notes is "ops"
        # 5 of 9 "ops" after these writes: the graph serves the filter without ACORN.
        for i in range(4):
            store.put(("u", "notes"), f"o{i}", {"text": f"deploy ops {i}", "kind": "ops"})
        sent.clear()
        store.search(("u",), query="deploy", filter={"kind": "ops"}, retrieval="dense")
        assert [q.acorn for q in sent] == [False]


@pytest.mark.parametrize("engine", ["embedded", "client"])
def test_full_scan_points_makes_small_filtered_searches_exact(
    engine: str, tmp_path: Path, sent: list[Any]
) -> None:
    with _store(engine, tmp_path / "s", full_scan_points=4) as store:
        _notes(store)
        for i in range(4):
            store.put(("v",), f"x{i}", {"text": f"deploy {i}"})
        # ("u",) holds 6 points; "current" keeps 4 of the 5 carrying kind: about 4.8.
        hits = store.search(("u",), query="deploy", filter={"kind": "current"}, retrieval="dense")
        assert {h.key for h in hits} == {"n0", "n1", "n2", "n3"}
        assert [q.exact for q in sent] == [False]
        sent.clear()
        hits = store.search(("u",), query="deploy", filter={"kind": "ops"}, retrieval="dense")
        assert [h.key for h in hits] == ["a"]
        assert [(q.exact, q.acorn) for q in sent] == [(True, False)]  # 6 x 20%: scanned
        sent.clear()
        assert len(store.search(("v",), query="deploy", retrieval="hybrid")) == 4
        assert {q.mode: q.exact for q in sent} == {"dense": True, "lexical": False}
        sent.clear()
        assert len(store.search(("u",), query="deploy", retrieval="dense")) == 6
        assert [q.exact for q in sent] == [False]  # 6 points: over the threshold


@pytest.mark.parametrize("engine", ["embedded", "client"])
def test_estimates_of_indexed_conditions_match_the_counts(engine: str, tmp_path: Path) -> None:
    with _store(engine, tmp_path / "s") as store:
        _notes(store)
        store.put(("v",), "x", {"text": "other user", "kind": "ops"})
        filters = [
            value_filter({"kind": "ops"}),
            fields_present({"kind": "ops"}),
            Where(),
        ]
        assert store._execute(Estimate(filters)) == [2, 6, 7]


def test_choose_weighs_the_value_filter_within_the_points_carrying_its_fields() -> None:
    op = SearchOp(("u",), query="q", filter={"status": "current"})
    assert len(estimates(op, full_scan_points=None)) == 2
    assert len(estimates(op, full_scan_points=100)) == 3
    assert estimates(SearchOp(("u",), query="q"), full_scan_points=None) == []
    assert choose(op, [399, 1000], full_scan_points=None) == Walk(exact=False, acorn=True)
    assert choose(op, [400, 1000], full_scan_points=None) == Walk(exact=False, acorn=False)
    assert choose(op, [0, 0], full_scan_points=None) == Walk(exact=False, acorn=False)
    # None also matches points without the field: more kept than carrying it
    missing = SearchOp(("u",), query="q", filter={"status": None})
    assert choose(missing, [900, 100], full_scan_points=None) == Walk(exact=False, acorn=False)
    assert choose(missing, [900, 0], full_scan_points=None) == Walk(exact=False, acorn=False)
    # namespace of 5,000 points, value keeps 10% of its field: about 500 points
    assert choose(op, [5000, 100, 1000], full_scan_points=500) == Walk(exact=True, acorn=False)
    assert choose(op, [5000, 101, 1000], full_scan_points=500) == Walk(exact=False, acorn=True)
    plain = SearchOp(("u",), query="q")
    assert choose(plain, [500], full_scan_points=500) == Walk(exact=True, acorn=False)
    assert choose(plain, [501], full_scan_points=500) == Walk(exact=False, acorn=False)


@pytest.mark.parametrize("engine", ["embedded", "client"])
def test_small_filtered_searches_are_exact_by_default(
    engine: str, tmp_path: Path, sent: list[Any]
) -> None:
    with _store(engine, tmp_path / "s") as store:
        # "auto": 30,000 KB of vectors; 32-d float32 vectors are 128 bytes each.
        assert store._planner.full_scan_points == 240_000 == auto_full_scan_points(DIMS)
        _notes(store)
        hits = store.search(("u",), query="deploy", filter={"kind": "ops"}, retrieval="hybrid")
        assert [h.key for h in hits] == ["a"]
        assert {q.mode: (q.exact, q.acorn) for q in sent} == {
            "dense": (True, False),
            "lexical": (False, False),
        }
    assert auto_full_scan_points(384) == 20_000 and auto_full_scan_points(None) is None


@pytest.mark.parametrize("bad", [0, -5, True, 2.5, "100", "Auto"])
def test_full_scan_points_must_be_a_positive_int(bad: Any, tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="full_scan_points"):
        QdrantMemoryStore.embedded(tmp_path / "s", index=_index(), full_scan_points=bad)


def test_both_engines_translate_acorn_and_exact() -> None:
    base: dict[str, Any] = {"mode": "dense", "filter": Where(), "limit": 3, "fields": []}
    edge = engine_edge._query(Query(**base, dense=[1.0, 0.0], acorn=True))
    assert edge.params is not None and edge.params.acorn is not None and edge.params.acorn.enable
    assert engine_edge._query(Query(**base, dense=[1.0, 0.0])).params is None
    exact = engine_edge._query(Query(**base, dense=[1.0, 0.0], acorn=True, exact=True))
    assert exact.params is not None and exact.params.exact and exact.params.acorn is None
    client = engine_client._query(Query(**base, dense=[1.0, 0.0], acorn=True))
    assert client.params is not None and client.params.acorn is not None
    assert client.params.acorn.enable is True
    assert engine_client._query(Query(**base, dense=[1.0, 0.0])).params is None
