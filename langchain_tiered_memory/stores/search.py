"""Ranked reads: one search op -> engine queries -> a stable page of hits.

Dense and lexical searches are single engine queries. Hybrid search asks for the top
dense and BM25 candidates (one batch, ids and scores only), fuses them as the store's
:class:`~langchain_tiered_memory.stores.fusion.FusionConfig` says, then fetches the
payloads of the page alone. Every score is in ``[0, 1]`` (:func:`calibrated`). Equal
scores are ordered by point id, so both engines give the same order, and a page
boundary inside a group of ties fetches deeper, so paging never skips or repeats.

Examples:
    >>> a, b = Hit("a", 0.9, {}), Hit("b", 0.8, {})
    >>> [(h.id, round(s, 4)) for h, s in fuse_rrf([[a, b], [b]], k=60)]
    [('b', 0.9919), ('a', 0.5)]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, cast

from langgraph.store.base import SearchOp

from langchain_tiered_memory.stores.filters import Range, Where, namespace_filter
from langchain_tiered_memory.stores.fusion import (
    FusionConfig,
    cosine_unit,
    saturate,
    weighted_score_fusion,
)
from langchain_tiered_memory.stores.payload import ITEM_FIELDS
from langchain_tiered_memory.stores.requests import (
    Estimate,
    Hit,
    LexicalIdf,
    Plan,
    Query,
    QueryBatch,
    Retrieve,
)
from langchain_tiered_memory.stores.search_walk import ENGINE_CHOICE, Walk, choose, estimates
from langchain_tiered_memory.stores.sparse import bm25_query

__all__ = [
    "HYBRID_CANDIDATES",
    "RRF_K",
    "calibrated",
    "fuse_hybrid",
    "fuse_rrf",
    "search_pages",
]

HYBRID_CANDIDATES = 100
"""Candidates each side of a hybrid query contributes (fixed, so pages agree)."""
RRF_K = 60
"""Reciprocal rank fusion constant: score = sum over lists of 1 / (RRF_K + rank)."""

Page = list[tuple[Hit, "float | None"]]

EVERY_ITEM = Where(must=(Range("updated_us", gte=float(-(2**63))),))
"""IDF corpus of a search under the empty prefix: every live item (the engine's own
statistics would count deleted points until a vacuum)."""


def _tied(a: float, b: float, exact: bool = False) -> bool:
    # Engines score in float32 or float64: equal scores may differ in the last bits.
    return a == b if exact else math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)


def fuse_rrf(lists: Sequence[Sequence[Hit]], k: int = RRF_K) -> list[tuple[Hit, float]]:
    """Reciprocal rank fusion (ties share the better rank), divided by its best value: in [0, 1]."""
    fused: dict[str, float] = {}
    hits: dict[str, Hit] = {}
    for ranked in lists:
        rank = 0
        for position, hit in enumerate(ranked, start=1):
            if position == 1 or not _tied(hit.score, ranked[position - 2].score):
                rank = position
            fused[hit.id] = fused.get(hit.id, 0.0) + 1.0 / (k + rank)
            hits.setdefault(hit.id, hit)
    best = len(lists) / (k + 1)
    order = sorted(fused, key=lambda pid: (-fused[pid], pid))
    return [(hits[pid], min(1.0, fused[pid] / best)) for pid in order]


def fuse_hybrid(
    dense: Sequence[Hit],
    lexical: Sequence[Hit] | None,
    config: FusionConfig,
    depth: int | None = None,
) -> list[tuple[Hit, float]]:
    """Fuse the dense and lexical candidate lists as ``config`` says, best first.

    ``lexical`` is None when the query has only stop words (the dense side decides).
    ``depth`` is how many candidates each side was asked for: a side that returned
    fewer returned every match (None: both did), which sets what a candidate it did
    not return scores there (see :func:`~.fusion.weighted_score_fusion`). Equal fused
    scores are ordered by point id.
    """
    if config.method == "rrf":
        return fuse_rrf([dense] if lexical is None else [dense, lexical], k=int(config.rrf_k))
    lists = {"dense": dense} if lexical is None else {"dense": dense, "lexical": lexical}
    if not any(lists.values()):
        return []
    weights = {k: w for k, w in (config.weights or {}).items() if k in lists}
    fused = weighted_score_fusion(
        {name: {h.id: h.score for h in hits} for name, hits in lists.items()},
        weights=weights or None,
        normalization={name: config.method_of(name) for name in lists},
        saturation=config.saturation,
        convex=True,
        spread_floor=config.spread_floor,
        complete=[n for n, hits in lists.items() if depth is None or len(hits) < depth],
    )
    first = {h.id: h for hits in lists.values() for h in reversed(hits)}
    return _tie_sorted([(Hit(pid, score, first[pid].payload), score) for pid, score in fused])


def calibrated(mode: str, score: float, config: FusionConfig) -> float:
    """A dense or lexical search's engine score on the scale of hybrid scores.

    Dense: the cosine similarity as ``(1 + cosine) / 2``; lexical: the BM25 score
    as ``s / (s + config.saturation)``. Both keep the engine's order.

    Example:
        >>> from langchain_tiered_memory.stores.fusion import DEFAULT_FUSION
        >>> calibrated("dense", 0.5, DEFAULT_FUSION), calibrated("lexical", 6.0, DEFAULT_FUSION)
        (0.75, 0.5)
    """
    if mode == "dense":
        return cosine_unit(score)
    return saturate(score, config.saturation)


def _rank(mode: str, hit: Hit) -> float:
    """Higher is better: the score, or the update time for unscored searches."""
    return float(hit.payload.get("updated_us", 0)) if mode == "recent" else hit.score


def _tie_sorted(ranked: list[tuple[Hit, float]], exact: bool = False) -> list[tuple[Hit, float]]:
    """Best rank first; ranks equal (within a tolerance unless ``exact``) ordered by id."""
    ordered = sorted(ranked, key=lambda pair: -pair[1])
    out: list[tuple[Hit, float]] = []
    i, n = 0, len(ordered)
    while i < n:
        head = ordered[i][1]
        j = i + 1
        while j < n and _tied(head, ordered[j][1], exact):
            j += 1
        out.extend(sorted(ordered[i:j], key=lambda pair: pair[0].id))
        i = j
    return out


def _complete_ties(query: Query, hits: list[Hit], window: int) -> Plan[list[Hit]]:
    """Fetch deeper while the last fetched hit ties with the page's last one."""
    limit = query.limit
    while len(hits) >= limit and len(hits) > window:
        last, edge = _rank(query.mode, hits[-1]), _rank(query.mode, hits[window - 1])
        if not _tied(last, edge, exact=query.mode == "recent"):  # times tie exactly
            break
        limit *= 2
        (hits,) = yield QueryBatch([replace(query, limit=limit)])
    return hits


