"""HNSW build time, latency and recall under the payload-index layouts of the embedded store.

Qdrant adds HNSW links for every value block of every payload index between its
full-scan threshold and about a fifth of the points. The store links only ``ns_prefixes``
(``stores.edge_build.LINKED_INDEXES``); stores made before linked every index.
It also makes ``ns_path`` the tenant key (``stores.edge_build.TENANT_INDEX``), so
optimised segments keep each namespace's points together; stores made before
did not. This script writes ``--points`` points of ``benchmarks/store_scale.py``'s
data (seeded 384-d unit vectors over ``--namespaces`` namespaces, through the
store's own ``batch``, not optimised), copies them into a fresh Qdrant Edge
shard per layout, times ``optimize()`` and then top-10 queries with a namespace
filter (the engine's walk, and an exact scan) and with namespace + time range,
scored against exact search (numpy). Layouts:

* ``current``: what stores get now;
* ``no namespace layout``: the same without the tenant key;
* ``every index linked``: Qdrant's default links and no tenant key.

Usage:
    python benchmarks/hnsw_links.py --points 100000
    python benchmarks/hnsw_links.py --points 200000 --namespaces 20 \\
        --layouts current "no namespace layout"
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import qdrant_edge as qe

if __package__ in (None, ""):  # run as a file: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import environment, format_table, percentile
from langchain_tiered_memory.stores.edge.build import VectorNames, edge_config, index_schema
from langchain_tiered_memory.stores.edge.files import META, recover
from langchain_tiered_memory.stores.requests import DENSE, SPARSE

NAMES = VectorNames(dense=DENSE, sparse=SPARSE)

LAYOUTS = ("current", "no namespace layout", "every index linked")
HEADERS = [
    "layout",
    "points",
    "optimize s",
    "ns p50 / p99 ms",
    "ns exact scan p50 / p99 ms",
    "ns + time p50 / p99 ms",
    "recall@10 ns / ns + time",
]


def _schema(layout: str, name: str, kind: qe.PayloadSchemaType) -> Any:
    if layout == "every index linked":
        return kind
    return index_schema(name, kind, tenant=False if layout == "no namespace layout" else None)


def _copy(source: qe.EdgeShard, target: qe.EdgeShard, layout: str, points: int) -> dict[str, Any]:
    """Copy the first ``points`` points; returns their ids, vectors, namespaces and times."""
    for name, index in source.info().payload_schema.items():
        target.update(
            qe.UpdateOperation.create_field_index(name, _schema(layout, name, index.data_type))
        )
    ids: list[str] = []
    vectors: list[list[float]] = []
    namespaces: list[str] = []
    times: list[float] = []
    offset: Any = None
    while len(ids) < points:
        request = qe.ScrollRequest(offset=offset, limit=1000, with_payload=True, with_vector=True)
        records, offset = source.scroll(request)
        records = records[: points - len(ids)]
        target.update(
            qe.UpdateOperation.upsert_points(
                [qe.Point(r.id, r.vector or {}, r.payload or {}) for r in records]
            )
        )
        for r in records:
            vector: Any = r.vector
            payload: Any = r.payload
            ids.append(str(r.id))
            vectors.append(vector[DENSE][0])
            namespaces.append(payload["ns_path"])
            times.append(payload["value"]["ts"])
        if offset is None:
            break
    unit = np.asarray(vectors, dtype=np.float32)
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    return {"ids": ids, "unit": unit, "ns": np.asarray(namespaces), "ts": np.asarray(times)}


def _measure(shard: qe.EdgeShard, data: dict[str, Any], queries: int) -> dict[str, Any]:
    rng = random.Random(7)
    lo, hi = np.percentile(data["ts"], [30, 60])
    out: dict[str, Any] = {}
    for kind in ("ns", "exact", "time"):
        latencies, recalls = [], []
        for q in range(queries):
            vector = data["unit"][rng.randrange(len(data["ids"]))]
            vector = vector + np.random.default_rng(q).normal(0, 0.02, vector.shape[0])
            ns = data["ns"][rng.randrange(len(data["ids"]))]
            must: list[Any] = [qe.FieldCondition("ns_prefixes", match=qe.MatchValue(ns))]
            mask = data["ns"] == ns
            if kind == "time":
                must.append(qe.FieldCondition("value.ts", range=qe.RangeFloat(gte=lo, lte=hi)))
                mask &= (data["ts"] >= lo) & (data["ts"] <= hi)
            request = qe.QueryRequest(
                query=qe.Query.Nearest([vector.tolist()], using=DENSE),
                filter=qe.Filter(must=must),
                limit=10,
                with_payload=False,
                params=qe.SearchParams(exact=True) if kind == "exact" else None,
            )
            started = time.perf_counter()
            found = shard.query(request)
            latencies.append((time.perf_counter() - started) * 1e3)
            rows = np.flatnonzero(mask)
            best = rows[np.argsort(-(data["unit"][rows] @ vector))[:10]]
            truth = {data["ids"][i] for i in best}
            got = {str(p.id) for p in found}
            recalls.append(len(got & truth) / len(truth) if truth else float(not got))
        out[kind] = (percentile(latencies, 50), percentile(latencies, 99), float(np.mean(recalls)))
    return out


def _write_store(path: Path, points: int, namespaces: int) -> Path:
    """A store of ``points`` store_scale points, never optimised; returns its path."""
    from benchmarks.store_scale import LookupEmbeddings, _open, make_data, put_points

    data = make_data(points, namespaces=namespaces, dims=384, queries=1, seed=42)
    store, _ = _open("embedded", path, LookupEmbeddings(data), 384)
    try:
        put_points(store, data, 1_000)
    finally:
        store.close()  # type: ignore[attr-defined]
    return path


def run(
    points: int,
    queries: int,
    workdir: Path,
    namespaces: int = 100,
    layouts: tuple[str, ...] = LAYOUTS,
) -> list[list[Any]]:
    """One table row per layout."""
    store = _write_store(workdir / "source", points, namespaces)
    rows = []
    for layout in layouts:
        target_dir = workdir / layout.replace(" ", "-")
        shutil.rmtree(target_dir, ignore_errors=True)
        source = qe.EdgeShard.load(str(recover(store / "memories")))
        try:
            dims = json.loads((store / "memories" / META).read_text())["dims"]
            target = qe.EdgeShard.create(str(target_dir), edge_config(NAMES, dims))
            data = _copy(source, target, layout, points)
        finally:
            source.close()
        try:
            started = time.perf_counter()
            target.optimize()
            build = time.perf_counter() - started
            m = _measure(target, data, queries)
        finally:
            target.close()
            shutil.rmtree(target_dir, ignore_errors=True)
        rows.append(
            [
                layout,
                f"{len(data['ids']):,}",
                f"{build:.1f}",
                f"{m['ns'][0]:.2f} / {m['ns'][1]:.2f}",
                f"{m['exact'][0]:.2f} / {m['exact'][1]:.2f}",
                f"{m['time'][0]:.2f} / {m['time'][1]:.2f}",
                f"{m['ns'][2]:.3f} / {m['time'][2]:.3f}",
            ]
        )
        print(f"[hnsw_links] {layout}: optimize {build:.1f} s", flush=True)
    shutil.rmtree(store, ignore_errors=True)
    return rows


def main(argv: list[str] | None = None) -> list[list[Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--namespaces", type=int, default=100)
    parser.add_argument("--layouts", nargs="+", choices=LAYOUTS, default=list(LAYOUTS))
    parser.add_argument("--workdir", help="directory for the copies (default: a temp dir)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(args.workdir or tmp)
        rows = run(args.points, args.queries, workdir, args.namespaces, tuple(args.layouts))
    print(f"HNSW links by payload-index layout; {environment()}")
    print(format_table(HEADERS, rows))
    return rows


if __name__ == "__main__":
    main()
