"""How a filtered dense search walks the index: ACORN rules side by side, one store.

Runs the context assembler's facts search (``{"status": "current"}`` over one
user's facts, hybrid, top 10) on a store that ``benchmarks.assembly`` built and
kept (``--store-dir``), alternating in one process between:

* ``every value filter``: ACORN asked for every dense search with a value filter
  (the rule before 2026-12-02);
* ``share rule``: ACORN only when the value filter keeps under 40% of the points
  carrying its fields (:mod:`langchain_tiered_memory.stores.search_walk`, the
  store's rule now);
* ``never``: no ACORN.

Rounds alternate the order, so load on a shared host hits every rule alike.
Queries are embedded with hashing embeddings (the search's own cost, not the
model's); the hits of the rules are compared.

Usage:
    python -m benchmarks.assembly --sizes 100000 --queries 200 --embeddings local \\
        --skip-inmemory-above 10000 --optimize --store-dir /tmp/asm
    python -m benchmarks.search_walk /tmp/asm/embedded-100000-local-optimized/store
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langgraph.store.base import SearchOp

from benchmarks._common import environment, format_table, percentile
from langchain_tiered_memory.stores import QdrantMemoryStore
from langchain_tiered_memory.stores import search as search_module
from langchain_tiered_memory.stores.search_walk import Walk, choose
from langchain_tiered_memory.testing.fakes import HashingEmbeddings

FACTS = ("tiered_memory", "target", "_", "semantic", "facts")
WORDS = [
    "deploy",
    "payments",
    "rotate",
    "credentials",
    "migrate",
    "orders",
    "dinner",
    "flaky",
    "test",
    "report",
    "ranking",
    "cluster",
    "travel",
    "review",
    "leak",
    "onboard",
]

Rule = Callable[..., Walk]


def _every_value_filter(op: SearchOp, counts: Sequence[int], **_: Any) -> Walk:
    return Walk(exact=False, acorn=bool(op.filter))


def _never(op: SearchOp, counts: Sequence[int], **_: Any) -> Walk:
    return Walk(exact=False, acorn=False)


RULES: dict[str, Rule] = {
    "every value filter": _every_value_filter,
    "share rule (the store's)": choose,
    "never": _never,
}


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("store", help="the store directory (…/embedded-100000-…/store)")
    p.add_argument("--queries", type=int, default=150, help="queries per rule and round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--namespace", default="/".join(FACTS), help="searched prefix, '/'-joined")
    args = p.parse_args(argv)
    index: Any = {"dims": 384, "embed": HashingEmbeddings(size=384), "fields": ["text"]}
    store = QdrantMemoryStore.embedded(args.store, index=index)
    namespace = tuple(args.namespace.split("/"))
    times: dict[str, list[float]] = {name: [] for name in RULES}
    hits: dict[str, list[list[str]]] = {name: [] for name in RULES}
    acorn: dict[str, int] = dict.fromkeys(RULES, 0)
    asked = {"acorn": 0}

    def counting(rule: Rule) -> Rule:
        def wrapped(op: SearchOp, counts: Sequence[int], **kw: Any) -> Walk:
            walk = rule(op, counts, **kw)
            asked["acorn"] += walk.acorn
            return walk

        return wrapped

    try:
        store.warm()
        print(environment())
        for r in range(args.rounds):
            names = list(RULES) if r % 2 == 0 else list(reversed(RULES))
            for name in names:
                setattr(search_module, "choose", counting(RULES[name]))  # noqa: B010
                asked["acorn"] = 0
                for j in range(args.queries):
                    query = f"{WORDS[j % 16]} {WORDS[(j * 7 + r) % 16]} {j} {r}"
                    start = time.perf_counter()
                    found = store.search(namespace, query=query, filter={"status": "current"})
                    times[name].append((time.perf_counter() - start) * 1000)
                    hits[name].append([item.key for item in found])
                acorn[name] += asked["acorn"]
    finally:
        setattr(search_module, "choose", choose)  # noqa: B010
        store.close()
    base = hits["never"]
    rows = [
        [
            name,
            len(times[name]),
            percentile(times[name], 50),
            percentile(times[name], 99),
            acorn[name],
            sum(a == b for a, b in zip(hits[name], base, strict=True)),
        ]
        for name in RULES
    ]
    headers = ["ACORN asked for", "searches", "p50 ms", "p99 ms", "with ACORN", "same hits"]
    print(format_table(headers, rows))
    print(
        f"\n{namespace} with {{'status': 'current'}}, hybrid top 10, {args.rounds} rounds "
        "in alternating order; same hits: searches whose keys equal the no-ACORN run's."
    )


if __name__ == "__main__":
    main()
