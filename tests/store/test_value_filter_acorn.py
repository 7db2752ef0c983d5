"""Dense searches with a value filter ask the engine for ACORN.

Only namespace prefixes have HNSW links of their own
(:data:`~langchain_tiered_memory.stores.requests.LINKED_INDEXES`). A value filter
that keeps more points than the engine scans exactly (about 6,700 of 384-d)
sends the search through the graph, where the filtered-out neighbours strand it:
a 10% value range over 100k random vectors found 18% of the true top 10. With
ACORN (neighbours of neighbours) it found 98% (``README.md``, Benchmarks). The
benefit needs that scale; these tests pin that the request carries it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from qdrant_client import QdrantClient
from store_support import record_queries

from langchain_tiered_memory.fakes import HashingEmbeddings
from langchain_tiered_memory.stores import QdrantMemoryStore, engine_client, engine_edge
from langchain_tiered_memory.stores.filters import Where
from langchain_tiered_memory.stores.requests import Query

DIMS = 32


def _store(engine: str, path: Path) -> QdrantMemoryStore:
    index: Any = {"dims": DIMS, "embed": HashingEmbeddings(size=DIMS), "fields": ["text"]}
    if engine == "embedded":
        return QdrantMemoryStore.embedded(path, index=index)
    return QdrantMemoryStore.from_client(QdrantClient(":memory:"), index=index)


@pytest.mark.parametrize("engine", ["embedded", "client"])
@pytest.mark.parametrize("retrieval", ["dense", "hybrid"])
def test_only_value_filtered_dense_queries_ask_for_acorn(
    engine: str, retrieval: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module: Any = engine_edge if engine == "embedded" else engine_client
    sent = record_queries(monkeypatch, module)
    with _store(engine, tmp_path / "s") as store:
        store.put(("u", "notes"), "a", {"text": "deploy failed on a probe", "kind": "ops"})
        store.put(("u", "notes"), "b", {"text": "dinner plans", "kind": "life"})
        hits = store.search(("u",), query="deploy", filter={"kind": "ops"}, retrieval=retrieval)
        assert [h.key for h in hits] == ["a"]
        assert {q.mode: q.acorn for q in sent} == (
            {"dense": True} if retrieval == "dense" else {"dense": True, "lexical": False}
        )
        sent.clear()
        assert store.search(("u",), query="deploy", retrieval=retrieval)
        assert sent and not any(q.acorn for q in sent)  # a namespace alone is linked


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
