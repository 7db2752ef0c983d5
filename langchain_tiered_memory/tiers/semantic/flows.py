"""The semantic tier's operations as I/O-free plans, run by a sync or an async driver.

Each flow is a :data:`~langchain_tiered_memory.tiers.common.records.Plan`: it yields
store operations and calls (the judge, the extractor, a slot lock), so the sync and
async methods of ``SemanticMemory`` share every line of logic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeAlias, TypeVar

from langgraph.store.base import GetOp, PutOp, SearchItem, SearchOp

from langchain_tiered_memory.errors import InvalidInputError
from langchain_tiered_memory.text import cap_query, check_text, check_top_k
from langchain_tiered_memory.tiers.common.records import Call, Plan, StoreOps, search_all
from langchain_tiered_memory.tiers.common.scope import MemoryScope, normalize_id
from langchain_tiered_memory.tiers.common.slot_lock import SlotLock, slot_lock
from langchain_tiered_memory.tiers.semantic.consistency import (
    ConsistencyJudge,
    HeuristicConsistencyJudge,
    Judgement,
)
from langchain_tiered_memory.tiers.semantic.extraction import (
    EntityFactExtractor,
    ExtractionResult,
    resolve_entity_id,
)
from langchain_tiered_memory.tiers.semantic.models import (
    Entity,
    Fact,
    Relation,
    SemanticConfig,
    fact_to_value,
    normalize_attribute,
)
from langchain_tiered_memory.tiers.semantic.results import (
    EntityContext,
    FactWriteResult,
    RelatedEntity,
    RememberResult,
    SemanticSearchHit,
    WriteOutcome,
)
from langchain_tiered_memory.tiers.semantic.rules import (
    FactRequest,
    as_candidate,
    build_entity_context,
    end_extra_current,
    make_draft,
    merge_search_hits,
    parse_one,
    parse_records,
    promote,
    reinforce,
    select_near_duplicates,
    should_supersede,
    supersede,
)

__all__ = ["Flow", "FlowContext"]

T = TypeVar("T")

Flow: TypeAlias = Plan[T]


@dataclass(frozen=True)
class FlowContext:
    """Where, when and with what a flow runs: the scope, settings, ``now``, judge, extractor.

    ``store`` is the (unwrapped) store whose slot locks writes take; a flow holds at
    most one, from reading the slot to writing its decision (:meth:`hold`).
    """

    scope: MemoryScope
    config: SemanticConfig
    now: datetime
    judge: ConsistencyJudge = field(default_factory=HeuristicConsistencyJudge)
    extractor: EntityFactExtractor | None = None
    store: object = None
    held: list[SlotLock] = field(default_factory=list)

    @property
    def entities_ns(self) -> tuple[str, ...]:
        """Namespace of entity records."""
        return self.scope.namespace("semantic", "entities")

    @property
    def facts_ns(self) -> tuple[str, ...]:
        """Namespace of fact records."""
        return self.scope.namespace("semantic", "facts")

    @property
    def relations_ns(self) -> tuple[str, ...]:
        """Namespace of relation records."""
        return self.scope.namespace("semantic", "relations")

    def put_fact(self, fact: Fact) -> PutOp:
        """The write of one fact (its content is embedded)."""
        return PutOp(self.facts_ns, fact.fact_id, fact_to_value(fact), index=["content"])

    def put_entity(self, entity: Entity) -> PutOp:
        """The write of one entity (name, type and aliases are embedded)."""
        value = {**entity.model_dump(mode="json"), "search_text": entity.search_text}
        return PutOp(self.entities_ns, entity.entity_id, value, index=["search_text"])

    def scan(self, namespace: tuple[str, ...], filter: dict[str, Any]) -> Flow[list[SearchItem]]:
        """Every item under ``namespace`` matching ``filter``, in pages of ``config.page_size``."""
        return search_all(namespace, [filter], page_size=self.config.page_size)

    def judged(self, existing: Fact, new: Fact) -> Call:
        """The consistency judge's call; its result is a :class:`Judgement`."""
        return Call(
            lambda: self.judge.judge(existing, new), lambda: self.judge.ajudge(existing, new)
        )

    def hold(self, entity_id: str, slot_key: str) -> Flow[None]:
        """Take the lock of one fact slot (until :meth:`release`)."""
        lock = slot_lock(self.store, self.facts_ns, entity_id, slot_key)
        yield Call(lock.acquire, lock.aacquire)
        self.held.append(lock)

    def release(self) -> None:
        """Release the slot lock held, if any."""
        while self.held:
            self.held.pop().release()


