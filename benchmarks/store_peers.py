"""Store peers benchmark: the embedded store beside the stores a LangGraph user would pick.

One run, the same data for every store: seeded random 384-d unit vectors over
100 namespaces, each item ``{"text": "p<i>", "ts": ..., "group": ...}``;
embedding is a lookup of the precomputed vectors (no model in the timed part).
Each store runs in a fresh process, so its memory figures are its own:

* ingest points/s: ``batch`` calls of ``--batch`` ``PutOp`` (mem0: one
  ``add(..., infer=False)`` per point, it has no batch write);
* reopen + first query: close the store, open it again and answer one search;
* p50 / p99 cold: the first pass of ``--queries`` filtered top-10 searches
  (one namespace each) right after that reopen; warm: a second pass of the
  same queries; recall@10 of the warm pass against an exact numpy search;
* RSS added: resident memory of the reopened store after both passes, minus
  the process before the store was opened, and how much of it is file pages
  (memory-mapped files, which the kernel can drop); peak: the highest resident memory
  during the run (ingest included), minus the same base;
* disk: the store's files after it is closed.

``QdrantMemoryStore`` is measured twice on the same files: as loaded, and after
``optimize(background=False)`` (HNSW graphs built in this process; its time is
the ``optimize s`` column). ``InMemoryStore`` keeps nothing on disk, so it has
no reopen and its cold pass follows the ingest. Peers too slow for 100k
(``langgraph-store-qdrant``, mem0) run once, at ``--slow-points`` (10k) at most,
with ``--slow-queries`` if given (for a busy machine, where their searches take
seconds). A peer
whose package is missing (the ``bench`` extra) is shown as skipped, with the
reason. Ratios compare with ``SqliteStore`` at the same size in the same run.

Usage:
    python -m benchmarks.store_peers                    # 10k and 100k
    python -m benchmarks.store_peers --sizes 10000
    python -m benchmarks.store_peers --quick            # 1k smoke run
    python -m benchmarks.store_peers --stores tiered,sqlite --sizes 100000
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import os
import resource
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):  # run as a file: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langchain_core.embeddings import Embeddings

from benchmarks._common import (
    environment,
    format_table,
    percentile,
    ratio,
    rss_file_mb,
    rss_mb,
    run_isolated,
    stopwatch,
    time_calls,
)
from benchmarks.store_scale import (
    Data,
    LookupEmbeddings,
    exact_top10,
    make_data,
    namespace,
    put_points,
)

os.environ.setdefault("MEM0_TELEMETRY", "False")  # read when mem0 is imported: no upload

STORES = ("tiered", "tiered-optimized", "sqlite", "inmemory", "lgqdrant", "mem0")
LABELS = {
    "tiered": "QdrantMemoryStore embedded",
    "tiered-optimized": "same, after optimize()",
    "sqlite": "LangGraph SqliteStore + sqlite-vec",
    "inmemory": "LangGraph InMemoryStore",
    "lgqdrant": "langgraph-store-qdrant (local mode)",
    "mem0": "mem0 (Qdrant local, infer=False)",
}
SLOW = frozenset({"lgqdrant", "mem0"})
"""Stores too slow for 100k: run once, at ``--slow-points`` / ``--slow-queries`` at most."""
BASELINE = "sqlite"


@dataclasses.dataclass(frozen=True)
class Config:
    """Benchmark settings (see ``--help``)."""

    sizes: tuple[int, ...] = (10_000, 100_000)
    stores: tuple[str, ...] = STORES
    namespaces: int = 100
    dims: int = 384
    queries: int = 200
    batch: int = 1_000
    seed: int = 42
    slow_points: int = 10_000
    slow_queries: int | None = None
    isolated: bool = True
    indexing_threads: int | None = None


class Peer:
    """One store under test: how to open, fill, search and close it."""

    uses_disk = True

    def __init__(self, path: Path, embeddings: Embeddings, config: Config) -> None:
        self.path = path
        self.embeddings = embeddings
        self.dims = config.dims
        self.config = config
        self.store: Any = None

    def index(self) -> dict[str, Any]:
        return {"dims": self.dims, "embed": self.embeddings, "fields": ["text"]}

    def open(self) -> None:
        raise NotImplementedError

    def ingest(self, data: Data, batch: int) -> None:
        put_points(self.store, data, batch)

    def search(self, data: Data, j: int) -> list[int]:
        ns = namespace(int(data.query_namespace[j]))
        return [int(item.key[1:]) for item in self.store.search(ns, query=f"q{j}", limit=10)]

    def close(self) -> None:
        close = getattr(self.store, "close", None)
        if close is not None:
            close()
        self.store = None


class TieredPeer(Peer):
    def open(self) -> None:
        from langchain_tiered_memory.stores import EdgeOptimizers, QdrantMemoryStore

        index: Any = self.index()
        threads = self.config.indexing_threads
        optimizers = None if threads is None else EdgeOptimizers(indexing_threads=threads)
        self.store = QdrantMemoryStore.embedded(
            self.path, index=index, retrieval="dense", optimizers=optimizers
        )


class SqlitePeer(Peer):
    def open(self) -> None:
        from langgraph.store.sqlite import SqliteStore
        from pysqlite3 import dbapi2  # type: ignore[import-untyped]  # the standard sqlite3 here cannot load extensions

        self.path.mkdir(parents=True, exist_ok=True)
        self.conn = dbapi2.connect(
            str(self.path / "store.db"), check_same_thread=False, isolation_level=None
        )
        index = {**self.index(), "text_fields": ["text"], "distance_type": "cosine"}
        self.store = SqliteStore(self.conn, index=index)  # type: ignore[arg-type]
        self.store.setup()

    def close(self) -> None:
        self.conn.close()
        self.store = None


class InMemoryPeer(Peer):
    uses_disk = False

    def open(self) -> None:
        from langgraph.store.memory import InMemoryStore

        self.store = InMemoryStore(index=self.index())  # type: ignore[arg-type]


class LangGraphQdrantPeer(Peer):
    def open(self) -> None:
        from langgraph.store.qdrant import QdrantStore
        from qdrant_client import QdrantClient

        self.client = QdrantClient(path=str(self.path))
        self.store = QdrantStore(self.client, index=self.index())  # type: ignore[arg-type]
        self.store.setup()

    def close(self) -> None:
        self.client.close()
        self.store = None


class Mem0Peer(Peer):
    def open(self) -> None:
        from langchain_core.language_models.fake_chat_models import FakeListChatModel
        from mem0 import Memory  # type: ignore[import-untyped]

        self.path.mkdir(parents=True, exist_ok=True)
        config = {
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "path": str(self.path / "qdrant"),
                    "collection_name": "bench",
                    "embedding_model_dims": self.dims,
                    "on_disk": True,
                },
            },
            "embedder": {"provider": "langchain", "config": {"model": self.embeddings}},
            "llm": {  # never called with infer=False
                "provider": "langchain",
                "config": {"model": FakeListChatModel(responses=["{}"])},
            },
            "history_db_path": str(self.path / "history.db"),
        }
        self.store = Memory.from_config(config)

    def ingest(self, data: Data, batch: int) -> None:
        for i in range(len(data.vectors)):
            self.store.add(
                [{"role": "user", "content": f"p{i}"}],
                user_id=namespace(int(data.namespace_of[i]))[1],
                metadata={"i": i},
                infer=False,
            )

    def search(self, data: Data, j: int) -> list[int]:
        user = namespace(int(data.query_namespace[j]))[1]
        # threshold: mem0 drops hits under 0.1 by default (most of random 384-d vectors)
        found = self.store.search(f"q{j}", filters={"user_id": user}, top_k=10, threshold=0.0)
        return [int(r["metadata"]["i"]) for r in found["results"]]

    def close(self) -> None:
        client = getattr(getattr(self.store, "vector_store", None), "client", None)
        if client is not None:
            client.close()
        self.store = None


PEERS: dict[str, type[Peer]] = {
    "tiered": TieredPeer,
    "tiered-optimized": TieredPeer,
    "sqlite": SqlitePeer,
    "inmemory": InMemoryPeer,
    "lgqdrant": LangGraphQdrantPeer,
    "mem0": Mem0Peer,
}
REQUIRES = {
    "tiered": ("langchain_tiered_memory.stores",),
    "tiered-optimized": ("langchain_tiered_memory.stores",),
    "inmemory": ("langgraph.store.memory",),
    "sqlite": ("pysqlite3", "sqlite_vec", "langgraph.store.sqlite"),
    "lgqdrant": ("langgraph.store.qdrant",),
    "mem0": ("mem0",),
}


def missing(store: str) -> str | None:
    """Why ``store`` cannot run here (a module of the ``bench`` extra is missing), or None.

    Also imports the store's modules, so the memory figures measured after it
    leave out the code (the same for every store).
    """
    for module in REQUIRES.get(store, ()):
        try:
            importlib.import_module(module)
        except Exception as exc:  # ImportError, or a peer failing at import time
            return f"skipped: {module} not importable ({type(exc).__name__}); pip install .[bench]"
    return None


def _disk_mb(path: Path) -> float:
    """Space the files take on disk (allocated blocks: sparse files count what they hold)."""
    files = (p for p in path.rglob("*") if p.is_file()) if path.exists() else ()
    return sum(p.stat().st_blocks * 512 for p in files) / (1024 * 1024)


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _recall(data: Data, found: list[list[int]]) -> float:
    scores = []
    for j, got in enumerate(found):
        exact = exact_top10(data, j, "ns")
        scores.append(len(set(got) & exact) / len(exact) if exact else float(not got))
    return float(np.mean(scores))


def run_store(store: str, n: int, config: Config, workdir: str) -> dict[str, Any]:
    """Measure one store at ``n`` points (in a fresh process); returns its row as a dict."""
    data = make_data(n, config.namespaces, config.dims, config.queries, config.seed)
    path = Path(workdir) / f"{'tiered' if store.startswith('tiered') else store}-{n}"
    peer = PEERS[store](path, LookupEmbeddings(data), config)
    missing(store)  # imported before the base figure: memory counts the store, not its code
    base = rss_mb()
    base_file = rss_file_mb()
    row: dict[str, Any] = {"store": store, "points": n, "queries": config.queries}
    if store == "tiered-optimized" and path.exists():
        peer.open()  # the files the "tiered" row loaded: same ingest
    else:
        shutil.rmtree(path, ignore_errors=True)
        peer.open()
        with stopwatch() as ingest:
            peer.ingest(data, config.batch)
        row["ingest_per_s"] = n / ingest.seconds
    if store == "tiered-optimized":
        with stopwatch() as optimize:
            peer.store.optimize(background=False)
        row["optimize_s"] = optimize.seconds

    def search(j: int) -> Callable[[], list[int]]:
        return lambda: peer.search(data, j)

    if peer.uses_disk:
        peer.close()
        with stopwatch() as reopen:
            peer.open()
            search(0)()
        row["reopen_s"] = reopen.seconds
    cold, _ = time_calls([search(j) for j in range(config.queries)])
    warm, found = time_calls([search(j) for j in range(config.queries)])
    row.update(
        cold_p50_ms=percentile(cold, 50),
        cold_p99_ms=percentile(cold, 99),
        warm_p50_ms=percentile(warm, 50),
        warm_p99_ms=percentile(warm, 99),
        recall=_recall(data, found),
        rss_mb=rss_mb() - base,
        rss_file_mb=_minus(rss_file_mb(), base_file),
        peak_mb=_peak_mb() - base,
    )
    peer.close()
    if peer.uses_disk:
        row["disk_mb"] = _disk_mb(path)
    if store != "tiered":  # the optimized row reuses the tiered row's files
        shutil.rmtree(path, ignore_errors=True)
    return row


HEADERS = [
    "store",
    "points",
    "ingest pts/s",
    "ingest vs SqliteStore",
    "p50 / p99 ms cold",
    "p50 / p99 ms warm",
    "recall@10",
    "RSS added MB",
    "of it file pages MB",
    "peak RSS MB",
    "RSS vs SqliteStore",
    "disk MB",
    "reopen + first query s",
    "optimize s",
]


def _minus(value: float | None, base: float | None) -> float | None:
    return None if value is None or base is None else value - base


def _pair(row: dict[str, Any], kind: str) -> str:
    return f"{row[f'{kind}_p50_ms']:.2f} / {row[f'{kind}_p99_ms']:.2f}"


def _times(value: float | None) -> str | None:
    return None if value is None else f"{value:.2f}x"


def table_rows(rows: list[dict[str, Any]]) -> list[list[Any]]:
    """Rows for :data:`HEADERS`, with ratios against SqliteStore of the same size."""
    base = {r["points"]: r for r in rows if r["store"] == BASELINE and "skipped" not in r}
    out: list[list[Any]] = []
    for r in rows:
        if "skipped" in r:
            out.append([LABELS[r["store"]], r["points"], r["skipped"], *["-"] * 11])
            continue
        sq = base.get(r["points"], {})
        ingest = r.get("ingest_per_s")
        out.append(
            [
                LABELS[r["store"]],
                r["points"],
                ingest,
                _times(ratio(ingest, sq.get("ingest_per_s"))),
                _pair(r, "cold"),
                _pair(r, "warm"),
                r["recall"],
                r["rss_mb"],
                r.get("rss_file_mb"),
                r["peak_mb"],
                _times(ratio(r["rss_mb"], sq.get("rss_mb"))),
                r.get("disk_mb"),
                r.get("reopen_s"),
                r.get("optimize_s"),
            ]
        )
    return out


def run(config: Config) -> list[dict[str, Any]]:
    """Run every (size, store) pair; print progress to stderr; return the rows."""
    workdir = tempfile.mkdtemp(prefix="store-peers-")
    rows: list[dict[str, Any]] = []
    measured: set[tuple[str, int]] = set()
    try:
        for n in config.sizes:
            for store in config.stores:
                points = min(n, config.slow_points) if store in SLOW else n
                if (store, points) in measured:
                    continue  # a slow peer, already measured at its cap
                measured.add((store, points))
                run_config = config
                if store in SLOW and config.slow_queries is not None:
                    queries = min(config.queries, config.slow_queries)
                    run_config = dataclasses.replace(config, queries=queries)
                reason = missing(store)
                if reason is not None:
                    rows.append({"store": store, "points": points, "skipped": reason})
                    continue
                print(f"[store_peers] {store} at {points:,} points ...", file=sys.stderr)
                try:
                    row = run_isolated(
                        run_store, store, points, run_config, workdir, isolated=config.isolated
                    )
                except RuntimeError as exc:  # a peer failing is a row, not the end of the run
                    row = {"store": store, "points": points, "skipped": f"failed: {exc}"[:120]}
                print(f"[store_peers] {json.dumps(row)}", file=sys.stderr, flush=True)
                rows.append(row)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return rows


def parse_args(argv: list[str] | None = None) -> tuple[Config, str | None]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", help="point counts (default 10k 100k)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 1,000 points")
    parser.add_argument("--stores", default=",".join(STORES), help="comma-separated")
    parser.add_argument("--namespaces", type=int, default=100)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--queries", type=int, help="queries per pass (default 200)")
    parser.add_argument("--batch", type=int, default=1_000, help="puts per batch() call")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument(
        "--slow-points", type=int, default=10_000, help="most points for the slow peers"
    )
    parser.add_argument(
        "--slow-queries", type=int, help="most queries per pass for the slow peers (default: all)"
    )
    parser.add_argument(
        "--indexing-threads",
        type=int,
        help="HNSW build threads of the project's store (default: Qdrant Edge's choice)",
    )
    parser.add_argument("--in-process", action="store_true", help="no process per store")
    parser.add_argument("--json", help="also write the rows as JSON to this path")
    args = parser.parse_args(argv)
    stores = tuple(s.strip() for s in args.stores.split(",") if s.strip())
    unknown = set(stores) - set(STORES)
    if unknown:
        parser.error(f"unknown stores {sorted(unknown)}: choose from {', '.join(STORES)}")
    sizes = tuple(args.sizes or ((1_000,) if args.quick else (10_000, 100_000)))
    config = Config(
        sizes=sizes,
        stores=stores,
        namespaces=args.namespaces,
        dims=args.dims,
        queries=args.queries or (20 if args.quick else 200),
        batch=args.batch,
        seed=args.seed,
        slow_points=args.slow_points,
        slow_queries=args.slow_queries,
        isolated=not args.in_process,
        indexing_threads=args.indexing_threads,
    )
    return config, args.json


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    config, json_path = parse_args(argv)
    rows = run(config)
    print(
        f"Store peers: {config.dims}-d random unit vectors, {config.namespaces} namespaces, "
        f"filtered top-10 in one namespace, {config.queries} queries, seed {config.seed}; "
        f"{environment()}"
    )
    print(format_table(HEADERS, table_rows(rows)))
    print(
        "\ncold: first pass of the queries after reopening the store (InMemoryStore: after "
        "the ingest); warm: the second pass. RSS added: the reopened store after both "
        "passes; of it file pages: memory-mapped file pages among them, which the kernel can "
        "drop; peak RSS: the highest during the run, ingest included. Ratios: this row / "
        "SqliteStore at the same size."
    )
    slow = [r for r in rows if r["store"] in SLOW and "skipped" not in r]
    if slow:
        print(
            f"{', '.join(LABELS[r['store']] for r in slow)}: at most {config.slow_points:,} "
            f"points, {slow[0]['queries']} queries per pass."
        )
    if json_path:
        Path(json_path).write_text(json.dumps(rows, indent=2))
    return rows


if __name__ == "__main__":
    main()
