"""Records of semantic memory: entities, facts with time and provenance, relations.

A :class:`Fact` may name the *attribute slot* it sets (``lives_in``, ``allergy``, ...);
the slot decides which older fact a new one can supersede.

Examples:
    >>> from datetime import datetime, timezone
    >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> fact = Fact(fact_id="f1", entity_id="alice", content="Lives in Paris",
    ...             attribute="lives_in", value="Paris", confidence=0.8,
    ...             first_observed=t, last_confirmed=t, valid_from=t)
    >>> fact.is_current_at(t), fact.is_stale(datetime(2026, 3, 1, tzinfo=timezone.utc))
    (True, True)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field

from langchain_tiered_memory.chat_models import DEFAULT_LLM_TIMEOUT, check_timeout
from langchain_tiered_memory.errors import ConfigurationError, InvalidInputError
from langchain_tiered_memory.tiers.common.scope import normalize_id
from langchain_tiered_memory.types import ensure_aware

__all__ = [
    "DEFAULT_MULTI_VALUED_ATTRIBUTES",
    "Entity",
    "Fact",
    "FactSource",
    "FactStatus",
    "Relation",
    "SemanticConfig",
    "check_confidence",
    "fact_to_value",
    "normalize_attribute",
    "normalize_value",
    "slot_key_for",
]

FactStatus = Literal["current", "superseded", "candidate"]
"""``current``: the accepted value now; ``superseded``: replaced, kept as history;
``candidate``: a contradicting claim not (yet) confident enough to replace the current one."""

FactSource = Literal["heuristic", "llm", "manual"]
"""The write path that produced a fact: the regex extractor, the LLM extractor, or a direct call."""

DEFAULT_MULTI_VALUED_ATTRIBUTES: frozenset[str] = frozenset({"allergy", "preference", "dislike"})
"""Attributes whose values coexist (two allergies); every other attribute holds one value."""

_ATTRIBUTE_RE = re.compile(r"[^a-z0-9_]+")
_ARTICLE_RE = re.compile(r"^(?:a|an|the)\s+")
_EDGE_PUNCT = " \t\n\r.,;:!?\"'()[]{}"


def normalize_attribute(attribute: str) -> str:
    """Normalise an attribute slot name: lower-case, non-alphanumerics to ``_``.

    Raises:
        InvalidInputError: The attribute is not a string or empty after normalising.
    """
    if not isinstance(attribute, str):
        raise InvalidInputError(
            f"attribute must be a string such as 'lives_in', got {type(attribute).__name__}"
        )
    cleaned = _ATTRIBUTE_RE.sub("_", attribute.strip().lower()).strip("_")
    if not cleaned:
        raise InvalidInputError(
            f"attribute {attribute!r} is empty after normalising: use a name such as 'lives_in'"
        )
    return cleaned


def normalize_value(value: str) -> str:
    """Normalise a slot value to compare and key slots: case, spaces, punctuation, article, plural.

    Examples:
        >>> normalize_value("  The Peanuts! "), normalize_value("peanut")
        ('peanut', 'peanut')
    """
    cleaned = _ARTICLE_RE.sub("", " ".join(value.split()).lower().strip(_EDGE_PUNCT))
    if len(cleaned) > 3 and cleaned.endswith("s") and not cleaned.endswith(("ss", "us", "is")):
        cleaned = cleaned[:-1]
    return cleaned


def slot_key_for(
    attribute: str | None, value: str | None, multi_valued: frozenset[str]
) -> str | None:
    """A fact's slot key: one per single-valued attribute, one per value of a multi-valued one.

    Examples:
        >>> multi = frozenset({"allergy"})
        >>> slot_key_for("lives_in", "Lyon", multi), slot_key_for("allergy", "Peanuts", multi)
        ('lives_in', 'allergy=peanut')
    """
    if attribute is None:
        return None
    if attribute in multi_valued:
        # Without a value it occupies no slot and is compared by the judge only.
        return f"{attribute}={normalize_value(value)}" if value else None
    return attribute


def check_confidence(confidence: float) -> float:
    """Return ``confidence`` as a float if it is a finite number in [0, 1].

    Raises:
        InvalidInputError: Not a number, NaN, infinite, or outside [0, 1].
    """
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)):
        raise InvalidInputError(
            f"confidence must be a number in [0, 1], got {type(confidence).__name__} {confidence!r}"
        )
    value = float(confidence)
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise InvalidInputError(
            f"confidence {confidence!r} is outside [0, 1]: pass e.g. 0.8 (1.0 = certain)"
        )
    return value


def _text(value: str) -> str:
    cleaned = " ".join(value.split())
    if not cleaned:
        raise ValueError("text is empty: pass a non-empty string")
    return cleaned


EntityId = Annotated[str, AfterValidator(lambda value: normalize_id(value, what="entity_id"))]
Label = Annotated[str, AfterValidator(normalize_attribute)]
Text = Annotated[str, AfterValidator(_text)]
Aware = Annotated[datetime, AfterValidator(ensure_aware)]


class Entity(BaseModel):
    """Something facts are about: the user, a project, a tool, an organisation.

    Examples:
        >>> from datetime import datetime, timezone
        >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
        >>> Entity(entity_id=" Alice ", name="Alice", created_at=t, updated_at=t).entity_id
        'alice'
    """

    entity_id: EntityId
    entity_type: Label = "user"
    name: Text
    aliases: list[str] = Field(default_factory=list)
    created_at: Aware
    updated_at: Aware

    @property
    def search_text(self) -> str:
        """The text indexed for semantic search: name, type and aliases."""
        aliases = f"; also known as {', '.join(self.aliases)}" if self.aliases else ""
        return f"{self.name} ({self.entity_type}){aliases}"


class Relation(BaseModel):
    """A directed, typed edge between two entities of the same scope.

    Examples:
        >>> from datetime import datetime, timezone
        >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
        >>> Relation(source_id="alice", relation_type="works at", target_id="acme",
        ...          created_at=t).key
        'alice|works_at|acme'
    """

    source_id: EntityId
    relation_type: Label
    target_id: EntityId
    description: str = ""
    created_at: Aware

    @property
    def key(self) -> str:
        """Store key: one edge per (source, type, target)."""
        return f"{self.source_id}|{self.relation_type}|{self.target_id}"


class Fact(BaseModel):
    """One assertion about an entity, with confidence, provenance and validity time.

    Attributes:
        fact_id: Unique id (the store key).
        entity_id: The (normalised) entity the fact is about.
        entity_type: The entity's type, copied for filtered search.
        content: The statement, e.g. ``"Allergic to shellfish"``.
        attribute: Optional slot name the fact sets (``"lives_in"``).
        value: Optional slot value (``"Lyon"``).
        slot_key: Slot identity; see :func:`slot_key_for`.
        confidence: In [0, 1]; NaN is rejected.
        source_episode_ids: Provenance: episodes in which the fact was stated.
        first_observed: When it was first stated.
        last_confirmed: When it was last stated again.
        valid_from: When it became the accepted value (``None`` for a candidate).
        valid_to: When it stopped being the accepted value (``None``: still is).
        contradiction_count: How many contradicting claims it has met.
        status: ``current``, ``superseded`` or ``candidate``.
        source: Which write path produced it (``heuristic``, ``llm``, ``manual``).
        superseded_by: Id of the fact that replaced it, if any.
        pinned: Never forgotten by consolidation; see ``SemanticMemory.pin_fact``.
        access_count: How often retrievals returned the fact. Not stored with it:
            ``get_fact``, ``get_facts``, ``fact_history`` and consolidation fill it;
            retrieval results carry ``0``.
        last_accessed: When a retrieval last returned it (``None``: never), filled alike.

    Examples:
        >>> from datetime import datetime, timezone
        >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
        >>> Fact(fact_id="f", entity_id="bob", content="Is vegan", confidence=0.9,
        ...      first_observed=t, last_confirmed=t, valid_from=t).status
        'current'
    """

    fact_id: str
    entity_id: EntityId
    entity_type: Label = "user"
    content: Text
    attribute: str | None = None
    value: str | None = None
    slot_key: str | None = None
    confidence: float = Field(ge=0.0, le=1.0, allow_inf_nan=False)
    source_episode_ids: list[str] = Field(default_factory=list)
    first_observed: Aware
    last_confirmed: Aware
    valid_from: Aware | None = None
    valid_to: Aware | None = None
    contradiction_count: int = Field(default=0, ge=0)
    status: FactStatus = "current"
    source: FactSource = "manual"
    superseded_by: str | None = None
    pinned: bool = False
    access_count: int = Field(default=0, ge=0)
    last_accessed: Aware | None = None

    @property
    def is_current(self) -> bool:
        """Whether this fact is the accepted value now."""
        return self.status == "current"

    def is_current_at(self, when: datetime) -> bool:
        """Whether this fact was the accepted value at ``when`` (candidates never are)."""
        if self.valid_from is None or self.status == "candidate":
            return False
        when = ensure_aware(when)
        return self.valid_from <= when and (self.valid_to is None or when < self.valid_to)

    def is_stale(self, now: datetime, stale_after_days: float = 30) -> bool:
        """Whether the fact has not been confirmed for more than ``stale_after_days``."""
        return ensure_aware(now) - self.last_confirmed > timedelta(days=stale_after_days)


def fact_to_value(fact: Fact) -> dict[str, Any]:
    """The stored value of a fact: its JSON dump without the access statistics.

    Examples:
        >>> from datetime import datetime, timezone
        >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
        >>> value = fact_to_value(Fact(fact_id="f", entity_id="bob", content="Is vegan",
        ...                            confidence=0.9, first_observed=t, last_confirmed=t,
        ...                            access_count=3))
        >>> "access_count" in value, value["pinned"]
        (False, False)
    """
    return fact.model_dump(mode="json", exclude={"access_count", "last_accessed"})


@dataclass(frozen=True)
class SemanticConfig:
    """Settings of :class:`~langchain_tiered_memory.tiers.semantic.memory.SemanticMemory`.

    Attributes:
        min_confidence: Facts below this are left out of entity context.
        stale_after_days: Facts unconfirmed for longer are stale (left out of context).
        reinforce_step: Confidence added when a fact is stated again (capped at 1.0).
        supersede_margin: A new value in an occupied slot supersedes the current one
            unless its confidence is lower by more than this; then it is a candidate,
            promoted once restatements bring it within the margin.
        duplicate_candidates: How many near-duplicates the store search returns per write.
        duplicate_min_score: Search score below which a hit is not a near-duplicate;
            ``None`` (default) judges every hit. Scores differ between stores (cosine,
            reciprocal rank), so set it only when you know your store's scale.
        max_judged: At most this many near-duplicates are judged per write.
        heuristic_confidence: Confidence of facts from the regex extractor.
        multi_valued_attributes: Attributes whose values coexist.
        page_size: Page size when listing an entity's facts.
        max_known_entities: Known entities given to the LLM extractor.
        llm_timeout: Seconds one LLM call (extraction, judgement) may take (``None``:
            no limit); a slower call fails like any LLM failure: the heuristic result
            is kept and the error recorded (``RememberResult.errors``).
        track_access: Count how often retrievals return each fact, for the forgetting
            size cap (in process memory, saved later; see
            :mod:`~langchain_tiered_memory.tiers.common.access`).

    Raises:
        ConfigurationError: A setting is out of range (the message names it).

    Examples:
        >>> SemanticConfig(supersede_margin=0.1).reinforce_step
        0.1
    """

    min_confidence: float = 0.5
    stale_after_days: float = 30.0
    reinforce_step: float = 0.1
    supersede_margin: float = 0.25
    duplicate_candidates: int = 5
    duplicate_min_score: float | None = None
    max_judged: int = 3
    heuristic_confidence: float = 0.9
    multi_valued_attributes: frozenset[str] = field(
        default_factory=lambda: DEFAULT_MULTI_VALUED_ATTRIBUTES
    )
    page_size: int = 100
    max_known_entities: int = 50
    llm_timeout: float | None = DEFAULT_LLM_TIMEOUT
    track_access: bool = True

    def __post_init__(self) -> None:
        for name in (
            "min_confidence",
            "reinforce_step",
            "supersede_margin",
            "heuristic_confidence",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not 0.0 <= float(value) <= 1.0:
                raise ConfigurationError(f"{name}={value!r} must be in [0, 1]")
        for name in ("duplicate_candidates", "max_judged", "page_size", "max_known_entities"):
            if int(getattr(self, name)) < 1:
                raise ConfigurationError(f"{name}={getattr(self, name)!r} must be at least 1")
        check_timeout(self.llm_timeout, name="llm_timeout")
