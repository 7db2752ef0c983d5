"""Pure rules of the semantic tier: validation, reinforcement, supersession, selection.

No I/O here: functions take records and the current time and return new records.
The update rule (what ``store_fact`` does with a new statement):

* **reinforce**: an equivalent current fact exists (same slot value, or judged
  ``same``): its confidence rises by ``reinforce_step`` (or to the new one's, if
  higher; at most 1.0), ``last_confirmed`` becomes now, the episode joins its provenance.
* **supersede**: a different value for an occupied slot (or a fact judged to
  contradict), not *clearly* less confident (``new >= old - supersede_margin``):
  a change over time. The old fact gets ``valid_to``, status ``superseded`` and
  ``superseded_by``, and stays in history and in "as of" queries.
* **candidate**: a clearly less confident contradiction is kept as ``candidate``
  (never current) and both facts count it; restating it reinforces it, and it
  supersedes the current fact once within the margin.
* **new**: nothing related. Facts without a slot are only compared by the judge,
  so similar wording about different things keeps both.
* **one current value per slot**: a slot's writes run under its lock
  (:mod:`.slot_lock`); should a slot still hold several current facts (several
  processes on one Qdrant server), its next write keeps the newest and ends the others.

Examples:
    >>> from datetime import datetime, timezone
    >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> old = Fact(fact_id="a", entity_id="al", content="Lives in Paris", attribute="lives_in",
    ...            value="Paris", slot_key="lives_in", confidence=0.9,
    ...            first_observed=t, last_confirmed=t, valid_from=t)
    >>> new = old.model_copy(update={"fact_id": "b", "value": "Lyon", "confidence": 0.8})
    >>> should_supersede(old, new, margin=0.25)
    True
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from langchain_tiered_memory.errors import InvalidInputError
from langchain_tiered_memory.text import MAX_TEXT_CHARS, check_text, check_unicode, sanitize_line
from langchain_tiered_memory.tiers.common.scope import normalize_id
from langchain_tiered_memory.tiers.semantic.models import (
    Entity,
    Fact,
    FactSource,
    SemanticConfig,
    check_confidence,
    normalize_attribute,
    slot_key_for,
)
from langchain_tiered_memory.tiers.semantic.results import (
    EntityContext,
    RelatedEntity,
    SemanticSearchHit,
)

__all__ = [
    "FactRequest",
    "as_candidate",
    "build_entity_context",
    "end_extra_current",
    "format_entity_context",
    "make_draft",
    "merge_search_hits",
    "parse_one",
    "parse_records",
    "promote",
    "reinforce",
    "select_near_duplicates",
    "should_supersede",
    "supersede",
    "validate_remember",
]

logger = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)

_SOURCES: tuple[FactSource, ...] = ("heuristic", "llm", "manual")


def validate_remember(text: object, source_episode_id: object = None) -> str:
    """The text of a ``remember`` request, checked at the door (direct and queued alike).

    Raises:
        InvalidInputError: ``text`` is not a string, blank, not valid Unicode or
            longer than :data:`~langchain_tiered_memory.text.MAX_TEXT_CHARS`; or
            ``source_episode_id`` is not ``None`` nor a non-blank string.
    """
    checked = check_text(text, "text to remember", max_chars=MAX_TEXT_CHARS)
    if source_episode_id is not None:
        check_text(source_episode_id, "source_episode_id")
    return checked


@dataclass(frozen=True)
class FactRequest:
    """A statement to store about an entity, as ``store_fact`` takes it (see :func:`make_draft`)."""

    entity_id: str
    content: str
    attribute: str | None = None
    value: str | None = None
    confidence: float = 0.8
    source_episode_id: str | None = None
    entity_type: str = "user"
    source: str = "manual"


def make_draft(request: FactRequest, *, config: SemanticConfig, now: datetime) -> Fact:
    """Validate a ``store_fact`` request and build the fact it would store.

    Raises:
        InvalidInputError: Empty content, confidence not a finite number in
            [0, 1], a value without an attribute, an unknown source, or a bad id.
    """
    content, value, source = request.content, request.value, request.source
    episode = request.source_episode_id
    eid = normalize_id(request.entity_id, what="entity_id")
    if not isinstance(content, str) or not content.strip():
        raise InvalidInputError(
            f"fact content is empty ({content!r}): pass a statement such as 'Allergic to shellfish'"
        )
    check_unicode(content, "fact content")
    conf = check_confidence(request.confidence)
    attr = normalize_attribute(request.attribute) if request.attribute is not None else None
    if value is not None and not isinstance(value, str):
        raise InvalidInputError(f"value must be a string, got {type(value).__name__} {value!r}")
    if value is not None:
        check_unicode(value, "fact value")
    val = " ".join(value.split()) if value else None
    if val and attr is None:
        raise InvalidInputError(
            f"value {value!r} was given without an attribute: pass attribute= (e.g. 'lives_in')"
        )
    if source not in _SOURCES:
        raise InvalidInputError(f"source {source!r} is unknown: use one of {', '.join(_SOURCES)}")
    if episode is not None and (not isinstance(episode, str) or not episode.strip()):
        raise InvalidInputError(f"source_episode_id {episode!r} must be a non-empty string or None")
    try:
        return Fact(
            fact_id=uuid.uuid4().hex,
            entity_id=eid,
            entity_type=normalize_attribute(request.entity_type),
            content=content,
            attribute=attr,
            value=val,
            slot_key=slot_key_for(attr, val, config.multi_valued_attributes),
            confidence=conf,
            source_episode_ids=[episode.strip()] if episode else [],
            first_observed=now,
            last_confirmed=now,
            valid_from=now,
            source=source,  # type: ignore[arg-type]
        )
    except ValidationError as exc:  # a rule of the model the checks above do not repeat
        raise InvalidInputError(f"invalid fact: {exc.errors()[0]['msg']}") from exc


def _updated(fact: Fact, **changes: Any) -> Fact:
    return Fact.model_validate({**fact.model_dump(), **changes})


def reinforce(existing: Fact, new: Fact, now: datetime, step: float, *, bump: bool = True) -> Fact:
    """Confirm ``existing`` with ``new``: confidence ``min(1, max(old + step, new))``.

    Without ``bump`` (one text confirmed by two write paths) it is ``max(old, new)``;
    a missing slot value or attribute is filled from ``new``.
    """
    changes: dict[str, Any] = {
        "confidence": min(1.0, max(existing.confidence + (step if bump else 0.0), new.confidence)),
        "last_confirmed": now,
        "source_episode_ids": list(
            dict.fromkeys([*existing.source_episode_ids, *new.source_episode_ids])
        ),
    }
    if existing.attribute is None and new.attribute is not None:
        changes.update(attribute=new.attribute, value=new.value, slot_key=new.slot_key)
    elif existing.value is None and new.value is not None and existing.attribute == new.attribute:
        changes.update(value=new.value, slot_key=new.slot_key)
    return _updated(existing, **changes)


def should_supersede(old: Fact, new: Fact, *, margin: float) -> bool:
    """Whether ``new`` replaces ``old``: its confidence is not clearly lower."""
    return new.confidence >= old.confidence - margin - 1e-9


def supersede(old: Fact, new: Fact, now: datetime) -> tuple[Fact, Fact]:
    """End ``old`` at ``now`` and make ``new`` current from ``now`` (inheriting the slot)."""
    changes: dict[str, Any] = {"status": "current", "valid_from": now, "valid_to": None}
    if new.attribute is None and old.attribute is not None:
        changes.update(attribute=old.attribute, slot_key=old.slot_key)
    ended = _updated(old, status="superseded", valid_to=now, superseded_by=new.fact_id)
    return ended, _updated(new, **changes)


def end_extra_current(current: Sequence[Fact]) -> list[Fact]:
    """End all but the last of a slot's current facts (oldest first), from the time it began."""
    if len(current) < 2:
        return []
    newest = current[-1]
    until = newest.valid_from or newest.first_observed
    return [
        _updated(f, status="superseded", valid_to=until, superseded_by=newest.fact_id)
        for f in current[:-1]
    ]