# ---------------------------------------------------------------- reads


def get_entity(ctx: FlowContext, entity_id: str) -> Flow[Entity | None]:
    """One entity, or ``None``."""
    eid = normalize_id(entity_id, what="entity_id")
    return parse_one((yield StoreOps((GetOp(ctx.entities_ns, eid),)))[0], Entity)


def list_entities(ctx: FlowContext, entity_type: str | None, limit: int) -> Flow[list[Entity]]:
    """Entities of the scope, optionally of one type."""
    filt = {"entity_type": normalize_attribute(entity_type)} if entity_type else {}
    op = SearchOp(ctx.entities_ns, filter=filt or None, limit=max(1, limit))
    return parse_records((yield StoreOps((op,)))[0], Entity)


def get_fact(ctx: FlowContext, fact_id: str) -> Flow[Fact | None]:
    """One fact by id, or ``None``."""
    return parse_one((yield StoreOps((GetOp(ctx.facts_ns, fact_id),)))[0], Fact)


def get_facts(ctx: FlowContext, entity_id: str, as_of: datetime | None) -> Flow[list[Fact]]:
    """The entity's current facts, or those current at ``as_of``."""
    eid = normalize_id(entity_id, what="entity_id")
    filt = {"entity_id": eid} if as_of is not None else {"entity_id": eid, "status": "current"}
    facts = parse_records((yield from ctx.scan(ctx.facts_ns, filt)), Fact)
    facts = [f for f in facts if (f.is_current if as_of is None else f.is_current_at(as_of))]
    return sorted(facts, key=lambda f: (f.attribute or "~", f.valid_from or f.first_observed))


PROFILE_CANDIDATES = 200
"""Current facts an entity context reads at most (it keeps the best ``max_facts``)."""


def critical_facts(
    ctx: FlowContext,
    entity_id: str,
    attributes: Sequence[str],
    include_pinned: bool,
    limit: int,
) -> Flow[list[Fact]]:
    """Current facts of an entity in any of ``attributes`` (or pinned), however old.

    One filtered search per attribute (and for pinned facts), sent in one batch.
    """
    eid = normalize_id(entity_id, what="entity_id")
    base: dict[str, Any] = {"entity_id": eid, "status": "current"}
    filters = [{**base, "attribute": normalize_attribute(a)} for a in attributes]
    if include_pinned:
        filters.append({**base, "pinned": True})
    if not filters or limit < 1:
        return []
    found = yield StoreOps(tuple(SearchOp(ctx.facts_ns, filter=f, limit=limit) for f in filters))
    facts = {f.fact_id: f for items in found for f in parse_records(items, Fact) if f.is_current}
    return list(facts.values())[:limit]


def fact_history(ctx: FlowContext, entity_id: str, attribute: str | None) -> Flow[list[Fact]]:
    """Every fact (all statuses) of the entity, or of one attribute, oldest first."""
    filt: dict[str, Any] = {"entity_id": normalize_id(entity_id, what="entity_id")}
    if attribute is not None:
        filt["attribute"] = normalize_attribute(attribute)
    facts = parse_records((yield from ctx.scan(ctx.facts_ns, filt)), Fact)
    return sorted(facts, key=lambda f: (f.valid_from or f.first_observed, f.first_observed))


