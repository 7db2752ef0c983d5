"""One ranking across tiers: every candidate memory gets one utility in ``[0, 1]``.

``utility = relevance * quality part * tier-rank part``: relevance (lexical
evidence, a tool warning's ``linked`` relevance, or a conversation turn's own
calibrated score) gates it; importance, recency, confidence and the section's
prior make up the quality part. Every part is in ``MemoryItem.score_breakdown``
(the table in docs/assembly.md). Critical facts
(:class:`~langchain_tiered_memory.assembly.critical.CriticalFactPolicy`) are
marked ``critical`` and get utility 1.

Example:
    >>> from datetime import datetime, timezone
    >>> from langchain_tiered_memory.assembly.items import MemoryItem
    >>> from langchain_tiered_memory.assembly.critical import CriticalFactPolicy
    >>> from langchain_tiered_memory.tiers.common.ranking import UtilityConfig
    >>> items = [MemoryItem("semantic", "profile", "f1", "Owns a drone bought in 2016"),
    ...          MemoryItem("episodic", "experiences", "e1", "Debug payments-api CrashLoopBackOff")]
    >>> ranked = rank_items(items, "payments-api pods in CrashLoopBackOff",
    ...     now=datetime(2026, 1, 1, tzinfo=timezone.utc), config=UtilityConfig(),
    ...     critical=CriticalFactPolicy())
    >>> [(i.id, round(i.score, 2)) for i in ranked]
    [('e1', 0.7), ('f1', 0.0)]
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from langchain_tiered_memory.assembly.critical import CriticalFactPolicy
from langchain_tiered_memory.assembly.items import MemoryItem
from langchain_tiered_memory.tiers.common.ranking import (
    UtilityConfig,
    lexical_relevance,
    query_terms,
    recency_score,
    term_set,
    utility_score,
)

__all__ = ["LINK_DISCOUNT", "QUERY_RANKED", "rank_items"]

QUERY_RANKED = frozenset({"strategies", "knowledge", "experiences", "conversation"})
"""Sections whose tier ranks its answers by the query (best first)."""


def _tier_ranks(items: Sequence[MemoryItem]) -> list[float]:
    """1 for each query-ranked tier's first answer, falling linearly to its last."""
    counts = Counter(item.section for item in items)
    seen: Counter[str] = Counter()
    ranks = []
    for item in items:
        ranked = item.section in QUERY_RANKED
        ranks.append(1.0 - seen[item.section] / counts[item.section] if ranked else 1.0)
        seen[item.section] += 1
    return ranks


LINK_DISCOUNT = 0.9
"""A tool warning is worth this share of the relevance of a memory that names the tool."""


def _linked(items: Sequence[MemoryItem], lexical: Sequence[float]) -> list[float]:
    """For each tool warning, the best relevance of another memory naming its tool."""
    linked = [0.0] * len(items)
    for n, item in enumerate(items):
        tool = item.provenance.get("tool") if item.section == "warnings" else None
        if not tool:
            continue
        needle = str(tool).lower()
        linked[n] = LINK_DISCOUNT * max(
            (
                rel
                for other, rel in zip(items, lexical, strict=True)
                if other.section != "warnings" and needle in other.text.lower()
            ),
            default=0.0,
        )
    return linked


def _importance(item: MemoryItem) -> float:
    if item.importance is not None:
        return item.importance
    return item.confidence if item.confidence is not None else 0.5


def rank_items(
    items: Sequence[MemoryItem],
    query: str,
    *,
    now: datetime,
    config: UtilityConfig,
    critical: CriticalFactPolicy,
) -> list[MemoryItem]:
    """Score every item's utility for ``query``; best first (critical facts first of all).

    ``items`` must be in each tier's order (best first within a section).
    Returns new items: ``score`` is the utility, ``score_breakdown`` its parts
    (and the tier's own score as ``tier_score``), ``critical`` is set.
    """
    docs = [term_set(i.text) for i in items]
    terms = query_terms(query, docs)
    lexical = [lexical_relevance(terms, d) for d in docs]
    linked = _linked(items, lexical)
    tier_ranks = _tier_ranks(items)
    ranked: list[MemoryItem] = []
    for item, lex, link, tier_rank in zip(items, lexical, linked, tier_ranks, strict=True):
        recency = (
            0.5
            if item.timestamp is None
            else recency_score(item.timestamp, now, config.recency_half_life_hours)
        )
        own = item.section in config.tier_scored
        parts = utility_score(
            lexical=(float(item.score) if lex > 0 else 0.0) if own else max(lex, link),
            similarity=item.score_breakdown.get("similarity"),
            importance=_importance(item),
            recency=recency,
            confidence=1.0 if item.confidence is None else item.confidence,
            prior=config.priors.get(item.section, 0.5),
            config=config,
            tier_rank=tier_rank,
        )
        is_critical = critical.is_critical(item)
        breakdown = {
            **item.score_breakdown,
            "tier_score": float(item.score),
            **parts.as_dict(),
            "lexical": lex,
            "linked": link,
        }
        if is_critical:
            breakdown["critical"] = 1.0
            breakdown["utility"] = 1.0
        ranked.append(
            replace(
                item,
                score=breakdown["utility"],
                score_breakdown=breakdown,
                critical=is_critical,
            )
        )
    ranked.sort(key=lambda i: (not i.critical, -i.score))
    return ranked
