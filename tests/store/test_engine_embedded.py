"""Engine-specific tests of the embedded (Qdrant Edge) engine of QdrantMemoryStore."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import qdrant_edge as qe
from langgraph.store.base import IndexConfig, PutOp
from store_support import legacy_payload

from langchain_tiered_memory.embeddings import LocalEmbeddings
from langchain_tiered_memory.errors import ConfigurationError, StoreLockedError
from langchain_tiered_memory.stores import QdrantMemoryStore
from langchain_tiered_memory.stores.payload import point_id
from langchain_tiered_memory.stores.requests import PAYLOAD_FORMAT
from langchain_tiered_memory.testing.fakes import FakeClock, HashingEmbeddings

CORPUS = {
    "m1": "Alice is allergic to shellfish and peanuts",
    "m2": "Alice moved to Lisbon in 2021",
    "m3": "The quarterly report is due on Friday",
    "m4": "Bob prefers green tea over coffee",
    "m5": "Kubernetes pods restart after the OOM killer fires",
}


def index(dims: int = 64) -> IndexConfig:
    return {"dims": dims, "embed": HashingEmbeddings(size=dims), "fields": ["text"]}


@pytest.fixture
def store(tmp_path: Path):
    with QdrantMemoryStore.embedded(tmp_path / "db", index=index()) as s:
        for key, text in CORPUS.items():
            s.put(("mem", "alice"), key, {"text": text})
        yield s


def test_reopen_finds_everything(tmp_path: Path) -> None:
    path = tmp_path / "db"
    with QdrantMemoryStore.embedded(path, index=index()) as s:
        for key, text in CORPUS.items():
            s.put(("mem", "alice"), key, {"text": text, "n": len(text)})
        s.delete(("mem", "alice"), "m5")
        created = s.get(("mem", "alice"), "m1")
    with QdrantMemoryStore.embedded(path, index=index()) as s:
        assert sorted(i.key for i in s.search(("mem",), limit=100)) == ["m1", "m2", "m3", "m4"]
        again = s.get(("mem", "alice"), "m1")
        assert again is not None and created is not None
        assert again.value == created.value and again.created_at == created.created_at
        assert s.search(("mem",), query="shellfish allergy", limit=1)[0].key == "m1"
        assert s.list_namespaces() == [("mem", "alice")]


@pytest.mark.parametrize(
    ("mode", "query", "expected"),
    [
        ("hybrid", "shellfish allergy", "m1"),
        ("dense", "quarterly report friday", "m3"),
        ("lexical", "kubernetes", "m5"),
        ("lexical", "restarting pod", "m5"),  # stemming: restart/restarting, pod/pods
    ],
)
def test_retrieval_modes_find_the_expected_item(
    store: QdrantMemoryStore, mode: str, query: str, expected: str
) -> None:
    hits = store.search(("mem",), query=query, limit=3, retrieval=mode)  # type: ignore[arg-type]
    assert hits[0].key == expected
    assert all(h.score is not None for h in hits)


def test_lexical_ignores_items_without_shared_terms(store: QdrantMemoryStore) -> None:
    hits = store.search(("mem",), query="kubernetes", retrieval="lexical", limit=10)
    assert [h.key for h in hits] == ["m5"]
    assert store.search(("mem",), query="the and of", retrieval="lexical") == []


def test_store_default_mode_and_async_override(tmp_path: Path) -> None:
    import asyncio

    with QdrantMemoryStore.embedded(tmp_path / "db", index=index(), retrieval="lexical") as s:
        s.put(("a",), "k1", {"text": "green tea"})
        s.put(("a",), "k2", {"text": "black coffee"})
        assert [h.key for h in s.search(("a",), query="tea")] == ["k1"]  # lexical: one hit
        dense = asyncio.run(s.asearch(("a",), query="tea", retrieval="dense"))
        assert len(dense) == 2 and dense[0].key == "k1"


def test_invalid_retrieval_mode_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="retrieval"):
        QdrantMemoryStore.embedded(tmp_path / "db", index=index(), retrieval="fuzzy")


def test_namespaces_that_prefix_each_other_stay_isolated(tmp_path: Path) -> None:
    with QdrantMemoryStore.embedded(tmp_path / "db", index=index()) as s:
        layout = {
            ("u", "al"): "al",
            ("u", "alice"): "alice",
            ("u", "al", "x"): "al-x",
            ("ua",): "ua",
        }
        for ns, who in layout.items():
            s.put(ns, "k", {"text": f"secret of {who} shellfish"})
        for mode in ("hybrid", "dense", "lexical"):
            found = s.search(("u", "al"), query="shellfish secret", limit=10, retrieval=mode)  # type: ignore[arg-type]
            assert sorted(h.namespace for h in found) == [("u", "al"), ("u", "al", "x")]
        assert [h.namespace for h in s.search(("u", "alice"), limit=10)] == [("u", "alice")]
        assert s.list_namespaces(prefix=("u", "al")) == [("u", "al"), ("u", "al", "x")]


def test_second_open_of_the_same_path_is_refused_quickly(tmp_path: Path) -> None:
    path = tmp_path / "db"
    with QdrantMemoryStore.embedded(path, index=index()) as s:
        s.put(("a",), "k", {"text": "kept"})
        started = time.perf_counter()
        with pytest.raises(StoreLockedError, match=str(path)):
            QdrantMemoryStore.embedded(path, index=index())
        assert time.perf_counter() - started < 2.0
        assert s.get(("a",), "k") is not None  # the holder is unaffected


@pytest.mark.integration
def test_other_process_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "db"
    with QdrantMemoryStore.embedded(path):
        code = (
            "import sys\n"
            "from langchain_tiered_memory.stores import QdrantMemoryStore\n"
            "from langchain_tiered_memory.errors import StoreLockedError\n"
            "try:\n    QdrantMemoryStore.embedded(sys.argv[1])\n"
            "except StoreLockedError:\n    sys.exit(3)\n"
        )
        done = subprocess.run([sys.executable, "-c", code, str(path)], timeout=60)
        assert done.returncode == 3


def test_wrong_vector_size_is_a_configuration_error(tmp_path: Path) -> None:
    path = tmp_path / "db"
    with QdrantMemoryStore.embedded(path, index=index(64)) as s:
        s.put(("a",), "k", {"text": "x"})
    with pytest.raises(ConfigurationError, match="64"):
        QdrantMemoryStore.embedded(path, index=index(32))
    with QdrantMemoryStore.embedded(path, index=index(64)) as s:  # the lock was released
        assert s.get(("a",), "k") is not None


def test_collections_are_separate_directories(tmp_path: Path) -> None:
    with (
        QdrantMemoryStore.embedded(tmp_path, collection="one") as a,
        QdrantMemoryStore.embedded(tmp_path, collection="two") as b,
    ):
        a.put(("x",), "k", {"v": 1})
        assert b.get(("x",), "k") is None
    assert (tmp_path / "one").is_dir() and (tmp_path / "two").is_dir()


def test_ttl_expiry_refresh_and_sweep_with_an_injected_clock(tmp_path: Path) -> None:
    clock = FakeClock()
    ttl = {"default_ttl": 10.0, "refresh_on_read": True, "sweep_interval_minutes": 1}
    with QdrantMemoryStore.embedded(tmp_path / "db", ttl=ttl, clock=clock) as s:  # type: ignore[arg-type]
        s.put(("t",), "short", {"v": 1})
        s.put(("t",), "forever", {"v": 2}, ttl=None)
        clock.advance(minutes=8)
        assert s.get(("t",), "short") is not None  # refreshes: now expires at minute 18
        clock.advance(minutes=8)
        assert [i.key for i in s.search(("t",))] == ["forever", "short"]
        clock.advance(minutes=11)
        assert s.get(("t",), "short") is None
        assert [i.key for i in s.search(("t",))] == ["forever"]
        s.sweep_ttl()
        clock.set(clock() - __import__("datetime").timedelta(minutes=30))
        assert s.get(("t",), "short") is None  # physically deleted, not just hidden


def test_optimize_runs_while_other_threads_write_and_read(tmp_path: Path) -> None:
    with QdrantMemoryStore.embedded(tmp_path / "db", index=index(32)) as s:
        s.batch(
            [
                __import__("langgraph.store.base", fromlist=["PutOp"]).PutOp(
                    ("o", f"u{i % 5}"), f"k{i}", {"text": f"note {i} about topic {i % 7}"}
                )
                for i in range(600)
            ]
        )
        errors: list[BaseException] = []
        stop = threading.Event()

        def worker() -> None:
            i = 0
            try:
                while not stop.is_set() or i < 20:
                    s.put(("o", "live"), f"w{i}", {"text": f"written during optimize {i}"})
                    assert s.get(("o", "live"), f"w{i}") is not None
                    assert s.search(("o", "u1"), query="topic 3", limit=3)
                    i += 1
            except BaseException as exc:  # surfaced below
                errors.append(exc)

        thread = threading.Thread(target=worker)
        thread.start()
        s.optimize(background=False)
        stop.set()
        thread.join(timeout=60)
        assert not errors
        written = len(s.search(("o", "live"), limit=10_000))
        assert written >= 20
        assert len(s.search(("o",), limit=10_000)) == 600 + written


@pytest.mark.integration
def test_real_local_embedder_hybrid(tmp_path: Path) -> None:
    model = LocalEmbeddings()
    cfg: IndexConfig = {"dims": 384, "embed": model, "fields": ["text"]}
    with QdrantMemoryStore.embedded(tmp_path / "db", index=cfg) as s:
        for key, text in CORPUS.items():
            s.put(("mem",), key, {"text": text})
        assert (
            s.search(("mem",), query="Which foods cause her a reaction?", retrieval="dense")[0].key
            == "m1"
        )
        assert s.search(("mem",), query="container crashed out of memory", limit=1)[0].key == "m5"


def test_store_of_an_older_payload_format_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "db"
    with QdrantMemoryStore.embedded(path) as s:
        s.put(("a",), "k", {"v": 1})
    meta_path = path / "memories" / "tiered_memory_store.json"
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**meta, "format": 1}))
    with pytest.raises(ConfigurationError, match=r"format 1.*new path"):
        QdrantMemoryStore.embedded(path)
    meta_path.write_text(json.dumps(meta))
    with QdrantMemoryStore.embedded(path) as s:  # nothing was locked or changed
        assert s.search(("a",), filter={"v": 1})[0].key == "k"


def test_payload_keeps_only_what_reads_and_filters_use(store: QdrantMemoryStore) -> None:
    store.put(("mem", "bob"), "p", {"name": "Bob", "age": 41, "tags": ["x", 3], "ok": True})
    store.put(("mem", "bob"), "q", {"name": "Bob"})
    shard = store.engine.shard  # type: ignore[union-attr]
    (record,) = shard.retrieve([point_id(("mem", "bob"), "p")], True, False)
    payload = record.payload
    assert set(payload) == {"ns_path", "ns_prefixes", "updated_us", "value", "value_marks", "item"}
    assert payload["value"] == {"age": 41, "tags": [3]}  # numbers only: ranges compare numbers
    (bare,) = shard.retrieve([point_id(("mem", "bob"), "q")], True, False)
    assert "value" not in bare.payload and "expires_us" not in bare.payload  # nothing empty
    item = store.get(("mem", "bob"), "p")
    assert item is not None and item.namespace == ("mem", "bob")
    assert item.value == {"name": "Bob", "age": 41, "tags": ["x", 3], "ok": True}
    assert [i.key for i in store.search(("mem",), filter={"age": {"$gte": 40}})] == ["p"]
    assert [i.key for i in store.search(("mem",), filter={"name": "Bob", "ok": None})] == ["q"]
    assert store.list_namespaces(suffix=("bob",)) == [("mem", "bob")]


@pytest.mark.parametrize("version", [2, 3])
def test_store_of_an_older_payload_format_is_read_and_upgraded(
    tmp_path: Path, version: int
) -> None:
    path = tmp_path / "db"
    old_value = {"text": "Alice moved to Lisbon", "year": 2021}
    with QdrantMemoryStore.embedded(path, index=index()) as s:
        s.put(("mem", "alice"), "k", old_value)
        s.put(("mem", "alice"), "gone", {"text": "Alice will move"})
        shard = s.engine.shard  # type: ignore[union-attr]
        for key in ("k", "gone"):
            pid = point_id(("mem", "alice"), key)
            (record,) = shard.retrieve([pid], True, True)
            value = s.get(("mem", "alice"), key).value  # type: ignore[union-attr]
            order_us = record.payload["updated_us"]
            old = legacy_payload(("mem", "alice"), key, value, order_us=order_us, version=version)
            shard.update(qe.UpdateOperation.upsert_points([qe.Point(pid, record.vector, old)]))
        created = s.get(("mem", "alice"), "k").created_at  # type: ignore[union-attr]
    meta_path = path / "memories" / "tiered_memory_store.json"
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**meta, "format": version}))
    with QdrantMemoryStore.embedded(path, index=index()) as s:
        assert json.loads(meta_path.read_text())["format"] == PAYLOAD_FORMAT
        item = s.get(("mem", "alice"), "k")
        assert item is not None and item.value == old_value and item.created_at == created
        s.put(("mem", "bob"), "n", {"text": "Bob moved to Lisbon", "year": 2020})
        s.put(("mem", "alice"), "gone", {"text": "Alice will move", "year": 2024})
        assert s.get(("mem", "alice"), "gone").value["year"] == 2024  # type: ignore[union-attr]
        found = s.search(("mem",), query="Lisbon", filter={"year": {"$lt": 2022}})
        assert sorted(i.key for i in found) == ["k", "n"]
        assert [i.key for i in s.search(("mem",), filter={"year": 2021})] == ["k"]
        assert s.list_namespaces() == [("mem", "alice"), ("mem", "bob")]
        assert s.list_namespaces(suffix=("alice",)) == [("mem", "alice")]
        assert [i.key for i in s.search(("mem",), limit=1)] == ["gone"]  # newest first
        s.put(("mem", "alice"), "k", {"text": "Alice lives in Porto"})
        again = s.get(("mem", "alice"), "k")
        assert again is not None and again.created_at == created  # kept across formats
        assert again.updated_at > created


def _float_indexes(store: QdrantMemoryStore) -> set[str]:
    shard = store.engine.shard  # type: ignore[union-attr]
    schema = shard.info().payload_schema
    return {k for k, v in schema.items() if v.data_type == qe.PayloadSchemaType.Float}


def _raw_count(store: QdrantMemoryStore, key: str, **bounds: float) -> int:
    """Count straight on the shard, bypassing the store (which would index the field)."""
    shard = store.engine.shard  # type: ignore[union-attr]
    cond = qe.FieldCondition(key, range=qe.RangeFloat(**bounds))
    return int(shard.count(qe.CountRequest(exact=True, filter=qe.Filter(must=[cond]))))


def test_range_filters_index_their_field_once_with_the_same_results(tmp_path: Path) -> None:
    path = tmp_path / "db"
    values = {f"k{i}": {"n": i if i % 2 else i + 0.5, "m": {"t": i}} for i in range(40)}
    values["text"] = {"n": "12"}  # strings never match a range, indexed or not
    with QdrantMemoryStore.embedded(path) as s:
        s.batch([PutOp(("r",), k, v) for k, v in values.items()])
        before = _raw_count(s, "value.n", gte=10, lt=20)
        assert _float_indexes(s) == set()
        found = s.search(("r",), filter={"n": {"$gte": 10, "$lt": 20}}, limit=100)
        assert sorted(i.value["n"] for i in found) == [
            10.5,
            11,
            12.5,
            13,
            14.5,
            15,
            16.5,
            17,
            18.5,
            19,
        ]
        assert _float_indexes(s) == {"value.n"}
        assert _raw_count(s, "value.n", gte=10, lt=20) == before == 10
        s.search(("r",), filter={"m": {"t": {"$lte": 3}}})
        assert _float_indexes(s) == {"value.n", "value.m.t"}
        s.put(("r",), "late", {"n": 15})  # written after the index exists
    with QdrantMemoryStore.embedded(path) as s:
        assert _float_indexes(s) == {"value.n", "value.m.t"}  # kept, not rebuilt
        found = s.search(("r",), filter={"n": {"$gt": 14, "$lte": 15}}, limit=100)
        assert sorted(i.key for i in found) == ["k14", "k15", "late"]
        assert len(s.search(("r",), filter={"m": {"t": {"$lte": 3}}})) == 4


def test_warm_reads_the_segment_files_but_not_the_wal(store: QdrantMemoryStore) -> None:
    live = store.engine.dir  # type: ignore[union-attr]
    assert live is not None
    segments = sum(p.stat().st_size for p in (live / "segments").rglob("*") if p.is_file())
    wal = sum(p.stat().st_size for p in (live / "wal").rglob("*") if p.is_file())
    read = store.warm()
    assert segments <= read < segments + wal or wal == 0
    assert asyncio.run(store.awarm()) == read
    assert [i.key for i in store.search(("mem",), query="shellfish", limit=1)] == ["m1"]


def test_warm_is_a_no_op_on_the_client_engine() -> None:
    from qdrant_client import QdrantClient

    with QdrantMemoryStore.from_client(QdrantClient(":memory:")) as s:
        s.put(("a",), "k", {"v": 1})
        assert s.warm() == 0
