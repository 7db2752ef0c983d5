"""Turn each tier's records into tier-neutral :class:`MemoryItem` objects.

Pure functions, shared by the sync and async assembler paths.

Examples:
    >>> from langchain_tiered_memory.tiers.procedural.models import ToolGuidance
    >>> g = ToolGuidance(tool_name="orders_v1", known=True, total_uses=3, successes=0,
    ...                  failures=3, last_success=False, last_error="410 Gone: use orders_v2")
    >>> [i.text for i in warning_items([g], min_failure_rate=0.3)]
    ['orders_v1: failed 3 of 3 uses; last error: 410 Gone: use orders_v2']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain_tiered_memory.assembly.items import MemoryItem
from langchain_tiered_memory.tiers.episodic.models import Episode, ScoredEpisode
from langchain_tiered_memory.tiers.procedural.models import ScoredStrategy, ToolGuidance
from langchain_tiered_memory.tiers.semantic.models import Fact
from langchain_tiered_memory.tiers.semantic.results import SemanticSearchHit
from langchain_tiered_memory.tiers.turns.models import TurnHit

__all__ = [
    "episode_text",
    "experience_items",
    "fact_item",
    "knowledge_items",
    "preference_items",
    "profile_items",
    "strategy_items",
    "turn_items",
    "warning_items",
]


def warning_items(guidance: Iterable[ToolGuidance], *, min_failure_rate: float) -> list[MemoryItem]:
    """Tool warnings: tools that failed often, or failed the last time they were used."""
    items: list[MemoryItem] = []
    for g in guidance:
        if not g.known or g.failures == 0:
            continue
        if g.failure_rate < min_failure_rate and g.last_success is not False:
            continue
        rate = "" if g.failures == g.total_uses else f" ({g.failure_rate:.0%})"
        parts = [f"{g.tool_name}: failed {g.failures} of {g.total_uses} uses{rate}"]
        if g.last_error:
            parts.append(f"last error: {g.last_error}")
        if g.last_hint and g.last_hint not in (g.last_error or ""):
            parts.append(f"hint: {g.last_hint}")
        if g.successful_patterns:
            parts.append("worked with: " + ", ".join(g.successful_patterns[:3]))
        items.append(
            MemoryItem(
                tier="procedural",
                section="warnings",
                id=f"tool:{g.tool_name}",
                text="; ".join(parts),
                score=g.failure_rate,
                score_breakdown={"failure_rate": g.failure_rate, "uses": float(g.total_uses)},
                provenance={"tool": g.tool_name, "total_uses": g.total_uses},
                group_key=f"tool|{g.tool_name}",
                timestamp=g.last_used,
                importance=g.failure_rate,
            )
        )
    return items


def strategy_items(strategies: Sequence[ScoredStrategy]) -> list[MemoryItem]:
    """Learned strategies with their confidence (once they have outcomes) and when to apply them."""
    items = []
    for s in strategies:
        st = s.strategy
        tried = st.success_count + st.failure_count > 0
        shown = f" (confidence {s.confidence:.0%})" if tried else ""
        text = f"{st.name}{shown}: {st.description}"
        if st.conditions:
            text += f". Apply when: {st.conditions}"
        if st.procedure:
            text += f". Procedure: {st.procedure}"
        items.append(
            MemoryItem(
                tier="procedural",
                section="strategies",
                id=f"strategy:{st.name}",
                text=text,
                score=s.score,
                score_breakdown={"relevance": s.relevance, "confidence": s.confidence},
                provenance={"successes": st.success_count, "failures": st.failure_count},
                group_key=f"strategy|{st.name}",
                timestamp=st.last_used or st.created_at,
                confidence=s.confidence,
            )
        )
    return items


def preference_items(preferences: Mapping[str, Any]) -> list[MemoryItem]:
    """Stated preferences, as profile items."""
    return [
        MemoryItem(
            tier="procedural",
            section="profile",
            id=f"preference:{key}",
            text=f"Preference: {key} = {value}",
            score=1.0,
            group_key=f"preference|{key}",
        )
        for key, value in sorted(preferences.items())
    ]


def fact_item(fact: Fact, *, section: str, score: float, breakdown: dict[str, float]) -> MemoryItem:
    """One semantic fact as an item; facts in one slot share a group key."""
    return MemoryItem(
        tier="semantic",
        section=section,  # type: ignore[arg-type]
        id=fact.fact_id,
        text=fact.content,
        score=score,
        score_breakdown=breakdown,
        provenance={
            "entity_id": fact.entity_id,
            "source_episode_ids": list(fact.source_episode_ids),
            "source": fact.source,
            "attribute": fact.attribute,
            "pinned": fact.pinned,
        },
        group_key=f"{fact.entity_id}|{fact.slot_key}" if fact.slot_key else None,
        timestamp=fact.last_confirmed,
        confidence=fact.confidence,
    )


def profile_items(facts: Sequence[Fact]) -> list[MemoryItem]:
    """Facts of the user's profile (also those fetched because they may be critical)."""
    return [
        fact_item(f, section="profile", score=f.confidence, breakdown={"confidence": f.confidence})
        for f in facts
    ]