def relations_of(ctx: FlowContext, entity_id: str) -> Flow[list[RelatedEntity]]:
    """Outgoing relations of an entity with their (existing) targets."""
    eid = normalize_id(entity_id, what="entity_id")
    items = yield from ctx.scan(ctx.relations_ns, {"source_id": eid})
    relations = parse_records(items, Relation)
    if not relations:
        return []
    found = yield StoreOps(tuple(GetOp(ctx.entities_ns, r.target_id) for r in relations))
    # A relation whose target is gone is left out.
    targets = [parse_one(i, Entity) for i in found]
    return [RelatedEntity(r, t) for r, t in zip(relations, targets, strict=True) if t is not None]


def entity_context(ctx: FlowContext, entity_id: str, max_facts: int) -> Flow[EntityContext]:
    """What to tell a model about an entity.

    Its current facts come from one bounded search, not a scan: any profile size costs
    alike (stores that order filter-only searches by update time return the most recently
    confirmed).
    """
    entity = yield from get_entity(ctx, entity_id)
    if entity is None:
        return EntityContext(entity=None)
    filt = {"entity_id": entity.entity_id, "status": "current"}
    limit = max(PROFILE_CANDIDATES, 4 * max_facts)
    items = (yield StoreOps((SearchOp(ctx.facts_ns, filter=filt, limit=limit),)))[0]
    facts = [f for f in parse_records(items, Fact) if f.is_current]
    relations = yield from relations_of(ctx, entity.entity_id)
    return build_entity_context(
        entity, facts, relations, now=ctx.now, config=ctx.config, max_facts=max_facts
    )


def search(
    ctx: FlowContext, query: str, entity_type: str | None, top_k: int
) -> Flow[list[SemanticSearchHit]]:
    """Current facts and entities ranked by relevance to ``query``.

    Only the first :data:`~langchain_tiered_memory.text.MAX_QUERY_CHARS` characters are used.
    """
    query, _ = cap_query(check_text(query, "query"))
    check_top_k(top_k)
    etype = {"entity_type": normalize_attribute(entity_type)} if entity_type else {}
    facts, entities = yield StoreOps(
        (
            SearchOp(ctx.facts_ns, filter={"status": "current", **etype}, limit=top_k, query=query),
            SearchOp(ctx.entities_ns, filter=etype or None, limit=top_k, query=query),
        )
    )
    return merge_search_hits(facts, entities, top_k)


# ---------------------------------------------------------------- writes


def ensure_entity(
    ctx: FlowContext, entity_id: str, entity_type: str, name: str | None = None
) -> Flow[tuple[Entity, list[PutOp]]]:
    """The entity, plus the write that creates it when it does not exist yet."""
    existing = yield from get_entity(ctx, entity_id)
    if existing is not None:
        return existing, []
    entity = Entity(
        entity_id=entity_id,
        entity_type=entity_type,
        name=name or " ".join(entity_id.split()),
        created_at=ctx.now,
        updated_at=ctx.now,
    )
    return entity, [ctx.put_entity(entity)]


def upsert_entity(
    ctx: FlowContext,
    entity_id: str,
    entity_type: str | None,
    name: str | None,
    aliases: Sequence[str],
) -> Flow[Entity]:
    """Create an entity or update its type, name and aliases."""
    existing = yield from get_entity(ctx, entity_id)
    if existing is None:
        base: dict[str, Any] = {
            "entity_id": entity_id,
            "entity_type": entity_type or "user",
            "name": name or " ".join(str(entity_id).split()),
            "aliases": list(aliases),
            "created_at": ctx.now,
        }
    else:
        base = existing.model_dump()
        base["aliases"] = list(dict.fromkeys([*existing.aliases, *aliases]))
        if entity_type:
            base["entity_type"] = entity_type
        if name:
            base["name"] = name
    try:
        entity = Entity.model_validate({**base, "updated_at": ctx.now})
    except ValueError as exc:
        raise InvalidInputError(f"invalid entity {entity_id!r}: {exc}") from exc
    yield StoreOps((ctx.put_entity(entity),))
    return entity