def _queries(
    op: SearchOp,
    flt: Where,
    mode: str,
    vector: list[float] | None,
    idf: LexicalIdf,
    walk: Walk = ENGINE_CHOICE,
) -> list[Query]:
    window = op.offset + op.limit
    sparse = bm25_query(op.query) if mode in ("lexical", "hybrid") and op.query else None
    corpus = (namespace_filter(op.namespace_prefix) or EVERY_ITEM) if idf == "namespace" else None
    exact, acorn = walk
    if mode == "hybrid":
        # Candidates carry ids and scores only; the page's payloads are fetched after fusion.
        depth = max(window + 1, HYBRID_CANDIDATES)
        lexical = Query(mode="lexical", filter=flt, limit=depth, fields=[], sparse=sparse)
        dense = replace(lexical, mode="dense", sparse=None, dense=vector, exact=exact, acorn=acorn)
        return [dense, replace(lexical, idf_corpus=corpus)] if sparse else [dense]
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
            idf_corpus=corpus,
            exact=exact and mode == "dense",
            acorn=acorn and mode == "dense",
        )
    ]


def _walks(
    searches: Sequence[tuple[SearchOp, Where, str]], full_scan_points: int | None, estimate: bool
) -> Plan[list[Walk]]:
    """How each dense search walks the index, from one request of estimates."""
    asks = [
        estimates(op, full_scan_points=full_scan_points)
        if estimate and op.limit and op.query and mode in ("dense", "hybrid")
        else []
        for op, _, mode in searches
    ]
    flat = [where for ask in asks for where in ask]
    sizes = iter((yield Estimate(flat)) if flat else [])
    return [
        choose(op, [next(sizes) for _ in ask], full_scan_points=full_scan_points)
        if ask
        else ENGINE_CHOICE
        for (op, _, _), ask in zip(searches, asks, strict=True)
    ]


def search_pages(
    searches: Sequence[tuple[SearchOp, Where, str]],
    vectors: dict[str, list[float]],
    fusion: FusionConfig,
    idf: LexicalIdf = "namespace",
    *,
    estimate: bool = False,
    full_scan_points: int | None = None,
) -> Plan[list[Page]]:
    """One page of ``(hit, score)`` per search, all queries sent as one batch.

    With ``estimate``, filtered dense searches are first sized to choose their walk
    (:mod:`.search_walk`).
    """
    walks = yield from _walks(searches, full_scan_points, estimate)
    planned = [
        [] if op.limit == 0 else _queries(op, flt, mode, vectors.get(op.query or ""), idf, walk)
        for (op, flt, mode), walk in zip(searches, walks, strict=True)
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
            dense, lexical = answers[0], answers[1] if len(answers) > 1 else None
            pages.append(list(fuse_hybrid(dense, lexical, fusion, queries[0].limit)[start:stop]))
        else:
            hits = yield from _complete_ties(queries[0], answers[0], stop)
            # Scores tie within a tolerance, times exactly.
            ranked = _tie_sorted([(h, _rank(mode, h)) for h in hits], exact=mode == "recent")
            pages.append(
                [
                    (hit, None if mode == "recent" else calibrated(mode, hit.score, fusion))
                    for hit, _ in ranked[start:stop]
                ]
            )
    bare = sorted({hit.id for page in pages for hit, _ in page if not hit.payload})
    if bare:  # hybrid pages: fetch the payloads of the hits that are shown
        payloads: dict[str, dict[str, Any]] = yield Retrieve(bare, ITEM_FIELDS)
        # A point deleted between the candidate query and the fetch is left out.
        pages = [
            [
                (hit if hit.payload else hit._replace(payload=payloads[hit.id]), score)
                for hit, score in page
                if hit.payload or payloads.get(hit.id)
            ]
            for page in pages
        ]
    return pages
