"""One ranking across tiers: every candidate memory gets one utility in ``[0, 1]``.

The parts, all shown in ``MemoryItem.score_breakdown``:

* ``relevance``: lexical evidence that the memory is about the query (the share
  of the query's terms, weighted by how rare each is among the candidates,
  that the memory contains), or the tier's calibrated similarity when
  :attr:`UtilityConfig.similarity_weight` lets it stand in; for a conversation
  turn (:attr:`UtilityConfig.tier_scored`), the turn tier's own calibrated
  score, once the turn shares a term with the query;
* ``importance`` (an episode's importance, a tool's failure rate, a fact's
  confidence), ``recency``, ``confidence`` and the section's ``prior``, which
  make up ``quality``;
* ``utility = relevance * ((1 - quality_share) + quality_share * quality)``;
* ``linked``: for a tool warning, the relevance of the most relevant other
  memory that names the tool (a past task that used it), times
  :data:`LINK_DISCOUNT`; the warning's relevance is the larger of its own
  and this one;
* ``tier_rank``: the memory's place in its tier's answer (1 for the best
  match, falling linearly); it scales the utility by
  ``(1 - rank_share) + rank_share * tier_rank``;
* ``tier_score``: the score the tier itself gave (its own scale), kept for
  reading with the tier's own parts (a turn's ``fused``, ``neighbour``, ...),
  except where a name above replaces them.

Critical facts (:class:`~langchain_tiered_memory.assembly.critical.CriticalFactPolicy`)
are marked ``critical`` and get utility 1.

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
    counts: dict[str, int] = {}
    for item in items:
        counts[item.section] = counts.get(item.section, 0) + 1
    seen: dict[str, int] = {}
    ranks = []
    for item in items:
        pos = seen.get(item.section, 0)
        seen[item.section] = pos + 1
        n = counts[item.section]
        ranks.append(1.0 - pos / n if item.section in QUERY_RANKED else 1.0)
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