def add_relation(
    ctx: FlowContext,
    source_id: str,
    relation_type: str,
    target_id: str,
    description: str,
    create_missing: tuple[tuple[str, str], tuple[str, str]] | None = None,
) -> Flow[Relation]:
    """Store a relation (one per source, type and target; restating updates it).

    Both ends must exist, unless ``create_missing`` gives their ``(type, name)`` to create them.

    Raises:
        InvalidInputError: An end of the relation does not exist (nothing stored).
    """
    relation = Relation(
        source_id=normalize_id(source_id, what="source_id"),
        relation_type=normalize_attribute(relation_type),
        target_id=normalize_id(target_id, what="target_id"),
        description=" ".join(str(description).split()),
        created_at=ctx.now,
    )
    writes: list[PutOp] = []
    ends = ((relation.source_id, "source"), (relation.target_id, "target"))
    for i, (eid, end) in enumerate(ends):
        if create_missing is not None:
            etype, name = create_missing[i]
            _, puts = yield from ensure_entity(ctx, eid, etype, name)
            writes.extend(puts)
        elif (yield from get_entity(ctx, eid)) is None:
            raise InvalidInputError(
                f"relation {end} entity {eid!r} does not exist in this scope: "
                "create it first with upsert_entity() or store_fact()"
            )
    value = relation.model_dump(mode="json")
    yield StoreOps((*writes, PutOp(ctx.relations_ns, relation.key, value, index=False)))
    return relation


@dataclass
class _Decision:
    outcome: WriteOutcome
    fact: Fact
    previous: Fact | None = None
    writes: list[Fact] = field(default_factory=list)
    judgement: Judgement | None = None


def _contradiction(
    ctx: FlowContext, existing: Fact, draft: Fact, judgement: Judgement | None
) -> _Decision:
    if should_supersede(existing, draft, margin=ctx.config.supersede_margin):
        ended, new = supersede(existing, draft, ctx.now)
        return _Decision("superseded", new, ended, [ended, new], judgement)
    counted, candidate = as_candidate(existing, draft)
    return _Decision("candidate", candidate, counted, [counted, candidate], judgement)


def _reinforced(
    ctx: FlowContext, existing: Fact, draft: Fact, judgement: Judgement, confirmed: set[str]
) -> _Decision:
    # Confirmed by the other write path, or by the same source episode again (a replayed
    # write): one confirmation, no extra confidence.
    episodes = set(draft.source_episode_ids)
    bump = existing.fact_id not in confirmed and not (
        episodes and episodes <= set(existing.source_episode_ids)
    )
    fact = reinforce(existing, draft, ctx.now, ctx.config.reinforce_step, bump=bump)
    return _Decision("reinforced", fact, None, [fact], judgement)


def _decide_in_slot(ctx: FlowContext, draft: Fact, confirmed: set[str]) -> Flow[_Decision | None]:
    """Compare with the facts in the draft's slot; ``None`` if the slot is empty."""
    filt = {"entity_id": draft.entity_id, "slot_key": draft.slot_key}
    facts = parse_records((yield from ctx.scan(ctx.facts_ns, filt)), Fact)
    current = sorted((f for f in facts if f.is_current), key=lambda f: f.valid_from or ctx.now)
    existing = current[-1] if current else None
    decision = yield from _decide_against(ctx, draft, confirmed, existing, facts)
    if decision is not None:
        decision.writes = [*end_extra_current(current), *decision.writes]
    return decision