def promote(candidate: Fact, old: Fact | None, now: datetime) -> tuple[Fact | None, Fact]:
    """Make a candidate current, ending ``old`` if there is one."""
    if old is None:
        return None, _updated(candidate, status="current", valid_from=now, valid_to=None)
    return supersede(old, candidate, now)


def as_candidate(current: Fact, new: Fact) -> tuple[Fact, Fact]:
    """Keep ``new`` as a candidate beside ``current``; both count the contradiction."""
    counted = _updated(current, contradiction_count=current.contradiction_count + 1)
    changes: dict[str, Any] = {
        "status": "candidate",
        "valid_from": None,
        "valid_to": None,
        "contradiction_count": new.contradiction_count + 1,
    }
    if new.attribute is None and current.attribute is not None:
        changes.update(attribute=current.attribute, slot_key=current.slot_key)
    return counted, _updated(new, **changes)


def parse_records(items: Iterable[Any], model: type[M]) -> list[M]:
    """Parse store items into ``model``; unreadable records are logged and skipped."""
    parsed: list[M] = []
    for item in items:
        try:
            parsed.append(model.model_validate(item.value))
        except ValidationError as exc:
            logger.warning(
                "skipping unreadable %s record %r in %r: %s",
                model.__name__,
                item.key,
                item.namespace,
                exc.errors()[0]["msg"],
            )
    return parsed


