"""Episodic retrieval benchmark: ``retrieve_similar`` latency for one user among many.

On the embedded Qdrant store (Qdrant Edge), one user's episodes grow to each size
(10k, then 100k by default) while other users' episodes share the same collection
(``--other-users`` x ``--other-per-user``). For each size the script times
``EpisodicMemory.retrieve_similar`` end to end (query embedding, the store's
filtered search, re-ranking, access-count bookkeeping) for a set of queries,
plain and with each store-side filter (outcome, max age, tags, session), and
prints p50/p99 in milliseconds. It also times ``record`` of single episodes.

Bulk loading writes the same payload ``EpisodicMemory.record`` writes
(``episode_to_value``) through ``store.batch``, so setup is fast; the timed
calls go through the public API.

Embeddings: ``hashing`` (default; deterministic, no model, so the figures are the
memory layer and the store) or ``local`` (the bundled MiniLM model; adds the
real query-embedding cost, and loading takes much longer).

Usage:
    python -m benchmarks.episodic             # 10k and 100k
    python -m benchmarks.episodic --quick     # 1k and 5k, fewer queries
    python -m benchmarks.episodic --sizes 20000 --queries 300 --embeddings local
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, PutOp

from benchmarks._common import (
    environment,
    fmt,
    format_table,
    percentile,
    stopwatch,
    time_calls,
)
from langchain_tiered_memory.testing.fakes import FakeClock, HashingEmbeddings
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.tiers.episodic.memory import EpisodicMemory
from langchain_tiered_memory.tiers.episodic.models import Episode, Outcome
from langchain_tiered_memory.tiers.episodic.payload import (
    EMBED_FIELDS,
    episode_to_value,
    episodes_namespace,
)

VERBS = ["deploy", "debug", "migrate", "refactor", "benchmark", "document", "review", "upgrade"]
OBJECTS = [
    "billing api",
    "orders service",
    "auth gateway",
    "search index",
    "etl pipeline",
    "mobile app",
]
DETAILS = [
    "timeout",
    "memory leak",
    "schema change",
    "rate limit",
    "flaky test",
    "tls expiry",
    "cold start",
]
TAGS = [f"tag{i}" for i in range(20)]
OUTCOMES = list(Outcome)
BATCH = 1000


def make_episode(rng: random.Random, now_clock: FakeClock, n: int) -> Episode:
    verb, obj, detail = rng.choice(VERBS), rng.choice(OBJECTS), rng.choice(DETAILS)
    return Episode(
        task_description=f"{verb} the {obj} after a {detail} (case {n})",
        outcome=rng.choice(OUTCOMES),
        reflection=f"Check the {detail} before touching the {obj}.",
        created_at=now_clock() - timedelta(hours=rng.uniform(0, 24 * 365)),
        tags=rng.sample(TAGS, 2),
        session_id=f"s{n // 20}",
        importance=rng.random(),
    )


def bulk_load(
    store: BaseStore,
    scope: MemoryScope,
    count: int,
    rng: random.Random,
    clock: FakeClock,
    start: int,
) -> None:
    ns = episodes_namespace(scope)
    for lo in range(start, start + count, BATCH):
        hi = min(lo + BATCH, start + count)
        ops = []
        for n in range(lo, hi):
            e = make_episode(rng, clock, n)
            ops.append(PutOp(ns, e.episode_id, episode_to_value(e), index=EMBED_FIELDS))
        store.batch(ops)


def query_sets(rng: random.Random, n: int, sessions: int) -> dict[str, list[dict[str, Any]]]:
    texts = [
        f"how to {rng.choice(VERBS)} {rng.choice(OBJECTS)} with {rng.choice(DETAILS)}"
        for _ in range(n)
    ]
    return {
        "no filter": [{"query": t} for t in texts],
        "outcome=failure": [{"query": t, "outcome": "failure"} for t in texts],
        "max_age_hours=720": [{"query": t, "max_age_hours": 720.0} for t in texts],
        "tags any of 2": [{"query": t, "tags": rng.sample(TAGS, 2)} for t in texts],
        "session_id": [{"query": t, "session_id": f"s{rng.randrange(sessions)}"} for t in texts],
    }


def make_embeddings(kind: str) -> Embeddings:
    if kind == "hashing":
        return HashingEmbeddings(size=384)
    from langchain_tiered_memory.embeddings import LocalEmbeddings

    return LocalEmbeddings()


def open_store(path: Path, embeddings: Embeddings) -> BaseStore:
    try:
        from langchain_tiered_memory.stores import QdrantMemoryStore
    except ImportError as exc:
        sys.exit(f"skipped: the embedded Qdrant store is not available yet ({exc})")
    index = {"dims": 384, "embed": embeddings, "fields": ["text"]}
    store: BaseStore = QdrantMemoryStore.embedded(path, index=index)  # type: ignore[arg-type]
    return store


def row(size: int, name: str, latencies: list[float], hits: float | None) -> list[Any]:
    return [f"{size:,}", name, percentile(latencies, 50), percentile(latencies, 99), hits]


def measure(
    memory: EpisodicMemory,
    queries: dict[str, list[dict[str, Any]]],
    size: int,
    records: int,
    rng: random.Random,
    clock: FakeClock,
) -> list[list[Any]]:
    rows = []
    for name, kwargs_list in queries.items():
        calls: list[Callable[[], Any]] = [
            partial(memory.retrieve_similar, top_k=5, **kw) for kw in kwargs_list
        ]
        for call in calls[:5]:  # warm-up
            call()
        latencies, results = time_calls(calls)
        rows.append(row(size, name, latencies, sum(len(r) for r in results) / len(results)))
        print("  " + " | ".join(fmt(c) for c in rows[-1]), flush=True)

    def write(n: int) -> Any:
        return memory.record(make_episode(rng, clock, 10**9 + n))

    writes: list[Callable[[], Any]] = [partial(write, n) for n in range(records)]
    latencies, _ = time_calls(writes)
    rows.append(row(size, "record (1 episode)", latencies, None))
    return rows


def run(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    clock = FakeClock()
    target = MemoryScope("bench-target")
    others = [MemoryScope(f"bench-other-{i}") for i in range(args.other_users)]
    rows: list[list[Any]] = []
    with tempfile.TemporaryDirectory(prefix="episodic-bench-") as tmp:
        store = open_store(Path(tmp) / "store", make_embeddings(args.embeddings))
        memory: EpisodicMemory | None = None
        try:
            with stopwatch() as sw:
                for i, scope in enumerate(others):
                    bulk_load(store, scope, args.other_per_user, rng, clock, start=i * 10**7)
            print(f"loaded {len(others)} other users x {args.other_per_user} in {sw.seconds:.1f}s")
            memory = EpisodicMemory(store, target, clock=clock)
            queries = query_sets(rng, args.queries, sessions=max(1, min(args.sizes) // 20))
            loaded = 0
            for size in sorted(args.sizes):
                with stopwatch() as sw:
                    bulk_load(store, target, size - loaded, rng, clock, start=loaded)
                print(f"target user at {size:,} episodes (+{size - loaded:,} in {sw.seconds:.1f}s)")
                loaded = size
                rows += measure(memory, queries, size, args.records, rng, clock)
        finally:
            if memory is not None:
                memory.flush_access()  # access counts of this process, before the store closes
            close = getattr(store, "close", None)
            if close is not None:
                close()
    total_others = len(others) * args.other_per_user
    print()
    print(
        f"retrieve_similar(top_k=5) on the embedded Qdrant store, {args.embeddings} embeddings, "
        f"{args.queries} queries per row, {total_others:,} episodes of {len(others)} other users "
        f"in the same collection; {environment()}"
    )
    print(format_table(["user's episodes", "call", "p50 ms", "p99 ms", "hits/query"], rows))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--records", type=int, default=100, help="single records timed per size")
    parser.add_argument("--other-users", type=int, default=20)
    parser.add_argument("--other-per-user", type=int, default=1_000)
    parser.add_argument("--embeddings", choices=["hashing", "local"], default="hashing")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="1k and 5k, 50 queries, 5 users")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.queries, args.records = [1_000, 5_000], 50, 20
        args.other_users, args.other_per_user = 5, 500
    return args


if __name__ == "__main__":
    run(parse_args())