def _decide_against(
    ctx: FlowContext, draft: Fact, confirmed: set[str], existing: Fact | None, facts: list[Fact]
) -> Flow[_Decision | None]:
    candidates = sorted(
        (f for f in facts if f.status == "candidate"), key=lambda f: f.last_confirmed, reverse=True
    )
    judgement: Judgement | None = None
    if existing is not None:
        judgement = yield ctx.judged(existing, draft)
        if judgement.relation == "same":
            return _reinforced(ctx, existing, draft, judgement, confirmed)
    for candidate in candidates[: ctx.config.max_judged]:
        verdict: Judgement = yield ctx.judged(candidate, draft)
        if verdict.relation != "same":
            continue
        bump = candidate.fact_id not in confirmed
        bumped = reinforce(candidate, draft, ctx.now, ctx.config.reinforce_step, bump=bump)
        if existing is None or should_supersede(
            existing, bumped, margin=ctx.config.supersede_margin
        ):
            ended, promoted = promote(bumped, existing, ctx.now)
            writes = [promoted] if ended is None else [ended, promoted]
            return _Decision("superseded", promoted, ended, writes, verdict)
        counted = existing.model_copy(
            update={"contradiction_count": existing.contradiction_count + 1}
        )
        return _Decision("candidate", bumped, counted, [counted, bumped], verdict)
    if existing is None:
        return None
    # Within a slot anything but "same" is a different value: a change over time.
    return _contradiction(ctx, existing, draft, judgement)


def _decide_by_similarity(ctx: FlowContext, draft: Fact, confirmed: set[str]) -> Flow[_Decision]:
    """Compare with near-duplicates found by the store's search; new if none relates."""
    op = SearchOp(
        ctx.facts_ns,
        filter={"entity_id": draft.entity_id, "status": "current"},
        limit=ctx.config.duplicate_candidates,
        query=draft.content,
    )
    items = (yield StoreOps((op,)))[0]
    near = select_near_duplicates(items, ctx.config.duplicate_min_score)
    judged = 0
    for found in near:
        if judged >= ctx.config.max_judged:
            break
        if found.slot_key is not None and draft.slot_key is not None:
            continue  # different slots (same slots were handled by the slot rule)
        existing: Fact | None = found
        if found.slot_key is not None:
            # A decision about a slotted fact is the slot's: lock it, read it again.
            yield from ctx.hold(found.entity_id, found.slot_key)
            existing = yield from get_fact(ctx, found.fact_id)
        if existing is not None and existing.is_current:
            judged += 1
            judgement: Judgement = yield ctx.judged(existing, draft)
            if judgement.relation == "same":
                return _reinforced(ctx, existing, draft, judgement, confirmed)
            if judgement.relation == "contradicts":
                return _contradiction(ctx, existing, draft, judgement)
        if found.slot_key is not None:
            ctx.release()  # the lock of this fact's slot, taken above (the draft has none)
    return _Decision("new", draft, None, [draft])


def store_fact(
    ctx: FlowContext,
    request: FactRequest,
    *,
    entity_name: str | None = None,
    confirmed: set[str] | None = None,
) -> Flow[FactWriteResult]:
    """Store, reinforce, supersede or keep as candidate (see :mod:`.rules`).

    Ids in ``confirmed`` (confirmed by the other write path) gain no extra confidence.
    """
    draft = make_draft(request, config=ctx.config, now=ctx.now)
    entity, entity_writes = yield from ensure_entity(
        ctx, draft.entity_id, request.entity_type, entity_name or request.entity_id
    )
    if entity.entity_type != draft.entity_type:
        draft = draft.model_copy(update={"entity_type": entity.entity_type})
    seen = confirmed if confirmed is not None else set()
    decision = None
    try:
        if draft.slot_key is not None:
            # Read, decide and write the slot under its lock: one current value per slot.
            yield from ctx.hold(draft.entity_id, draft.slot_key)
            decision = yield from _decide_in_slot(ctx, draft, seen)
        if decision is None:
            decision = yield from _decide_by_similarity(ctx, draft, seen)
        yield StoreOps((*entity_writes, *(ctx.put_fact(f) for f in decision.writes)))
    finally:
        ctx.release()
    seen.add(decision.fact.fact_id)
    judgement = decision.judgement
    return FactWriteResult(
        outcome=decision.outcome,
        fact=decision.fact,
        previous=decision.previous,
        judged_by=judgement.judged_by if judgement else None,
        warnings=(judgement.error,) if judgement and judgement.error else (),
    )


