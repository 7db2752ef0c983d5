"""Store settings side by side on one kept assembly store, alternating in one process.

``benchmarks.assembly`` times one setting per run, and on a shared host two runs
minutes apart differ by load as much as by setting. This script opens a store
that ``benchmarks.assembly --store-dir`` built and kept, and times
``build_memory_context`` under each setting in turn, in blocks of distinct
queries whose order alternates, so load hits every setting alike:

* ``full_scan_points=None``: the engine chooses between a scan and the graph;
* ``full_scan_points="auto"`` (the store's default): exact scans under 30,000 KB
  of vectors;
* ``"auto"`` with ``lexical_idf="global"``: BM25 statistics of the whole
  collection instead of the searched namespace.

``--unversioned`` adds the default setting with the store's namespace versions
hidden, so the procedural tier folds its tool-use log on every call instead of
reusing the result while nothing was written (the behaviour before 2026-12-02).

``--spinning`` adds the default setting with onnxruntime's worker threads left
spinning after each query embedding (``LocalEmbeddings(thread_spinning="always")``,
the behaviour before 2026-12-02), which keeps a core busy beside the engine's
search threads.

``--engine-queries`` adds the floor under a context: the query embedding alone,
and each engine query the tiers send, run alone (one per engine call) with the
default setting. Their sum is what a context costs before any Python of ours.

``--versus OTHER`` times two kept stores instead, both with the default
settings: the same memories in two layouts (for instance a copy rewritten by
``optimize(background=True)``). ``--tiers`` adds a table of what each tier's
retrieval costs on its own (the query embedded beforehand), which tells where
a context's time goes.

Usage:
    python -m benchmarks.assembly --sizes 100000 --queries 200 --embeddings local \\
        --skip-inmemory-above 10000 --optimize --store-dir /tmp/asm
    python -m benchmarks.assembly_ab /tmp/asm/embedded-100000-local-optimized --unversioned
    python -m benchmarks.assembly_ab /tmp/asm/embedded-100000-local-optimized --spinning
    python -m benchmarks.assembly_ab /tmp/asm/embedded-100000-local-optimized \\
        --versus /tmp/asm-rewritten --tiers
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

if __package__ in (None, ""):  # run as a file: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import environment, format_table, percentile
from benchmarks.assembly import TOPICS
from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.stores.requests import QueryBatch
from langchain_tiered_memory.stores.search_walk import auto_full_scan_points
from langchain_tiered_memory.testing.fakes import HashingEmbeddings

SETTINGS: dict[str, dict[str, Any]] = {
    "full_scan_points=None": {"full_scan_points": None, "lexical_idf": "namespace"},
    'full_scan_points="auto" (default)': {"full_scan_points": "auto", "lexical_idf": "namespace"},
    '"auto" + lexical_idf="global"': {"full_scan_points": "auto", "lexical_idf": "global"},
}


class Arm(NamedTuple):
    """One row: a user of an open memory, and the store settings to time it with."""

    name: str
    user: Any
    store: Any
    setting: dict[str, Any]


UNVERSIONED = "default, namespace versions hidden"
SPINNING = 'default, embedding threads spinning ("always")'
DEFAULT = 'full_scan_points="auto" (default)'


def _no_versions(namespace_prefix: tuple[str, ...]) -> None:
    """What a store that keeps no namespace versions answers."""
    return None


def _apply(arm: Arm) -> None:
    """Set the arm's search-time settings on its store's planner (what options set on open)."""
    if "embeddings" in arm.setting:  # behind the store's query cache
        arm.store._planner.embeddings.inner = arm.setting["embeddings"]
    if arm.setting.get("versions", True):
        arm.store.__dict__.pop("namespace_version", None)  # the class's method again
    else:
        arm.store.namespace_version = _no_versions
    points = arm.setting["full_scan_points"]
    if points == "auto":
        points = auto_full_scan_points(arm.store._planner.collection.dims)
    arm.store._planner.full_scan_points = points
    arm.store._planner.lexical_idf = arm.setting["lexical_idf"]


def _tier_rows(arm: Arm, queries: Sequence[str], budget: int) -> list[list[Any]]:
    """Each tier task of the assembler timed alone, the query embedded beforehand."""
    assembler = arm.user.assembler
    times: dict[str, list[float]] = {}
    for query in queries:
        arm.user.build_memory_context(query, token_budget=budget)  # embeds (and caches) it
        for task in assembler._tasks(query):  # the assembler's own calls, in its order
            start = time.perf_counter()
            task.run()
            times.setdefault(task.name, []).append((time.perf_counter() - start) * 1000)
    return [[arm.name, n, len(t), percentile(t, 50), percentile(t, 99)] for n, t in times.items()]


def _engine_query_rows(
    arm: Arm, queries: Sequence[str], budget: int, embeddings: Any
) -> list[list[Any]]:
    """The query embedding and each engine query of each tier, timed alone."""
    engine = arm.store.engine
    execute = engine.execute
    times: dict[tuple[str, str], list[float]] = {}
    tier = [""]

    def timed(request: Any) -> Any:
        if not tier[0] or not isinstance(request, QueryBatch):
            return execute(request)
        for position, query in enumerate(request.queries):
            start = time.perf_counter()
            execute(QueryBatch([query]))
            key = (tier[0], f"{position + 1}: {query.mode}, limit {query.limit}")
            times.setdefault(key, []).append((time.perf_counter() - start) * 1000)
        return execute(request)

    engine.execute = timed
    try:
        for number, query in enumerate(queries):
            start = time.perf_counter()
            embeddings.embed_query(f"{query} {number}")  # a text no cache has seen
            times.setdefault(("(query embedding)", "-"), []).append(
                (time.perf_counter() - start) * 1000
            )
            tier[0] = ""  # not timed: the whole context, which embeds (and caches) the query
            arm.user.build_memory_context(query, token_budget=budget)
            for task in arm.user.assembler._tasks(query):
                tier[0] = task.name
                task.run()
    finally:
        del engine.execute  # the class's method again
    return [
        [name, what, len(t), percentile(t, 50), percentile(t, 99)]
        for (name, what), t in times.items()
    ]


def main(argv: Sequence[str] | None = None) -> list[list[Any]]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("memory", help="the kept memory directory (…/embedded-100000-local-optimized)")
    p.add_argument("--versus", help="a second kept memory directory, timed against the first")
    p.add_argument("--tiers", action="store_true", help="also time each tier's retrieval alone")
    p.add_argument(
        "--engine-queries",
        action="store_true",
        help="also time the query embedding and each engine query of each tier alone",
    )
    p.add_argument(
        "--unversioned",
        action="store_true",
        help="add the default setting with the store's namespace versions hidden",
    )
    p.add_argument(
        "--spinning",
        action="store_true",
        help="add the default setting with the embedding model's threads spinning between calls",
    )
    p.add_argument("--block", type=int, default=50, help="queries per setting and block")
    p.add_argument("--blocks", type=int, default=6)
    p.add_argument("--budget", type=int, default=2000)
    p.add_argument("--embeddings", choices=["local", "hashing"], default="local")
    args = p.parse_args(argv)
    if (args.unversioned or args.spinning) and args.versus:
        p.error("--unversioned and --spinning add a setting on one store: leave out --versus")
    if args.spinning and args.embeddings != "local":
        p.error("--spinning times the local embedding model: leave out --embeddings hashing")
    spinning: Any = None
    if args.embeddings == "local":
        from langchain_tiered_memory import LocalEmbeddings

        base: Any = LocalEmbeddings.default()
        if args.spinning:
            spinning = LocalEmbeddings(thread_spinning="always")
    else:
        base = HashingEmbeddings()
    dirs = [args.memory] if args.versus is None else [args.memory, args.versus]
    memories = []
    try:
        for directory in dirs:
            memories.append(TieredMemory.open(directory, embeddings=base, durable_writes=False))
        arms = _arms(memories, dirs, unversioned=args.unversioned, spinning=spinning, base=base)
        rng = random.Random(11)
        count = args.block * args.blocks * len(arms) + 10
        if args.tiers:
            count += args.block * len(arms)
        if args.engine_queries:
            count += args.block
        when = ["again", "today", "tomorrow", "next week"]
        queries = [f"{rng.choice(TOPICS)} {rng.choice(when)} {i}" for i in range(count)]
        print(environment())
        for arm in arms:
            arm.store.warm()
            _apply(arm)
            for query in queries[:10]:  # warm-up, not timed
                arm.user.build_memory_context(query, token_budget=args.budget)
        times: dict[str, list[float]] = {arm.name: [] for arm in arms}
        position = 10
        for block in range(args.blocks):
            for arm in arms if block % 2 == 0 else list(reversed(arms)):
                _apply(arm)
                for query in queries[position : position + args.block]:
                    start = time.perf_counter()
                    arm.user.build_memory_context(query, token_budget=args.budget)
                    times[arm.name].append((time.perf_counter() - start) * 1000)
                position += args.block
        tiers: list[list[Any]] = []
        for arm in arms if args.tiers else []:
            _apply(arm)
            tiers += _tier_rows(arm, queries[position : position + args.block], args.budget)
            position += args.block
        floor: list[list[Any]] = []
        if args.engine_queries:
            arm = arms[0] if args.versus else next(a for a in arms if a.name == DEFAULT)
            _apply(arm)
            batch = queries[position : position + args.block]
            floor = _engine_query_rows(arm, batch, args.budget, base)
    finally:
        for memory in memories:
            memory.close()
    rows = [[name, len(t), percentile(t, 50), percentile(t, 99)] for name, t in times.items()]
    print(format_table(["setting", "contexts", "p50 ms", "p99 ms"], rows))
    if tiers:
        print(format_table(["setting", "tier", "calls", "p50 ms", "p99 ms"], tiers))
    if floor:
        print(format_table(["tier", "engine query, alone", "calls", "p50 ms", "p99 ms"], floor))
    return rows


def _arms(
    memories: Sequence[TieredMemory],
    dirs: Sequence[str],
    *,
    unversioned: bool = False,
    spinning: Any = None,
    base: Any = None,
) -> list[Arm]:
    """The settings on one store, or the default setting on each of two stores.

    ``spinning`` (embeddings whose threads keep spinning) adds an arm that
    embeds queries with it; every other arm then embeds with ``base``.
    """
    users = [(m.for_user("target"), m.store) for m in memories]
    default = SETTINGS[DEFAULT]
    if len(memories) == 1:
        user, store = users[0]
        arms = [Arm(name, user, store, setting) for name, setting in SETTINGS.items()]
        if unversioned:
            arms.append(Arm(UNVERSIONED, user, store, {**default, "versions": False}))
        if spinning is not None:
            arms = [a._replace(setting={**a.setting, "embeddings": base}) for a in arms]
            arms.append(Arm(SPINNING, user, store, {**default, "embeddings": spinning}))
        return arms
    return [
        Arm(f"{label}: {Path(d).name}", user, store, default)
        for label, d, (user, store) in zip(("A", "B"), dirs, users, strict=True)
    ]


if __name__ == "__main__":
    main()
