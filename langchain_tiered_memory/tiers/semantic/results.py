"""What the semantic tier's calls return: write outcomes, entity context, search hits.

Examples:
    >>> from langchain_tiered_memory.tiers.semantic.results import RememberResult
    >>> RememberResult().stored
    []
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from langchain_tiered_memory.tiers.semantic.models import Entity, Fact, Relation

__all__ = [
    "EntityContext",
    "FactWriteResult",
    "RelatedEntity",
    "RememberResult",
    "SemanticSearchHit",
    "WriteOutcome",
]

WriteOutcome = Literal["new", "reinforced", "superseded", "candidate"]
"""``new``: stored as a new current fact; ``reinforced``: an equivalent fact was
confirmed (no new record); ``superseded``: the new fact replaced the slot's current
value (which stays in history); ``candidate``: kept beside a more confident
current fact that it contradicts."""


@dataclass(frozen=True)
class FactWriteResult:
    """What one ``store_fact`` call did.

    Attributes:
        outcome: See :data:`WriteOutcome`.
        fact: The fact as stored now (the new one, or the reinforced one).
        previous: The fact it was compared with: the superseded or contradicted
            fact, or ``None``.
        judged_by: ``"slot"`` (values compared), ``"heuristic"``, ``"llm"``, or
            ``None`` when nothing needed judging.
        warnings: Things the caller may want to know (e.g. the LLM judge failed and
            the heuristic was used instead).
    """

    outcome: WriteOutcome
    fact: Fact
    previous: Fact | None = None
    judged_by: str | None = None
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class RelatedEntity:
    """A relation and the entity at its other end."""

    relation: Relation
    target: Entity


@dataclass(frozen=True)
class EntityContext:
    """Everything worth telling a model about one entity.

    Attributes:
        entity: The entity, or ``None`` if it is unknown.
        facts: Current, confident, non-stale facts, most confident first.
        relations: Outgoing relations with their target entities.
        omitted: Current facts left out (stale, below ``min_confidence``, or beyond
            ``max_facts``).
        text: The same, formatted for a prompt (empty if the entity is unknown).
    """

    entity: Entity | None
    facts: list[Fact] = field(default_factory=list)
    relations: list[RelatedEntity] = field(default_factory=list)
    omitted: int = 0
    text: str = ""

    def __bool__(self) -> bool:
        return self.entity is not None


@dataclass(frozen=True)
class SemanticSearchHit:
    """One result of ``semantic_search``: a fact or an entity, with its score."""

    kind: Literal["fact", "entity"]
    score: float | None
    entity_id: str
    text: str
    fact: Fact | None = None
    entity: Entity | None = None


@dataclass
class RememberResult:
    """What ``remember_from_text`` stored, and what went wrong on the way.

    Attributes:
        writes: One result per stored fact, in order (heuristic path first).
        relations: Relations added by the LLM path.
        errors: Extraction failures and rejected extracted items (nothing of a
            failed extraction is stored).
        paths: The write paths that ran (``"heuristic"``, ``"llm"``).
    """

    writes: list[FactWriteResult] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)

    @property
    def stored(self) -> list[Fact]:
        """The facts as stored after each write."""
        return [w.fact for w in self.writes]

    @property
    def error(self) -> str | None:
        """All errors joined, or ``None`` if there were none."""
        return "; ".join(self.errors) if self.errors else None