def delete_fact(ctx: FlowContext, fact_id: str) -> Flow[bool]:
    """Remove a fact record entirely (for forgetting); ``False`` if it did not exist."""
    existing = yield from get_fact(ctx, fact_id)
    if existing is None:
        return False
    yield StoreOps((PutOp(ctx.facts_ns, fact_id, None),))
    return True


def pin_fact(ctx: FlowContext, fact_id: str, pinned: bool) -> Flow[Fact]:
    """Set whether a stored fact is pinned (one read; one write only if it changes).

    Raises:
        InvalidInputError: ``pinned`` is not a bool, or no fact has this id in the scope.
    """
    if not isinstance(pinned, bool):
        raise InvalidInputError(f"pinned is {pinned!r}: pass True to pin or False to unpin")
    existing = yield from get_fact(ctx, fact_id)
    try:
        if existing is not None and existing.slot_key is not None:
            # Rewriting a slotted fact must not undo a supersession made meanwhile.
            yield from ctx.hold(existing.entity_id, existing.slot_key)
            existing = yield from get_fact(ctx, fact_id)
        if existing is None:
            raise InvalidInputError(
                f"no fact with id {fact_id!r} in this scope: pass a fact_id from store_fact(), "
                "get_facts() or semantic_search() of the same user"
            )
        if existing.pinned != pinned:
            existing = existing.model_copy(update={"pinned": pinned})
            yield StoreOps((ctx.put_fact(existing),))
    finally:
        ctx.release()
    return existing


def remember_from_text(
    ctx: FlowContext,
    text: str,
    *,
    heuristic: ExtractionResult,
    subject_id: str,
    source_episode_id: str | None,
) -> Flow[RememberResult]:
    """The cost-tiered write path: the regex result first, then the LLM's, if any."""
    subject = normalize_id(subject_id, what="subject_id")
    result = RememberResult(paths=["heuristic"])
    seen: set[str] = set()  # facts confirmed by this text already

    def store(extraction: ExtractionResult, known: Sequence[Entity]) -> Flow[None]:
        """Store what ``extraction`` found into ``result`` (rejected items become its errors)."""
        for found in extraction.output.entities:
            try:
                eid = resolve_entity_id(found.entity_name, known, subject)
            except InvalidInputError as exc:
                result.errors.append(f"skipped extracted entity {found.entity_name!r}: {exc}")
                continue
            speaker = eid == subject
            etype, name = ("user", None) if speaker else (found.entity_type, found.entity_name)
            for item in found.facts:
                try:
                    request = FactRequest(
                        eid,
                        item.content,
                        item.attribute,
                        item.value,
                        item.confidence,
                        source_episode_id,
                        etype,
                        extraction.extractor,
                    )
                    write = yield from store_fact(ctx, request, entity_name=name, confirmed=seen)
                    result.writes.append(write)
                except InvalidInputError as exc:
                    result.errors.append(f"skipped extracted fact {item.content!r}: {exc}")
            for rel in found.relations:
                try:
                    target = resolve_entity_id(rel.target, known, subject)
                    target_type = "user" if target == subject else rel.target_type
                    relation = yield from add_relation(
                        ctx,
                        eid,
                        rel.relation_type,
                        target,
                        rel.description,
                        create_missing=((etype, found.entity_name), (target_type, rel.target)),
                    )
                    result.relations.append(relation)
                except InvalidInputError as exc:
                    result.errors.append(f"skipped extracted relation {rel.relation_type!r}: {exc}")

    yield from store(heuristic, ())
    llm = ctx.extractor
    if llm is None:
        return result
    known = yield from list_entities(ctx, None, ctx.config.max_known_entities)
    extraction: ExtractionResult = yield Call(
        lambda: llm.extract(text, known), lambda: llm.aextract(text, known)
    )
    result.paths.append("llm")
    if extraction.error is not None:
        result.errors.append(extraction.error)
        return result
    yield from store(extraction, known)
    return result
