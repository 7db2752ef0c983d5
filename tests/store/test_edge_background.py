"""Background optimisation of the embedded engine: ``start_optimize``, ``purge_deleted``.

The HNSW build runs in a child process on a copy of the shard; writes made
meanwhile are journaled and replayed, then the new shard is swapped in. These
tests check what a user relies on: no long stall of other threads, every write
(including those made during the build) present exactly once afterwards, the
same search results, a clean directory, cancellation on close, and failures
that keep the store as it was.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import qdrant_edge as qe
from langgraph.store.base import PutOp
from qdrant_client import QdrantClient

from langchain_tiered_memory.errors import BackendError, ConfigurationError
from langchain_tiered_memory.stores import QdrantMemoryStore
from langchain_tiered_memory.stores.edge import optimizer as eo
from langchain_tiered_memory.stores.edge.build import TENANT_INDEX, EdgeOptimizers, tenant_layout
from langchain_tiered_memory.testing.fakes import HashingEmbeddings

DIMS = 64
# Index segments above 10 KB, so a few thousand points get real HNSW graphs.
SMALL_SEGMENTS = EdgeOptimizers(indexing_threshold_kb=10)


def _index() -> Any:
    return {"dims": DIMS, "embed": HashingEmbeddings(size=DIMS), "fields": ["text"]}


def _open(path: Path, optimizers: EdgeOptimizers | None = SMALL_SEGMENTS) -> QdrantMemoryStore:
    return QdrantMemoryStore.embedded(path, index=_index(), optimizers=optimizers)


def _fill(store: QdrantMemoryStore, count: int) -> None:
    for start in range(0, count, 500):
        store.batch(
            [
                PutOp(
                    ("ns", f"u{i % 10}"), f"k{i}", {"text": f"note {i} on topic {i % 37} {i % 11}"}
                )
                for i in range(start, min(count, start + 500))
            ]
        )


def _probe(store: QdrantMemoryStore) -> list[list[str]]:
    queries = [("u3", "topic 5 note"), ("u7", "topic 12 9"), ("u0", "note 100")]
    return [
        [h.key for h in store.search(("ns", ns), query=q, limit=10, retrieval="dense")]
        for ns, q in queries
    ]


class Traffic:
    """A writer thread (puts, deletes, searches) and a ticker thread measuring stalls."""

    def __init__(self, store: QdrantMemoryStore) -> None:
        self.store = store
        self.stop = threading.Event()
        self.max_stall = 0.0
        self.acked: list[int] = []
        self.deleted: list[int] = []
        self.errors: list[BaseException] = []
        self.threads = [threading.Thread(target=self._tick), threading.Thread(target=self._write)]

    def __enter__(self) -> Traffic:
        for t in self.threads:
            t.start()
        time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(60)

    def _tick(self) -> None:
        last = time.perf_counter()
        while not self.stop.is_set():
            time.sleep(0.005)
            now = time.perf_counter()
            self.max_stall = max(self.max_stall, now - last - 0.005)
            last = now

    def _write(self) -> None:
        i = 0
        try:
            while not self.stop.is_set() or i < 20:
                self.store.put(("live",), f"w{i}", {"text": f"written during the build {i}"})
                self.acked.append(i)
                if i % 7 == 6:
                    self.store.delete(("live",), f"w{i - 3}")
                    self.deleted.append(i - 3)
                if i % 5 == 0:
                    assert self.store.search(("ns", "u1"), query="topic 3", limit=3)
                i += 1
        except BaseException as exc:  # surfaced by the test
            self.errors.append(exc)

    def expected(self) -> dict[str, str]:
        gone = set(self.deleted)
        return {f"w{i}": f"written during the build {i}" for i in self.acked if i not in gone}


def _builds(container: Path, live_dir: Path) -> list[Path]:
    """Shard generations in ``container`` other than the live one."""
    return [p for p in container.iterdir() if p.name.startswith("shard-") and p != live_dir]


def _live_items(store: QdrantMemoryStore) -> list[tuple[str, str]]:
    return [(i.key, i.value["text"]) for i in store.search(("live",), limit=100_000)]


@pytest.fixture
def filled(store_dir: Path) -> Iterator[Path]:
    """A closed store of 2,000 items whose segments are big enough to get HNSW graphs."""
    path = store_dir / "filled"
    with _open(path) as store:
        _fill(store, 2000)
    yield path


def test_background_optimize_keeps_every_write_made_during_the_build(filled: Path) -> None:
    """Reads and writes go on during a background build and all of them land exactly once.

    How long they paused is printed, not asserted: it depends on the machine's load.
    """
    with _open(filled) as store:
        before = _probe(store)
        first_dir = store.engine.dir  # type: ignore[union-attr]
        with Traffic(store) as traffic:
            status = store.optimize()  # the default: in the background
            report = status.result(timeout=240)
        assert traffic.errors == []
        assert report.outcome == "swapped" and report.optimized and status.phase == "done"
        assert report.journaled > 0  # writes happened during the build and were replayed
        print(
            f"longest pause {traffic.max_stall:.3f}s, copy {report.copy_s:.3f}s,"
            f" load {report.load_s:.3f}s, swap {report.pause_s:.3f}s"
        )

        items = _live_items(store)
        assert len(items) == len({k for k, _ in items})  # exactly once
        assert dict(items) == traffic.expected()
        assert _probe(store) == before
        assert len(store.search(("ns",), limit=10_000)) == 2000
        assert store.engine.shard.info().indexed_vectors_count > 0  # type: ignore[union-attr]
        live_dir = store.engine.dir  # type: ignore[union-attr]
    container = filled / "memories"
    assert live_dir != first_dir and live_dir.parent == container
    assert [p for p in container.iterdir() if p.is_dir()] == [live_dir]  # the old one is gone
    with _open(filled, optimizers=None) as store:  # reopens the new generation
        assert dict(_live_items(store)) == traffic.expected()
        assert _probe(store) == before


async def test_async_background_optimize_and_second_call_returns_the_running_one(
    filled: Path,
) -> None:
    with _open(filled) as store:
        dirs = [store.engine.dir]  # type: ignore[union-attr]
        status = await store.aoptimize()  # the default: in the background
        assert store.start_optimize() is status  # one build at a time
        await store.aput(("live",), "a", {"text": "async write during the build"})
        report = await status.aresult(timeout=240)
        assert report.outcome == "swapped" and status.phase == "done"
        assert (await store.aget(("live",), "a")) is not None
        again = store.start_optimize()
        assert again is not status  # a finished run is not reused
        dirs.append(store.engine.dir)  # type: ignore[union-attr]
        assert again.result(timeout=240).outcome == "swapped"
        dirs.append(store.engine.dir)  # type: ignore[union-attr]
        assert len(set(dirs)) == 3  # two swaps, two new generations


def test_close_during_the_build_cancels_it_and_leaves_no_files(filled: Path) -> None:
    phases: list[str] = []
    store = _open(filled)
    live_dir = store.engine.dir  # type: ignore[union-attr]
    store.put(("live",), "before", {"text": "kept"})
    building = threading.Event()

    def progress(phase: str) -> None:
        phases.append(phase)
        if phase == "building":
            building.set()

    status = store.start_optimize(progress=progress)
    assert building.wait(60)
    store.put(("live",), "during", {"text": "kept too"})
    store.close()
    assert status.done() and status.result().outcome == "cancelled"
    assert "swapping" not in phases
    container = filled / "memories"
    assert _builds(container, live_dir) == []  # the build is gone
    with _open(filled) as store:
        assert {k for k, _ in _live_items(store)} == {"before", "during"}


def test_a_failed_build_keeps_the_store_and_every_write(
    filled: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    broken = tmp_path / "broken_build.py"
    broken.write_text("import sys\nsys.exit('simulated build failure: disk full')\n")
    monkeypatch.setattr(eo.edge_build, "__file__", str(broken))
    with _open(filled) as store:
        status = store.start_optimize()
        store.put(("live",), "x", {"text": "written while the build fails"})
        with pytest.raises(BackendError, match="simulated build failure") as info:
            status.result(timeout=60)
        assert "kept its current shard" in str(info.value)
        assert status.phase == "failed"
        assert store.engine.live.journal is None  # type: ignore[union-attr]
        store.put(("live",), "y", {"text": "written after"})
        assert {k for k, _ in _live_items(store)} == {"x", "y"}
        live_dir = store.engine.dir  # type: ignore[union-attr]
        assert _builds(filled / "memories", live_dir) == []


def test_purge_rewrites_the_shard_without_deleted_payloads(store_dir: Path) -> None:
    path = store_dir / "purge"
    secret = b"zqpurgedsecretzq"
    _open(path).close()  # created with SMALL_SEGMENTS, which the shard keeps
    with _open(path, optimizers=None) as store:
        _fill(store, 300)
        store.put(("victim",), "s", {"text": secret.decode()})
        store.delete(("victim",), "s")
        assert store.get(("victim",), "s") is None

        def holding() -> list[str]:
            return [p.name for p in path.rglob("*") if p.is_file() and secret in p.read_bytes()]

        assert holding()  # deleted, but still in the segment files and the WAL
        report = store.purge_deleted(timeout=240)
        assert report.outcome == "swapped" and report.purged and report.points == 300
        assert holding() == []
        assert len(store.search(("ns",), limit=1000)) == 300
        assert store.search(("ns", "u3"), query="topic 5", limit=3, retrieval="lexical")
        saved = json.loads((store.engine.dir / "edge_config.json").read_text())  # type: ignore[union-attr]
        assert saved["optimizers"]["indexing_threshold"] == 10  # carried over
    with QdrantMemoryStore.embedded(path) as bare:  # no index: the vectors must survive anyway
        assert bare.purge_deleted(timeout=240).outcome == "swapped"
    with _open(path) as store:
        assert store.search(("ns", "u3"), query="note 13 topic 13", limit=1, retrieval="dense")


def test_client_engine_says_the_server_optimizes_itself() -> None:
    store = QdrantMemoryStore.from_client(QdrantClient(":memory:"), index=_index())
    status = store.start_optimize()
    assert status.done() and status.result().outcome == "skipped"
    assert "server" in status.result().message
    assert store.purge_deleted().outcome == "skipped"
    assert store.optimize(background=True).done()


def test_auto_optimize_starts_a_background_build_after_enough_writes(store_dir: Path) -> None:
    path = store_dir / "auto"
    index = _index()
    with QdrantMemoryStore.embedded(path, index=index, auto_optimize=1500) as store:
        _fill(store, 1000)
        assert store.engine.optimization is None  # type: ignore[union-attr]
        _fill(store, 1600)  # the count of written points passes 1,500 during this fill
        status = store.engine.optimization  # type: ignore[union-attr]
        assert status is not None
        assert status.result(timeout=240).outcome == "swapped"
        assert len(store.search(("ns",), limit=10_000)) == 1600
    with pytest.raises(ConfigurationError, match="auto_optimize"):
        QdrantMemoryStore.embedded(path, index=index, auto_optimize=0)


def test_indexing_threads_are_saved_and_survive_optimize_and_purge(store_dir: Path) -> None:
    path = store_dir / "threads"
    two = EdgeOptimizers(indexing_threshold_kb=10, indexing_threads=2)

    def saved_threads() -> int:
        config = json.loads((store.engine.dir / "edge_config.json").read_text())  # type: ignore[union-attr]
        return int(config["hnsw_config"]["max_indexing_threads"])

    with _open(path, optimizers=two) as store:
        _fill(store, 600)
        assert saved_threads() == 2
    with _open(path, optimizers=None) as store:  # reopened without settings: the shard keeps them
        before = _probe(store)
        assert store.optimize(background=False) is True
        assert _probe(store) == before
        assert saved_threads() == 2
        store.delete(("ns", "u1"), "k1")
        assert store.purge_deleted(timeout=240).outcome == "swapped"  # a fresh shard
        assert saved_threads() == 2
        assert len(store.search(("ns",), limit=1000)) == 599
    with pytest.raises(ConfigurationError, match="indexing_threads"):
        _open(store_dir / "zero", optimizers=EdgeOptimizers(indexing_threads=0))


def _graph_links(store: QdrantMemoryStore) -> dict[str, bool]:
    """Which payload indexes of the live shard add HNSW links (no params: Qdrant's yes)."""
    schema = store.engine.shard.info().payload_schema  # type: ignore[union-attr]
    return {
        name: index.params is None or index.params.enable_hnsw is not False
        for name, index in schema.items()
    }


def _link_every_index(store: QdrantMemoryStore) -> None:
    live = store.engine.live  # type: ignore[union-attr]
    for name, index in live.shard.info().payload_schema.items():
        live.write(qe.UpdateOperation.delete_field_index(name))
        live.write(qe.UpdateOperation.create_field_index(name, index.data_type))


def test_only_namespace_prefixes_are_linked_and_optimize_relinks_old_stores(
    filled: Path,
) -> None:
    with _open(filled) as store:
        store.search(("ns",), filter={"n": {"$gt": 1}})  # creates a float index on value.n
        before = _probe(store)
        links = _graph_links(store)
        assert links.pop("ns_prefixes") is True and "value.n" in links
        assert set(links.values()) == {False}
        for background in (True, False):
            _link_every_index(store)  # as stores made before LINKED_INDEXES were
            assert set(_graph_links(store).values()) == {True}
            if background:
                assert store.optimize(background=True).result(timeout=240).outcome == "swapped"
            else:
                store.optimize(background=False)
            links = _graph_links(store)
            assert links.pop("ns_prefixes") is True and set(links.values()) == {False}
            schema = store.engine.shard.info().payload_schema  # type: ignore[union-attr]
            assert all(i.params.memory == qe.Memory.Cold for i in schema.values())  # on disk
            assert _probe(store) == before
        assert len(store.search(("ns", "u3"), limit=1000)) == 200


def _drop_the_layout(store: QdrantMemoryStore) -> None:
    """Make the namespace index a plain one, as stores made before the layout had it."""
    live = store.engine.live  # type: ignore[union-attr]
    live.write(qe.UpdateOperation.delete_field_index(TENANT_INDEX))
    plain = qe.KeywordIndexParams(enable_hnsw=False)
    live.write(qe.UpdateOperation.create_field_index(TENANT_INDEX, plain))


def test_segments_are_laid_out_by_namespace_and_old_stores_are_rewritten_once(
    filled: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with _open(filled) as store:
        shard = store.engine.shard  # type: ignore[union-attr]
        assert tenant_layout(shard)  # a new store has the layout key from the start
        before = _probe(store)
        _drop_the_layout(store)
        assert not tenant_layout(store.engine.shard)  # type: ignore[union-attr]
        with caplog.at_level(logging.WARNING, "langchain_tiered_memory.stores.edge.engine"):
            # In place: the old segments keep their order, so no flag either.
            store.optimize(background=False)
        assert "optimize(background=True)" in caplog.text  # and the user is told what to do
        assert not tenant_layout(store.engine.shard)  # type: ignore[union-attr]
        status = store.optimize(background=True)
        assert status.purge  # rewritten from its points, though no purge was asked
        report = status.result(timeout=240)
        assert report.outcome == "swapped" and report.purged and report.points == 2000
        assert tenant_layout(store.engine.shard)  # type: ignore[union-attr]
        assert _probe(store) == before
        again = store.optimize(background=True)
        assert not again.purge  # once is enough
        assert again.result(timeout=240).outcome in ("swapped", "skipped")
        assert len(store.search(("ns", "u3"), limit=1000)) == 200
        # A store made before the namespace index existed: reopening adds it unflagged.
        store.engine.live.write(qe.UpdateOperation.delete_field_index(TENANT_INDEX))  # type: ignore[union-attr]
    with _open(filled) as store:
        assert TENANT_INDEX in store.engine.shard.info().payload_schema  # type: ignore[union-attr]
        assert not tenant_layout(store.engine.shard)  # type: ignore[union-attr]
        assert store.optimize(background=True).purge


def test_the_two_engines_link_the_same_indexes() -> None:
    from langchain_tiered_memory.stores import engine_client, requests
    from langchain_tiered_memory.stores.edge import build as edge_build

    assert edge_build.LINKED_INDEXES == requests.LINKED_INDEXES
    assert edge_build.TENANT_INDEX == requests.TENANT_INDEX
    for name in (*requests.KEYWORD_INDEXES, *requests.INTEGER_INDEXES, "value.t"):
        schema = engine_client._index_call("memories", name).kwargs["field_schema"]
        assert schema.enable_hnsw is (name in requests.LINKED_INDEXES)
        assert bool(getattr(schema, "is_tenant", None)) is (name == requests.TENANT_INDEX)
