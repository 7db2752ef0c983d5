"""Engine-specific tests of the client engine (qdrant-client local mode; server when QDRANT_URL)."""

from __future__ import annotations

import os
import uuid

import pytest
from langgraph.store.base import IndexConfig
from qdrant_client import AsyncQdrantClient, QdrantClient, models
from store_support import legacy_payload

from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.stores import QdrantMemoryStore
from langchain_tiered_memory.stores.requests import PAYLOAD_FORMAT
from langchain_tiered_memory.testing.fakes import HashingEmbeddings


def index(dims: int = 64) -> IndexConfig:
    return {"dims": dims, "embed": HashingEmbeddings(size=dims), "fields": ["text"]}


def fill(store: QdrantMemoryStore) -> None:
    store.put(("u", "al"), "a", {"text": "al likes shellfish"})
    store.put(("u", "alice"), "b", {"text": "alice likes shellfish"})
    store.put(("u", "al", "x"), "c", {"text": "deeper shellfish note"})


@pytest.mark.parametrize("mode", ["hybrid", "dense", "lexical"])
def test_local_mode_modes_and_isolation(mode: str) -> None:
    store = QdrantMemoryStore.from_client(QdrantClient(":memory:"), index=index())
    fill(store)
    hits = store.search(("u", "al"), query="shellfish", retrieval=mode)  # type: ignore[arg-type]
    assert sorted(h.key for h in hits) == ["a", "c"]


def test_store_default_mode_and_per_query_override_in_local_mode() -> None:
    client = QdrantClient(":memory:")
    with QdrantMemoryStore.from_client(client, index=index(), retrieval="lexical") as s:
        s.put(("a",), "k1", {"text": "green tea"})
        s.put(("a",), "k2", {"text": "black coffee"})
        assert [h.key for h in s.search(("a",), query="tea")] == ["k1"]  # lexical: one hit
        dense = s.search(("a",), query="tea", retrieval="dense")
        assert len(dense) == 2 and dense[0].key == "k1"  # dense ranks every item
        hybrid = s.search(("a",), query="tea", retrieval="hybrid")
        assert [h.key for h in hybrid][:1] == ["k1"] and len(hybrid) == 2


def test_local_path_reopen(tmp_path) -> None:  # type: ignore[no-untyped-def]
    client = QdrantClient(path=str(tmp_path / "local"))
    fill(QdrantMemoryStore.from_client(client, index=index()))
    client.close()
    client = QdrantClient(path=str(tmp_path / "local"))
    store = QdrantMemoryStore.from_client(client, index=index())
    assert len(store.search(("u",), limit=10)) == 3
    client.close()


def test_wrong_vector_size_for_existing_collection() -> None:
    client = QdrantClient(":memory:")
    QdrantMemoryStore.from_client(client, index=index(64))
    with pytest.raises(ConfigurationError, match="64"):
        QdrantMemoryStore.from_client(client, index=index(32))


async def test_async_client_is_async_only() -> None:
    store = QdrantMemoryStore.from_client(AsyncQdrantClient(":memory:"), index=index())
    await store.aput(("a",), "k", {"text": "async only"})
    assert (await store.aget(("a",), "k")) is not None
    assert [h.key for h in await store.asearch(("a",), query="async")] == ["k"]
    with pytest.raises(ConfigurationError, match=r"aget|abatch"):
        store.get(("a",), "k")
    await store.aclose()


def test_from_url_reads_api_key_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QDRANT_API_KEY", "from-env")
    store = QdrantMemoryStore.from_url(":memory:", index=index())
    store.put(("a",), "k", {"text": "x"})
    assert store.get(("a",), "k") is not None
    store.close()


@pytest.mark.server
@pytest.mark.enable_socket
@pytest.mark.skipif(not os.environ.get("QDRANT_URL"), reason="set QDRANT_URL to a Qdrant server")
def test_server_round_trip() -> None:
    collection = f"tm-test-{uuid.uuid4().hex[:8]}"
    store = QdrantMemoryStore.from_url(
        os.environ["QDRANT_URL"], index=index(), collection=collection
    )
    try:
        fill(store)
        assert sorted(h.key for h in store.search(("u", "al"), query="shellfish")) == ["a", "c"]
    finally:
        store.engine.client.delete_collection(collection)  # type: ignore[union-attr]
        store.close()


def test_collection_without_the_payload_format_is_refused() -> None:
    client = QdrantClient(":memory:")
    client.create_collection("memories", vectors_config={})  # an older store, or not ours
    with pytest.raises(ConfigurationError, match=r"payload format None.*new collection"):
        QdrantMemoryStore.from_client(client)


@pytest.mark.parametrize("version", [2, 3])
def test_collection_of_an_older_payload_format_is_read_and_upgraded(version: int) -> None:
    client = QdrantClient(":memory:")
    value = {"text": "al likes shellfish", "n": 2}
    with QdrantMemoryStore.from_client(client, index=index()) as store:
        store.put(("u", "al"), "a", value)
    client.update_collection("memories", metadata={"tiered_memory_format": version})
    (point,) = client.scroll("memories", with_payload=True)[0]
    assert point.payload is not None
    old = legacy_payload(
        ("u", "al"), "a", value, order_us=point.payload["updated_us"], version=version
    )
    client.overwrite_payload("memories", old, points=[point.id])
    with QdrantMemoryStore.from_client(client, index=index()) as store:
        found = store.search(("u",), query="shellfish", filter={"n": {"$gt": 1}})
        assert [i.key for i in found] == ["a"] and found[0].value == value
        store.put(("u", "bo"), "b", {"text": "bo likes shellfish", "n": 3})
        assert store.list_namespaces(suffix=("al",)) == [("u", "al")]
        assert sorted(i.key for i in store.search(("u",), filter={"n": {"$gt": 1}})) == ["a", "b"]
    info = client.get_collection("memories")
    assert (info.config.metadata or {})["tiered_memory_format"] == PAYLOAD_FORMAT


def test_range_filter_asks_for_a_float_index_once() -> None:
    client = QdrantClient(":memory:")
    store = QdrantMemoryStore.from_client(client)
    calls: list[tuple[str, object]] = []
    create = client.create_payload_index

    def spy(**kwargs: object) -> object:
        calls.append((str(kwargs["field_name"]), kwargs["field_schema"]))
        return create(**kwargs)

    client.create_payload_index = spy  # type: ignore[method-assign]
    for i in range(5):
        store.put(("r",), f"k{i}", {"n": i, "tag": "a"})
    assert len(store.search(("r",), filter={"n": {"$gte": 3}})) == 2
    assert len(store.search(("r",), filter={"n": {"$lt": 1}, "tag": "a"})) == 1
    float_unlinked = models.FloatIndexParams(type=models.FloatIndexType.FLOAT, enable_hnsw=False)
    assert calls == [("value.n", float_unlinked)]
