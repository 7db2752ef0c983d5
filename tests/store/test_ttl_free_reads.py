"""The embedded engine leaves out the expiry check while no item has a TTL.

The engine checks ``not (expires_us <= now)`` for every point it scans, even when
no point has an ``expires_us``: 1-3 ms per 10k scanned points
(``docs/benchmarks.md``). One process writes an embedded store, so it knows when the first
item with a TTL arrives; from then on (and on every open of a store that holds
one) reads check expiry again.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from store_support import record_queries

from langchain_tiered_memory.stores import QdrantMemoryStore
from langchain_tiered_memory.stores.edge import engine as engine_edge
from langchain_tiered_memory.stores.requests import Query
from langchain_tiered_memory.testing.fakes import HashingEmbeddings

DIMS = 32


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 12, 1, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now


def _open(path: Path, clock: Clock) -> QdrantMemoryStore:
    index: Any = {"dims": DIMS, "embed": HashingEmbeddings(size=DIMS), "fields": ["text"]}
    return QdrantMemoryStore.embedded(path, index=index, clock=clock)


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[Query]:
    return record_queries(monkeypatch, engine_edge)


def _checks_expiry(queries: list[Query]) -> bool:
    keys = {c.key for q in queries for c in q.filter.must_not if hasattr(c, "key")}
    return "expires_us" in keys


def test_expiry_is_checked_from_the_first_ttl_item_on(tmp_path: Path, sent: list[Query]) -> None:
    clock = Clock()
    with _open(tmp_path / "s", clock) as store:
        store.put(("u",), "plain", {"text": "kept forever"})
        assert [h.key for h in store.search(("u",), query="kept")] == ["plain"]
        assert sent and not _checks_expiry(sent)
        sent.clear()
        store.put(("u",), "short", {"text": "kept briefly"}, ttl=1)
        clock.now += timedelta(minutes=2)
        assert [h.key for h in store.search(("u",), query="kept", limit=5)] == ["plain"]
        assert _checks_expiry(sent)
        assert store.list_namespaces() == [("u",)]
    sent.clear()
    with _open(tmp_path / "s", clock) as store:  # reopened: the TTL item is still there
        assert [h.key for h in store.search(("u",), query="kept", limit=5)] == ["plain"]
        assert _checks_expiry(sent)
        store.sweep_ttl()  # the sweeper's own filter is never dropped
        assert store.get(("u",), "plain") is not None
        assert store.get(("u",), "short") is None


def test_a_ttl_free_store_lists_and_counts_as_before(tmp_path: Path, sent: list[Query]) -> None:
    with _open(tmp_path / "s", Clock()) as store:
        for i in range(5):
            store.put(("u", f"n{i % 2}"), f"k{i}", {"text": f"note {i}", "i": i})
        assert store.list_namespaces(prefix=("u",)) == [("u", "n0"), ("u", "n1")]
        found = store.search(("u",), filter={"i": {"$gte": 3}}, limit=10)
        assert sorted(h.key for h in found) == ["k3", "k4"]
        assert not _checks_expiry(sent)
