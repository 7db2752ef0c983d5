"""Latency of ``build_memory_context`` with many memories for one user.

Fills a fresh embedded store with N memories for the target user (episodes and
facts in the tiers' own record formats, written in batches so the store embeds
them in bulk), plus memories of other users, then times
``UserMemory.build_memory_context`` for distinct queries (so every query is
embedded: query embedding is part of the figure). The same queries run against
``InMemoryStore`` holding the same records, as the baseline measured in the same run.

Usage:
    python -m benchmarks.assembly --sizes 10000 100000 --queries 50
    python -m benchmarks.assembly --quick          # 1,000 memories, hashing embeddings
    python -m benchmarks.assembly --embeddings hashing   # isolate the store from the model
    python -m benchmarks.assembly --sizes 100000 --optimize --store-dir /tmp/asm
        # keeps the loaded (and optimised) store; a second run reuses it and only times
    python -m benchmarks.assembly --sizes 100000 --optimize --store-dir /tmp/asm \
        --lexical-idf global   # BM25 statistics of the whole collection (a store option)
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore

from benchmarks._common import environment, fmt, format_table, percentile, ratio
from langchain_tiered_memory import Episode, Outcome, TieredMemory, ToolUsageRecord
from langchain_tiered_memory.embedding_cache import CachedEmbeddings, clear_embedding_cache
from langchain_tiered_memory.testing.fakes import HashingEmbeddings
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.tiers.episodic.payload import episode_to_value, episodes_namespace
from langchain_tiered_memory.tiers.semantic.models import Fact
from langchain_tiered_memory.types import utcnow

TOPICS = [
    "deploy the payments service",
    "rotate database credentials",
    "migrate the orders client",
    "plan a team dinner",
    "debug a flaky integration test",
    "write the quarterly report",
    "tune the search ranking",
    "upgrade the Kubernetes cluster",
    "book travel to Lyon",
    "review a pull request",
    "fix a memory leak in the worker",
    "onboard a new engineer",
]
VERBS = ["failed because", "worked after", "was slow since", "needed", "was blocked by"]
CAUSES = [
    "a wrong readiness probe path",
    "an expired token",
    "the 410 Gone endpoint",
    "a missing index",
    "rate limiting upstream",
    "a stale cache",
    "an off-by-one in pagination",
    "disk pressure",
]


def make_records(n: int, scope: MemoryScope, rng: random.Random) -> list[PutOp]:
    now = utcnow()
    ops: list[PutOp] = []
    # Texts are unique: InMemoryStore mis-assigns vectors when one batch repeats a text.
    facts_ns = scope.namespace("semantic", "facts")
    for i in range(n):
        topic, verb, cause = rng.choice(TOPICS), rng.choice(VERBS), rng.choice(CAUSES)
        when = now - timedelta(hours=rng.uniform(0, 24 * 365))
        if i % 3 == 0:
            fact = Fact(
                fact_id=f"f{i}",
                entity_id=scope.user_id,
                content=f"{topic.capitalize()} {verb} {cause} (note {scope.user_id}-{i})",
                confidence=rng.uniform(0.5, 1.0),
                first_observed=when,
                last_confirmed=when,
                valid_from=when,
            )
            ops.append(
                PutOp(facts_ns, fact.fact_id, fact.model_dump(mode="json"), index=["content"])
            )
        else:
            ep = Episode(
                episode_id=f"e{i}",
                task_description=f"{topic} #{scope.user_id}-{i}",
                outcome=rng.choice(list(Outcome)),
                reflection=f"It {verb} {cause}.",
                created_at=when,
                importance=rng.random(),
            )
            ops.append(
                PutOp(
                    episodes_namespace(scope), ep.episode_id, episode_to_value(ep), index=["text"]
                )
            )
    return ops


def fill(store: BaseStore, ops: Sequence[PutOp], batch: int = 256) -> float:
    start = time.perf_counter()
    for i in range(0, len(ops), batch):
        store.batch(list(ops[i : i + batch]))
    return time.perf_counter() - start


@contextmanager
def store_dir(root: str | None, name: str) -> Iterator[tuple[Path, dict[str, float] | None]]:
    """A directory for one store: kept under ``root`` (with what building it took), or temp.

    Yields the path and, when a complete store from an earlier run is there, its
    build figures (then the caller only times queries).
    """
    if root is None:
        with tempfile.TemporaryDirectory() as tmp:
            yield Path(tmp), None
        return
    path = Path(root) / name
    marker = path / "benchmark-complete.json"
    built = json.loads(marker.read_text()) if marker.exists() else None
    if built is None and path.exists():
        raise SystemExit(f"{path} holds an incomplete store from an interrupted run: delete it")
    yield path, built


def mark_complete(path: Path, figures: dict[str, float]) -> None:
    (path / "benchmark-complete.json").write_text(json.dumps(figures))


def measure(memory: TieredMemory, queries: Sequence[str], budget: int) -> list[float]:
    return measure_packings(memory, queries, budget, [None])[None]


def measure_packings(
    memory: TieredMemory, queries: Sequence[str], budget: int, packings: Sequence[str | None]
) -> dict[str | None, list[float]]:
    """build_memory_context times per packing, the packings interleaved query by query.

    ``None`` keeps the memory's own assembly config. With several packings the
    query-embedding caches are emptied before each call, so every packing pays
    for embedding the query (otherwise the second one would find it cached).
    """
    users = {}
    for packing in packings:
        user = memory.for_user("target")
        if packing is not None:
            user.assembler.config = replace(user.assembler.config, packing=packing)  # type: ignore[arg-type]
        user.build_memory_context("warm-up query", token_budget=budget)
        users[packing] = user
    times: dict[str | None, list[float]] = {p: [] for p in packings}
    index = getattr(memory.store, "index_config", None) or {}
    caches = (memory.embeddings, index.get("embed"), getattr(memory.store, "embeddings", None))
    for q in queries:
        for packing, user in users.items():
            if len(users) > 1:
                clear_embedding_cache(*caches)
            t = time.perf_counter()
            user.build_memory_context(q, token_budget=budget)
            times[packing].append((time.perf_counter() - t) * 1000)
    return times


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    p.add_argument("--queries", type=int, default=50)
    p.add_argument("--other-users", type=int, default=5)
    p.add_argument("--budget", type=int, default=2000)
    p.add_argument("--embeddings", choices=["local", "hashing"], default="local")
    p.add_argument("--skip-inmemory-above", type=int, default=100_000)
    p.add_argument("--quick", action="store_true")
    p.add_argument(
        "--optimize",
        action="store_true",
        help="build the HNSW index (store.optimize()) after loading, before timing",
    )
    p.add_argument(
        "--store-dir",
        help="keep each loaded store in this directory and reuse it on later runs "
        "(the same sizes, embeddings and --optimize); default: a temp dir per run",
    )
    p.add_argument(
        "--lexical-idf",
        choices=["namespace", "global"],
        default="namespace",
        help="the embedded store's BM25 statistics: the searched namespace's (default) "
        "or the whole collection's",
    )
    p.add_argument(
        "--packings",
        nargs="+",
        choices=["utility", "sections"],
        default=None,
        help="time these AssemblyConfig packings on the embedded store, interleaved",
    )
    args = p.parse_args(argv)
    if args.quick:
        args.sizes, args.queries, args.embeddings = [1000], 20, "hashing"
    base: Embeddings
    if args.embeddings == "local":
        from langchain_tiered_memory import LocalEmbeddings

        base = LocalEmbeddings.default()
    else:
        base = HashingEmbeddings()
    rng = random.Random(7)
    queries = [
        f"{rng.choice(TOPICS)} {rng.choice(['again', 'today', 'tomorrow', 'next week'])} {i}"
        for i in range(args.queries)
    ]
    print(environment())
    rows = []
    for n in args.sizes:
        target = MemoryScope("target")
        ops = make_records(n, target, rng)
        for u in range(args.other_users):
            ops += make_records(max(1, n // 10), MemoryScope(f"other-{u}"), rng)
        results: dict[str, list[float]] = {}
        ingest: dict[str, float] = {}
        name = f"embedded-{n}-{args.embeddings}{'-optimized' if args.optimize else ''}"
        with store_dir(args.store_dir, name) as (path, built):
            memory = TieredMemory.open(
                path,
                embeddings=base,
                durable_writes=False,
                store_options={"lexical_idf": args.lexical_idf},
            )
            try:
                if built is None:
                    built = {"ingest_s": fill(memory.store, ops)}
                    tool = memory.for_user("target").procedural
                    for k in range(50):
                        tool.record_tool_use(
                            ToolUsageRecord(
                                tool_name=f"tool{k % 5}",
                                success=k % 3 != 0,
                                error_message="" if k % 3 else "410 Gone: use v2",
                            )
                        )
                    if args.optimize:
                        start = time.perf_counter()
                        memory.store.optimize(background=False)  # type: ignore[attr-defined]
                        built["optimize_s"] = time.perf_counter() - start
                    if args.store_dir:
                        mark_complete(path, built)
                else:
                    print(f"reusing the store in {path} (built: {built})", flush=True)
                if "optimize_s" in built:
                    print(f"optimize: {built['optimize_s']:.1f}s", flush=True)
                label = "embedded" + (
                    ", lexical_idf=global" if args.lexical_idf == "global" else ""
                )
                ingest[label] = built["ingest_s"]
                start = time.perf_counter()
                warmed = memory.store.warm()  # type: ignore[attr-defined]
                print(
                    f"warm: read {warmed / 1e6:.0f} MB of store files in "
                    f"{time.perf_counter() - start:.1f}s",
                    flush=True,
                )
                if args.packings:
                    timed = measure_packings(memory, queries, args.budget, args.packings)
                    for packing, times in timed.items():
                        results[f"{label} [{packing}]"] = times
                        ingest[f"{label} [{packing}]"] = built["ingest_s"]
                else:
                    results[label] = measure(memory, queries, args.budget)
            finally:
                memory.close()
        if n <= args.skip_inmemory_above:
            emb = CachedEmbeddings(base)
            store = InMemoryStore(
                index={"dims": len(emb.embed_query("x")), "embed": emb, "fields": ["text"]}
            )
            memory = TieredMemory(store)
            ingest["InMemoryStore"] = fill(store, ops)
            results["InMemoryStore"] = measure(memory, queries, args.budget)
        base_p50 = percentile(results.get("InMemoryStore", [float("nan")]), 50)
        for name, times in results.items():
            p50 = percentile(times, 50)
            rows.append(
                [
                    name,
                    f"{n:,}",
                    fmt(ingest[name], 1),
                    fmt(p50, 1),
                    fmt(percentile(times, 99), 1),
                    ratio(p50, base_p50),
                ]
            )
    print(
        format_table(
            [
                "store",
                "memories (target user)",
                "ingest s",
                "p50 ms",
                "p99 ms",
                "p50 vs InMemoryStore",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main()
