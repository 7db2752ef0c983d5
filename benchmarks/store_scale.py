"""Store scale benchmark: upsert rate, filtered top-10 latency, recall, memory, reopen.

For each size (10k and 100k points by default, 1M with ``--million``) and each
engine (Qdrant Edge embedded, qdrant-client local mode, LangGraph's
``InMemoryStore``), the script loads seeded random 384-d unit vectors spread
over 100 namespaces, then measures:

* upsert points/s through ``store.batch`` of ``PutOp`` (embedding is a lookup of
  precomputed vectors, so the figure is the store's own cost);
* top-10 search latency p50/p99 with a namespace filter, and with a namespace
  plus a time-range filter (``{"ts": {"$gte": lo, "$lte": hi}}`` on a value field);
* top-10 latency over the whole collection (prefix ``("bench",)``) with a
  value-field equality filter (``{"group": "g07"}``, 1% of the points) and with a
  value-field numeric range (``{"ts": {"$gte": lo, "$lte": hi}}``, 1% of 30 days);
* a filter-only listing (no query, newest 20) with the same equality filter;
* recall@10 of the ranked searches against exact search (numpy brute force over
  the same scope);
* resident memory added by the loaded store, and the time to reopen it and answer
  one query.

The embedded store's files are read into the page cache (``store.warm()``) after
loading and before timing: this machine's page cache drops files within minutes,
and a cold payload costs a random disk read (about 1 ms) per hit.

Each engine runs in a fresh process (``--in-process`` to skip that), so memory
figures do not mix. Ratio columns compare with ``InMemoryStore`` in the same run.

Usage:
    python -m benchmarks.store_scale                 # 10k and 100k
    python -m benchmarks.store_scale --million       # adds 1M
    python -m benchmarks.store_scale --quick         # 2k smoke run
    python -m benchmarks.store_scale --sizes 50000 --engines embedded,inmemory
    python -m benchmarks.store_scale --sizes 100000 --engines embedded \
        --indexing-threshold-kb 100000000   # no HNSW graph: payload-index scans only
    python -m benchmarks.store_scale --sizes 1000000 --engines embedded \
        --full-scan-points 20000   # also: the same store, filters under 20k points scanned
    python -m benchmarks.store_scale --sizes 1000000 --engines embedded \
        --workdir /tmp/ss --keep   # the store stays in /tmp/ss/embedded-1000000
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):  # run as a file: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, PutOp

from benchmarks._common import (
    environment,
    format_table,
    percentile,
    ratio,
    rss_mb,
    run_isolated,
    stopwatch,
    time_calls,
)

ENGINES = ("embedded", "client", "inmemory")
ENGINE_LABELS = {
    "embedded": "embedded (Qdrant Edge)",
    "client": "client (qdrant-client local)",
    "inmemory": "InMemoryStore",
}
DAY = 86_400.0
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
SPAN = 30 * DAY
WINDOW = 0.25  # share of the time span a time-range query covers
NARROW = 0.01  # share of the time span a collection-wide range query covers
GROUPS = 100  # distinct values of the equality-filtered field


@dataclasses.dataclass(frozen=True)
class Config:
    """Benchmark settings (see ``--help``)."""

    sizes: tuple[int, ...] = (10_000, 100_000)
    engines: tuple[str, ...] = ENGINES
    namespaces: int = 100
    dims: int = 384
    queries: int = 200
    client_queries: int = 20
    batch: int = 1_000
    seed: int = 42
    optimize: bool = True
    isolated: bool = True
    skip_client_above: int | None = None
    skip_inmemory_above: int | None = None
    workdir: str | None = None
    indexing_threshold_kb: int | None = None
    indexing_threads: int | None = None
    full_scan_points: tuple[int | None, ...] = ()
    keep: bool = False

    def optimizers(self) -> Any:
        """The embedded engine's :class:`EdgeOptimizers`, or ``None`` for Edge's defaults."""
        if self.indexing_threshold_kb is None and self.indexing_threads is None:
            return None
        from langchain_tiered_memory.stores import EdgeOptimizers

        return EdgeOptimizers(
            indexing_threshold_kb=self.indexing_threshold_kb,
            indexing_threads=self.indexing_threads,
        )


@dataclasses.dataclass
class Data:
    """Seeded points and queries for one size."""

    vectors: np.ndarray  # (n, dims) float32, unit length
    namespace_of: np.ndarray  # (n,) int
    ts: np.ndarray  # (n,) float epoch seconds
    queries: np.ndarray  # (q, dims) float32, unit length
    query_namespace: np.ndarray  # (q,) int
    query_window: np.ndarray  # (q, 2) float: [lo, hi]
    group_of: np.ndarray  # (n,) int: the point's ``group`` value
    query_group: np.ndarray  # (q,) int
    query_narrow: np.ndarray  # (q, 2) float: [lo, hi], NARROW of the span


def _unit(rng: np.random.Generator, rows: int, dims: int) -> np.ndarray:
    out = np.empty((rows, dims), dtype=np.float32)
    for start in range(0, rows, 100_000):  # in chunks: bounded float64 temporaries
        block = rng.standard_normal((min(100_000, rows - start), dims))
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[start : start + len(block)] = block
    return out


def make_data(n: int, namespaces: int, dims: int, queries: int, seed: int) -> Data:
    """Points spread evenly over ``namespaces``, timestamps uniform over 30 days."""
    rng = np.random.default_rng(seed)
    vectors = _unit(rng, n, dims)
    ts = T0 + rng.random(n) * SPAN
    qrng = np.random.default_rng(seed + 1)
    lo = T0 + qrng.random(queries) * SPAN * (1 - WINDOW)
    grng = np.random.default_rng(seed + 2)  # separate stream: the other fields stay as before
    narrow = T0 + grng.random(queries) * SPAN * (1 - NARROW)
    return Data(
        vectors=vectors,
        namespace_of=np.arange(n) % namespaces,
        ts=ts,
        queries=_unit(qrng, queries, dims),
        query_namespace=qrng.integers(0, namespaces, queries),
        query_window=np.stack([lo, lo + SPAN * WINDOW], axis=1),
        group_of=grng.integers(0, GROUPS, n),
        query_group=grng.integers(0, GROUPS, queries),
        query_narrow=np.stack([narrow, narrow + SPAN * NARROW], axis=1),
    )


class LookupEmbeddings(Embeddings):
    """Embeddings that look texts up: ``"p<i>"`` is point i, ``"q<j>"`` is query j."""

    def __init__(self, data: Data) -> None:
        self.data = data

    def _vector(self, text: str) -> list[float]:
        table = self.data.vectors if text[0] == "p" else self.data.queries
        return table[int(text[1:])].tolist()  # type: ignore[no-any-return]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


def namespace(j: int) -> tuple[str, str]:
    return ("bench", f"ns{j:03d}")


def put_points(store: BaseStore, data: Data, batch: int) -> None:
    """Write every point of ``data`` to ``store`` in ``batch()`` calls of ``batch`` puts."""
    n = len(data.vectors)
    for start in range(0, n, batch):
        store.batch(
            [
                PutOp(
                    namespace(int(data.namespace_of[i])),
                    f"p{i}",
                    {
                        "text": f"p{i}",
                        "ts": float(data.ts[i]),
                        "group": f"g{int(data.group_of[i]):02d}",
                    },
                )
                for i in range(start, min(start + batch, n))
            ]
        )


def _open(
    engine: str,
    path: Path,
    embeddings: Embeddings,
    dims: int,
    optimizers: Any = None,
    full_scan_points: Any = "auto",
) -> tuple[BaseStore, Any]:
    """Open (or reopen) a store; returns it and the client to close after it, if any."""
    index: Any = {"dims": dims, "embed": embeddings, "fields": ["text"]}
    if engine == "inmemory":
        from langgraph.store.memory import InMemoryStore

        return InMemoryStore(index=index), None
    from langchain_tiered_memory.stores import QdrantMemoryStore

    if engine == "embedded":
        store = QdrantMemoryStore.embedded(
            path,
            index=index,
            retrieval="dense",
            optimizers=optimizers,
            full_scan_points=full_scan_points,
        )
        return store, None
    from qdrant_client import QdrantClient

    client = QdrantClient(path=str(path))
    return QdrantMemoryStore.from_client(client, index=index, retrieval="dense"), client


def _close(store: BaseStore, client: Any) -> None:
    close = getattr(store, "close", None)
    if close is not None:
        close()
    if client is not None:
        client.close()


FILTERS = ("ns", "time", "eq", "range", "list")
"""Filter kinds: namespace, namespace + time window, collection-wide value equality,
collection-wide narrow value range, and a filter-only listing (no query)."""


def _members(data: Data, j: int, kind: str) -> np.ndarray:
    if kind in ("eq", "list"):
        return np.flatnonzero(data.group_of == data.query_group[j])
    if kind == "range":
        lo, hi = data.query_narrow[j]
        return np.flatnonzero((data.ts >= lo) & (data.ts <= hi))
    members = np.flatnonzero(data.namespace_of == data.query_namespace[j])
    if kind == "time":
        lo, hi = data.query_window[j]
        members = members[(data.ts[members] >= lo) & (data.ts[members] <= hi)]
    return members


def exact_top10(data: Data, j: int, kind: str) -> set[int]:
    """Ids of the exact top-10 of query ``j`` under filter ``kind`` (numpy brute force)."""
    members = _members(data, j, kind)
    scores = data.vectors[members] @ data.queries[j]
    top = np.argsort(-scores, kind="stable")[:10]
    return {int(i) for i in members[top]}


def _recall(data: Data, results: list[list[Any]], kind: str) -> float:
    values = []
    for j, found in enumerate(results):
        exact = exact_top10(data, j, kind)
        got = {int(item.key[1:]) for item in found}
        if exact:
            values.append(len(got & exact) / len(exact))
        else:
            values.append(0.0 if got else 1.0)
    return float(np.mean(values)) if values else float("nan")


def run_engine(engine: str, n: int, config: Config, workdir: str) -> dict[str, Any]:
    """Load ``n`` points into one engine and measure it; returns one table row as a dict."""
    n_queries = config.client_queries if engine == "client" else config.queries
    data = make_data(n, config.namespaces, config.dims, n_queries, config.seed)
    embeddings = LookupEmbeddings(data)
    path = Path(workdir) / f"{engine}-{n}"
    shutil.rmtree(path, ignore_errors=True)
    base_rss = rss_mb()

    store, client = _open(engine, path, embeddings, config.dims, config.optimizers())
    with stopwatch() as upsert:
        put_points(store, data, config.batch)
    optimize_s = None
    if config.optimize and hasattr(store, "optimize"):
        with stopwatch() as opt:
            store.optimize(background=False)  # the process is idle: build in place
        optimize_s = opt.seconds
    warm = getattr(store, "warm", None)
    if warm is not None:  # the page cache may have dropped the files (see stores/edge/warm.py)
        warm()

    def search(j: int, kind: str) -> list[Any]:
        flt: dict[str, Any] | None = None
        ns: tuple[str, ...] = namespace(int(data.query_namespace[j]))
        if kind == "time":
            lo, hi = data.query_window[j]
            flt = {"ts": {"$gte": float(lo), "$lte": float(hi)}}
        elif kind in ("eq", "list"):
            ns, flt = ("bench",), {"group": f"g{int(data.query_group[j]):02d}"}
        elif kind == "range":
            lo, hi = data.query_narrow[j]
            ns, flt = ("bench",), {"ts": {"$gte": float(lo), "$lte": float(hi)}}
        if kind == "list":
            return store.search(ns, filter=flt, limit=20)
        return store.search(ns, query=f"q{j}", filter=flt, limit=10)

    def measure() -> tuple[dict[str, list[float]], dict[str, list[list[Any]]]]:
        latencies: dict[str, list[float]] = {}
        results: dict[str, list[list[Any]]] = {}
        for kind in FILTERS:
            for j in range(min(3, n_queries)):  # warm-up, not timed
                search(j, kind)
            calls = [partial(search, j, kind) for j in range(n_queries)]
            latencies[kind], results[kind] = time_calls(calls)
        return latencies, results

    def figures(
        latencies: dict[str, list[float]], results: dict[str, list[list[Any]]]
    ) -> dict[str, Any]:
        return {
            **{f"{kind}_p50_ms": percentile(latencies[kind], 50) for kind in FILTERS},
            **{f"{kind}_p99_ms": percentile(latencies[kind], 99) for kind in FILTERS},
            **{f"recall_{kind}": _recall(data, results[kind], kind) for kind in FILTERS[:-1]},
        }

    latencies, results = measure()
    loaded_rss = rss_mb()
    res_ns = results["ns"]
    walks = []
    for points in config.full_scan_points if engine == "embedded" else ():
        _close(store, client)
        store, client = _open(
            engine, path, embeddings, config.dims, config.optimizers(), full_scan_points=points
        )
        getattr(store, "warm", lambda: None)()
        walks.append({"full_scan_points": str(points), **figures(*measure())})

    reopen_s = None
    if engine != "inmemory":
        _close(store, client)
        with stopwatch() as reopen:
            store, client = _open(engine, path, embeddings, config.dims, config.optimizers())
            again = search(0, "ns")
        reopen_s = reopen.seconds
        assert [i.key for i in again] == [i.key for i in res_ns[0]], "reopen lost data"
    _close(store, client)
    if not config.keep:  # --keep: the store stays in --workdir, to be timed again
        shutil.rmtree(path, ignore_errors=True)
    return {
        "engine": engine,
        "points": n,
        "upsert_per_s": n / upsert.seconds,
        "optimize_s": optimize_s,
        "queries": n_queries,
        **figures(latencies, results),
        "walks": walks,
        "memory_mb": loaded_rss - base_rss,
        "reopen_s": reopen_s,
        "indexing_threshold_kb": config.indexing_threshold_kb if engine == "embedded" else None,
        "indexing_threads": config.indexing_threads if engine == "embedded" else None,
    }


HEADERS = [
    "engine",
    "points",
    "upsert pts/s",
    "ns p50 ms",
    "ns p99 ms",
    "ns+time p50 ms",
    "ns+time p99 ms",
    "recall@10 ns",
    "recall@10 ns+time",
    "eq p50 ms",
    "eq p99 ms",
    "range p50 ms",
    "range p99 ms",
    "recall@10 eq",
    "recall@10 range",
    "list eq p50 ms",
    "list eq p99 ms",
    "queries",
    "memory MB",
    "reopen s",
    "optimize s",
    "upsert vs IMS",
    "p50 speed-up vs IMS",
]


def table_rows(rows: list[dict[str, Any]]) -> list[list[Any]]:
    """Rows for :data:`HEADERS`, with ratios against InMemoryStore of the same size."""
    base = {r["points"]: r for r in rows if r["engine"] == "inmemory" and "skipped" not in r}
    out: list[list[Any]] = []
    for r in _with_walks(rows):
        label = ENGINE_LABELS[r["engine"]]
        if r.get("indexing_threshold_kb") is not None:
            label += f", indexing threshold {r['indexing_threshold_kb']:,} KB"
        if r.get("indexing_threads") is not None:
            label += f", {r['indexing_threads']} indexing threads"
        if r.get("full_scan_points") is not None:
            label += f", same store with full_scan_points={r['full_scan_points']}"
        if "skipped" in r:
            out.append([label, r["points"], r["skipped"], *["-"] * (len(HEADERS) - 3)])
            continue
        ims = base.get(r["points"])
        upsert_ratio = ratio(r["upsert_per_s"], ims["upsert_per_s"]) if ims else None
        speedup = ratio(ims["ns_p50_ms"], r["ns_p50_ms"]) if ims else None
        out.append(
            [
                label,
                r["points"],
                r["upsert_per_s"],
                r["ns_p50_ms"],
                r["ns_p99_ms"],
                r["time_p50_ms"],
                r["time_p99_ms"],
                r["recall_ns"],
                r["recall_time"],
                r["eq_p50_ms"],
                r["eq_p99_ms"],
                r["range_p50_ms"],
                r["range_p99_ms"],
                r["recall_eq"],
                r["recall_range"],
                r["list_p50_ms"],
                r["list_p99_ms"],
                r["queries"],
                r["memory_mb"],
                r["reopen_s"],
                r["optimize_s"],
                None if upsert_ratio is None else f"{upsert_ratio:.2f}x",
                None if speedup is None else f"{speedup:.2g}x",
            ]
        )
    return out


def _with_walks(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row, then one per ``full_scan_points`` setting measured on its store."""
    out: list[dict[str, Any]] = []
    for r in rows:
        out.append(r)
        for walk in r.get("walks", ()):
            keep = ("engine", "points", "queries", "upsert_per_s", "indexing_threads")
            shared = {k: r[k] for k in keep}
            out.append({**shared, **walk, "memory_mb": None, "reopen_s": None, "optimize_s": None})
    return out