def knowledge_items(hits: Sequence[SemanticSearchHit], *, exclude: set[str]) -> list[MemoryItem]:
    """Query-relevant facts (and entities) not already in the profile."""
    items: list[MemoryItem] = []
    for hit in hits:
        relevance = float(hit.score) if hit.score is not None else 0.0
        if hit.fact is not None:
            if hit.fact.fact_id in exclude:
                continue
            items.append(
                fact_item(
                    hit.fact,
                    section="knowledge",
                    score=relevance,
                    breakdown={
                        "relevance": relevance,
                        "similarity": relevance,
                        "confidence": hit.fact.confidence,
                    },
                )
            )
        else:
            items.append(
                MemoryItem(
                    tier="semantic",
                    section="knowledge",
                    id=f"entity:{hit.entity_id}",
                    text=hit.text,
                    score=relevance,
                    score_breakdown={"relevance": relevance},
                    provenance={"entity_id": hit.entity_id},
                )
            )
    return items


def episode_text(episode: Episode) -> str:
    """An episode on one line, lesson before steps (a trimmed line loses the steps first).

    Example:
        >>> from langchain_tiered_memory.tiers.episodic.models import TrajectoryStep
        >>> episode_text(Episode(task_description="Fix CI", outcome="failure",
        ...     reflection="Pin dependencies.", trajectory=[TrajectoryStep(action="run tests")]))
        'Task: Fix CI (failure). Lesson: Pin dependencies. Steps: [run tests]'
    """
    text = f"Task: {episode.task_description} ({episode.outcome.value})."
    if episode.reflection:
        text += f" Lesson: {episode.reflection}"
    if episode.trajectory:
        text += " Steps: " + " -> ".join(f"[{s.action}]" for s in episode.trajectory)
    return text


def experience_items(episodes: Sequence[ScoredEpisode]) -> list[MemoryItem]:
    """Similar past episodes with their lesson, scored by relevance, recency and importance."""
    return [
        MemoryItem(
            tier="episodic",
            section="experiences",
            id=s.episode.episode_id,
            text=episode_text(s.episode),
            score=s.score.total,
            score_breakdown=dict(s.score.contributions()),
            provenance={"session_id": s.episode.session_id, "outcome": s.episode.outcome.value},
            timestamp=s.episode.created_at,
            importance=s.episode.importance,
        )
        for s in episodes
    ]


def turn_items(hits: Sequence[TurnHit]) -> list[MemoryItem]:
    """Past conversation turns, as ``[date] speaker: text``, scored by the turn search."""
    return [
        MemoryItem(
            tier="episodic",
            section="conversation",
            id=hit.turn_id,
            text=f"[{hit.time.date().isoformat()}] {hit.speaker}: {hit.text}"
            + (f" [shared: {hit.turn.caption}]" if hit.turn.caption else ""),
            score=hit.score.total,
            score_breakdown={
                "fused": hit.score.fused,
                "neighbour": hit.score.neighbour,
                "session": hit.score.session,
                "speaker": hit.score.speaker,
            },
            provenance={"session_id": hit.session_id, "turn_id": hit.turn_id},
            timestamp=hit.time,
        )
        for hit in hits
    ]
