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

Usage:
    python -m benchmarks.assembly --sizes 100000 --queries 200 --embeddings local \\
        --skip-inmemory-above 10000 --optimize --store-dir /tmp/asm
    python -m benchmarks.assembly_ab /tmp/asm/embedded-100000-local-optimized
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import environment, format_table, percentile
from benchmarks.assembly import TOPICS
from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.fakes import HashingEmbeddings
from langchain_tiered_memory.stores.search_walk import auto_full_scan_points

SETTINGS: dict[str, dict[str, Any]] = {
    "full_scan_points=None": {"full_scan_points": None, "lexical_idf": "namespace"},
    'full_scan_points="auto" (default)': {"full_scan_points": "auto", "lexical_idf": "namespace"},
    '"auto" + lexical_idf="global"': {"full_scan_points": "auto", "lexical_idf": "global"},
}


def main(argv: Sequence[str] | None = None) -> list[list[Any]]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("memory", help="the kept memory directory (…/embedded-100000-local-optimized)")
    p.add_argument("--block", type=int, default=50, help="queries per setting and block")
    p.add_argument("--blocks", type=int, default=6)
    p.add_argument("--budget", type=int, default=2000)
    p.add_argument("--embeddings", choices=["local", "hashing"], default="local")
    args = p.parse_args(argv)
    if args.embeddings == "local":
        from langchain_tiered_memory import LocalEmbeddings

        base: Any = LocalEmbeddings.default()
    else:
        base = HashingEmbeddings()
    rng = random.Random(11)
    count = args.block * args.blocks * len(SETTINGS) + 10
    when = ["again", "today", "tomorrow", "next week"]
    queries = [f"{rng.choice(TOPICS)} {rng.choice(when)} {i}" for i in range(count)]
    times: dict[str, list[float]] = {name: [] for name in SETTINGS}
    memory = TieredMemory.open(args.memory, embeddings=base, durable_writes=False)
    try:
        store: Any = memory.store
        store.warm()
        print(environment())
        user = memory.for_user("target")
        for query in queries[:10]:  # warm-up, not timed
            user.build_memory_context(query, token_budget=args.budget)
        position = 10
        for block in range(args.blocks):
            names = list(SETTINGS) if block % 2 == 0 else list(reversed(SETTINGS))
            for name in names:
                # Search-time settings of the store's planner (what the options set on open).
                points = SETTINGS[name]["full_scan_points"]
                if points == "auto":
                    points = auto_full_scan_points(store._planner.collection.dims)
                store._planner.full_scan_points = points
                store._planner.lexical_idf = SETTINGS[name]["lexical_idf"]
                for query in queries[position : position + args.block]:
                    start = time.perf_counter()
                    user.build_memory_context(query, token_budget=args.budget)
                    times[name].append((time.perf_counter() - start) * 1000)
                position += args.block
    finally:
        memory.close()
    rows = [[name, len(t), percentile(t, 50), percentile(t, 99)] for name, t in times.items()]
    print(format_table(["setting", "contexts", "p50 ms", "p99 ms"], rows))
    return rows


if __name__ == "__main__":
    main()