def _skip_reason(engine: str, n: int, config: Config) -> str | None:
    limits = {"client": config.skip_client_above, "inmemory": config.skip_inmemory_above}
    limit = limits.get(engine)
    if limit is not None and n > limit:
        return f"skipped (> {limit:,})"
    return None


def run(config: Config) -> list[dict[str, Any]]:
    """Run every (size, engine) pair; print progress to stderr; return the rows."""
    workdir = config.workdir or tempfile.mkdtemp(prefix="store-scale-")
    Path(workdir).mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    try:
        for n in config.sizes:
            for engine in config.engines:
                reason = _skip_reason(engine, n, config)
                if reason:
                    rows.append({"engine": engine, "points": n, "skipped": reason})
                    continue
                print(f"[store_scale] {engine} at {n:,} points ...", file=sys.stderr, flush=True)
                row = run_isolated(run_engine, engine, n, config, workdir, isolated=config.isolated)
                print(f"[store_scale] {json.dumps(row)}", file=sys.stderr, flush=True)
                rows.append(row)
    finally:
        if config.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return rows


def _full_scan(text: str) -> int | None:
    return None if text.lower() == "none" else int(text)


def parse_args(argv: list[str] | None = None) -> tuple[Config, str | None]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", help="point counts (default 10k 100k)")
    parser.add_argument("--million", action="store_true", help="also run 1,000,000 points")
    parser.add_argument("--quick", action="store_true", help="smoke run: 2,000 points")
    parser.add_argument("--engines", default=",".join(ENGINES), help="comma-separated")
    parser.add_argument("--namespaces", type=int, default=100)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--queries", type=int, help="queries per filter kind (default 200)")
    parser.add_argument(
        "--client-queries", type=int, default=20, help="queries for the client engine"
    )
    parser.add_argument("--batch", type=int, default=1_000, help="puts per batch() call")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--no-optimize", action="store_true", help="skip store.optimize()")
    parser.add_argument("--skip-client-above", type=int, help="no client row above N points")
    parser.add_argument("--skip-inmemory-above", type=int, help="no InMemoryStore row above N")
    parser.add_argument(
        "--indexing-threshold-kb",
        type=int,
        help="embedded engine: segments above this many KB of vectors get an HNSW graph "
        "(Edge's default 10,000); above the collection's size no segment gets one and "
        "filtered searches scan the points their payload indexes select",
    )
    parser.add_argument(
        "--indexing-threads",
        type=int,
        help="embedded engine: threads of the HNSW build (Edge's default: CPUs - 1)",
    )
    parser.add_argument(
        "--full-scan-points",
        type=_full_scan,
        nargs="+",
        default=[],
        help="embedded engine: also measure the searches on the same store reopened with "
        "QdrantMemoryStore(full_scan_points=N), for each N (an int, or 'none': the engine's "
        "own full-scan threshold); the main rows use the store's default, 'auto'",
    )
    parser.add_argument("--in-process", action="store_true", help="no process per engine")
    parser.add_argument("--workdir", help="directory for store files (default: a temp dir)")
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep each store in --workdir (<engine>-<points>) instead of deleting it",
    )
    parser.add_argument("--json", help="also write the rows as JSON to this path")
    args = parser.parse_args(argv)

    if args.keep and not args.workdir:
        parser.error("--keep needs --workdir: the default work directory is deleted")
    engines = tuple(e.strip() for e in args.engines.split(",") if e.strip())
    unknown = set(engines) - set(ENGINES)
    if unknown:
        parser.error(f"unknown engines {sorted(unknown)}: choose from {', '.join(ENGINES)}")
    sizes = tuple(args.sizes or ((2_000,) if args.quick else (10_000, 100_000)))
    if args.million:
        sizes += (1_000_000,)
    queries = args.queries or (50 if args.quick else 200)
    config = Config(
        sizes=sizes,
        engines=engines,
        namespaces=args.namespaces,
        dims=args.dims,
        queries=queries,
        client_queries=min(args.client_queries, queries),
        batch=args.batch,
        seed=args.seed,
        optimize=not args.no_optimize,
        isolated=not args.in_process,
        skip_client_above=args.skip_client_above,
        skip_inmemory_above=args.skip_inmemory_above,
        workdir=args.workdir,
        indexing_threshold_kb=args.indexing_threshold_kb,
        indexing_threads=args.indexing_threads,
        full_scan_points=tuple(args.full_scan_points),
        keep=args.keep,
    )
    return config, args.json


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    config, json_path = parse_args(argv)
    rows = run(config)
    print(
        f"Store scale: {config.dims}-d random unit vectors, {config.namespaces} namespaces, "
        f"top-10, seed {config.seed}; {environment()}"
    )
    print(format_table(HEADERS, table_rows(rows)))
    print(
        "\nns: namespace filter; ns+time: namespace + ts range filter (25% of 30 days). "
        "eq / range: whole collection with a value equality filter (1% of points) / a "
        "value ts range (1% of 30 days); list eq: the eq filter, no query, newest 20. "
        "memory: RSS added by the loaded store. reopen: open + first query. "
        "upsert vs IMS: upsert rate / InMemoryStore's; p50 speed-up: InMemoryStore p50 / "
        "engine p50 (namespace filter)."
    )
    if json_path:
        Path(json_path).write_text(json.dumps(rows, indent=2))
    return rows


if __name__ == "__main__":
    main()
