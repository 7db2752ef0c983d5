"""Ranked reads: one search op -> engine queries -> a stable page of hits.

Dense and lexical searches are single engine queries. Hybrid search asks the
engine for the top dense and the top BM25 candidates (in the same batch) and
fuses them by reciprocal rank fusion here, with ties ranked equally, so that
both engines give the same order (engines order equal scores arbitrarily).
Pages are cut after sorting equal ranks by point id, fetching deeper when a
page boundary falls inside a group of ties, so paging never skips or repeats.

Example:
    >>> a, b = Hit("a", 0.9, {}), Hit("b", 0.8, {})
    >>> [(h.id, round(s, 4)) for h, s in fuse_rrf([[a, b], [b]], k=60)]
    [('b', 0.0325), ('a', 0.0164)]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, cast

from langgraph.store.base import SearchOp

from langchain_tiered_memory.stores.filters import Where
from langchain_tiered_memory.stores.payload import ITEM_FIELDS
from langchain_tiered_memory.stores.requests import Hit, Plan, Query, QueryBatch
from langchain_tiered_memory.stores.sparse import bm25_query

__all__ = ["HYBRID_CANDIDATES", "RRF_K", "fuse_rrf", "search_pages"]

HYBRID_CANDIDATES = 100
"""Candidates each side of a hybrid query contributes (fixed, so pages agree)."""
RRF_K = 60
"""Reciprocal rank fusion constant: score = sum over lists of 1 / (RRF_K + rank)."""

Page = list[tuple[Hit, "float | None"]]


def _tied(a: float, b: float) -> bool:
    # Engines score in float32 or float64: equal scores may differ in the last bits.
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)


def fuse_rrf(lists: Sequence[Sequence[Hit]], k: int = RRF_K) -> list[tuple[Hit, float]]:
    """Reciprocal rank fusion; equal scores within a list share the better rank."""
    fused: dict[str, float] = {}
    hits: dict[str, Hit] = {}
    for ranked in lists:
        rank = 0
        for position, hit in enumerate(ranked, start=1):
            if position == 1 or not _tied(hit.score, ranked[position - 2].score):
                rank = position
            fused[hit.id] = fused.get(hit.id, 0.0) + 1.0 / (k + rank)
            hits.setdefault(hit.id, hit)
    order = sorted(fused, key=lambda pid: (-fused[pid], pid))
    return [(hits[pid], fused[pid]) for pid in order]


def _rank(mode: str, hit: Hit) -> float:
    """Higher is better: the score, or the update time for unscored searches."""
    return float(hit.payload.get("updated_us", 0)) if mode == "recent" else hit.score


def _same(mode: str, a: Hit, b: Hit) -> bool:
    if mode == "recent":  # exact microseconds
        return _rank(mode, a) == _rank(mode, b)
    return _tied(a.score, b.score)


def _sorted(mode: str, hits: list[Hit]) -> list[Hit]:
    """Rank order with ties by id (scores tie within a tolerance, times exactly)."""
    ordered = sorted(hits, key=lambda h: -_rank(mode, h))
    groups: list[list[Hit]] = []
    for hit in ordered:
        if groups and _same(mode, groups[-1][0], hit):
            groups[-1].append(hit)
        else:
            groups.append([hit])
    return [hit for group in groups for hit in sorted(group, key=lambda h: h.id)]


def _complete_ties(query: Query, hits: list[Hit], window: int) -> Plan[list[Hit]]:
    """Fetch deeper while the last fetched hit ties with the page's last one."""
    limit = query.limit
    while len(hits) >= limit and len(hits) > window:
        if not _same(query.mode, hits[-1], hits[window - 1]):
            break
        limit *= 2
        (hits,) = yield QueryBatch([replace(query, limit=limit)])
    return hits


def _queries(op: SearchOp, flt: Where, mode: str, vector: list[float] | None) -> list[Query]:
    window = op.offset + op.limit
    sparse = bm25_query(op.query) if mode in ("lexical", "hybrid") and op.query else None
    if mode == "hybrid":
        depth = max(window + 1, HYBRID_CANDIDATES)
        found = [Query(mode="dense", filter=flt, limit=depth, fields=ITEM_FIELDS, dense=vector)]
        if sparse:
            found.append(
                Query(mode="lexical", filter=flt, limit=depth, fields=ITEM_FIELDS, sparse=sparse)
            )
        return found
    if mode == "lexical" and not sparse:
        return []  # only stop words: nothing can match lexically
    return [
        Query(
            mode=cast(Any, mode),
            filter=flt,
            limit=window + 1,
            fields=ITEM_FIELDS,
            dense=vector,
            sparse=sparse,
        )
    ]


def search_pages(
    searches: Sequence[tuple[SearchOp, Where, str]], vectors: dict[str, list[float]]
) -> Plan[list[Page]]:
    """One page of ``(hit, score)`` per search, all queries sent as one batch."""
    planned = [
        [] if op.limit == 0 else _queries(op, flt, mode, vectors.get(op.query or ""))
        for op, flt, mode in searches
    ]
    flat = [q for queries in planned for q in queries]
    responses: list[list[Hit]] = (yield QueryBatch(flat)) if flat else []
    pages: list[Page] = []
    position = 0
    for (op, _, mode), queries in zip(searches, planned, strict=False):
        answers = responses[position : position + len(queries)]
        position += len(queries)
        start, stop = op.offset, op.offset + op.limit
        if not queries:
            pages.append([])
        elif mode == "hybrid":
            pages.append([(hit, score) for hit, score in fuse_rrf(answers)[start:stop]])
        else:
            hits = yield from _complete_ties(queries[0], answers[0], stop)
            ranked = _sorted(mode, hits)[start:stop]
            pages.append([(hit, None if mode == "recent" else hit.score) for hit in ranked])
    return pages