def parse_one(item: Any, model: type[M]) -> M | None:
    """One store item (or ``None``) parsed into ``model``; ``None`` if absent or unreadable."""
    parsed = parse_records([item] if item else [], model)
    return parsed[0] if parsed else None


def select_near_duplicates(items: Sequence[Any], min_score: float | None) -> list[Fact]:
    """Search hits scoring at least ``min_score`` (all of them without one, or unscored)."""
    if min_score is None or all(getattr(i, "score", None) is None for i in items):
        kept = list(items)
    else:
        kept = [i for i in items if i.score is not None and i.score >= min_score]
    return parse_records(kept, Fact)


def format_entity_context(
    entity: Entity, facts: Sequence[Fact], relations: Sequence[RelatedEntity]
) -> str:
    """The entity context text; each remembered text is folded onto one line (``sanitize_line``)."""
    lines = [f"Entity: {sanitize_line(entity.name)} ({entity.entity_type})"]
    if facts:
        lines.append("Known facts:")
        lines.extend(f"- {sanitize_line(f.content)}" for f in facts)
    if relations:
        lines.append("Relationships:")
        for rel in relations:
            desc = rel.relation.description
            desc = f" ({sanitize_line(desc)})" if desc else ""
            target = sanitize_line(rel.target.name)
            lines.append(f"- {rel.relation.relation_type}: {target}{desc}")
    return "\n".join(lines)


def build_entity_context(
    entity: Entity,
    facts: Sequence[Fact],
    relations: Sequence[RelatedEntity],
    *,
    now: datetime,
    config: SemanticConfig,
    max_facts: int,
) -> EntityContext:
    """An :class:`EntityContext`: current, confident, non-stale facts, most confident first."""
    usable = [
        f
        for f in facts
        if f.is_current
        and f.confidence >= config.min_confidence
        and not f.is_stale(now, config.stale_after_days)
    ]
    usable.sort(key=lambda f: (f.confidence, f.last_confirmed), reverse=True)
    kept = usable[: max(0, max_facts)]
    return EntityContext(
        entity=entity,
        facts=kept,
        relations=list(relations),
        omitted=len(facts) - len(kept),
        text=format_entity_context(entity, kept, relations),
    )


def merge_search_hits(
    fact_items: Sequence[Any], entity_items: Sequence[Any], top_k: int
) -> list[SemanticSearchHit]:
    """Merge fact and entity hits into one list by score (unscored last)."""
    hits = [
        SemanticSearchHit("fact", item.score, fact.entity_id, fact.content, fact=fact)
        for item in fact_items
        if (fact := parse_one(item, Fact)) is not None
    ]
    hits += [
        SemanticSearchHit("entity", item.score, entity.entity_id, entity.search_text, entity=entity)
        for item in entity_items
        if (entity := parse_one(item, Entity)) is not None
    ]
    hits.sort(key=lambda h: (h.score is not None, h.score or 0.0), reverse=True)
    return hits[:top_k]
