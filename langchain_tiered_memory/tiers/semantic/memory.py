"""Semantic memory: entities and facts that stay true, with provenance, confidence and time.

Records live under the scope's namespaces ``(..., "semantic", "entities" | "facts" |
"relations")``; every method runs a plan of :mod:`.flows`, so sync and async twins share
their logic. The update rule, including one current value per slot, is in :mod:`.rules`;
retrievals count accesses in process memory (:mod:`~langchain_tiered_memory.tiers.common.access`).

Examples:
    >>> from langgraph.store.memory import InMemoryStore
    >>> from langchain_tiered_memory.testing.fakes import FakeClock, HashingEmbeddings
    >>> from langchain_tiered_memory.tiers.common.scope import MemoryScope
    >>> store = InMemoryStore(index={"dims": 384, "embed": HashingEmbeddings(),
    ...                              "fields": ["content"]})
    >>> clock = FakeClock()
    >>> memory = SemanticMemory(store, MemoryScope("alice"), clock=clock)
    >>> memory.store_fact("alice", "Lives in Paris", attribute="lives_in", value="Paris").outcome
    'new'
    >>> clock.advance(days=40)
    >>> memory.store_fact("alice", "Lives in Lyon", attribute="lives_in", value="Lyon").outcome
    'superseded'
    >>> [f.value for f in memory.get_facts("alice")]
    ['Lyon']
    >>> from datetime import timedelta
    >>> [f.value for f in memory.get_facts("alice", as_of=clock() - timedelta(days=1))]
    ['Paris']
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TypeVar

from langchain_core.language_models import BaseChatModel
from langgraph.store.base import BaseStore

from langchain_tiered_memory.stores.serialized import unwrap
from langchain_tiered_memory.tiers.common.access import CountsAccess, RecordAccess
from langchain_tiered_memory.tiers.common.args import tier_args
from langchain_tiered_memory.tiers.common.records import Plan, arun_plan, run_plan
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.tiers.semantic import flows
from langchain_tiered_memory.tiers.semantic.consistency import (
    ConsistencyJudge,
    HeuristicConsistencyJudge,
    LLMConsistencyJudge,
)
from langchain_tiered_memory.tiers.semantic.extraction import (
    EntityFactExtractor,
    HeuristicFactExtractor,
)
from langchain_tiered_memory.tiers.semantic.models import (
    Entity,
    Fact,
    Relation,
    SemanticConfig,
)
from langchain_tiered_memory.tiers.semantic.results import (
    EntityContext,
    FactWriteResult,
    RelatedEntity,
    RememberResult,
    SemanticSearchHit,
)
from langchain_tiered_memory.tiers.semantic.rules import FactRequest, validate_remember
from langchain_tiered_memory.types import ensure_aware

__all__ = ["SemanticMemory"]

T = TypeVar("T")
U = TypeVar("U")
F = TypeVar("F", Fact, Fact | None)
R = TypeVar("R", EntityContext, list[SemanticSearchHit])


def _then(flow: Plan[T], after: Callable[[T], Plan[U]]) -> Plan[U]:
    return (yield from after((yield from flow)))


class SemanticMemory(CountsAccess):
    """Entity-centric semantic memory over any LangGraph ``BaseStore``.

    Args:
        store: Where records live; with a vector index (``index=``), near-duplicates
            and ``semantic_search`` work by meaning, else among a few recent facts.
        scope: Whose memory this is (facts never cross scopes).
        llm: Optional chat model that judges consistency and extracts facts in
            :meth:`remember_from_text` (else the heuristics), each call limited
            to ``config.llm_timeout`` seconds.
        clock: Returns "now" (aware); defaults to UTC wall time.
        config: Thresholds and policies (:class:`SemanticConfig`).
        judge: Overrides the consistency judge chosen from ``llm``.
        extractor: Overrides the LLM extractor chosen from ``llm``.

    Examples:
        >>> from langgraph.store.memory import InMemoryStore
        >>> from langchain_tiered_memory.tiers.common.scope import MemoryScope
        >>> memory = SemanticMemory(InMemoryStore(), MemoryScope("bob"))
        >>> memory.remember_from_text("I'm allergic to shellfish.").stored[0].content
        'Allergic to shellfish'
        >>> print(memory.retrieve_entity_context("bob").text)
        Entity: bob (user)
        Known facts:
        - Allergic to shellfish
    """

    def __init__(
        self,
        store: BaseStore,
        scope: MemoryScope,
        *,
        llm: BaseChatModel | None = None,
        clock: Callable[[], datetime] | None = None,
        config: SemanticConfig | None = None,
        judge: ConsistencyJudge | None = None,
        extractor: EntityFactExtractor | None = None,
    ) -> None:
        args = tier_args(store, scope, clock)
        self.store = args.store
        self.scope = args.scope
        self.llm = llm
        self.config = config or SemanticConfig()
        self.clock: Callable[[], datetime] = args.clock
        timeout = self.config.llm_timeout
        self.judge: ConsistencyJudge = judge or HeuristicConsistencyJudge()
        self.extractor: EntityFactExtractor | None = extractor
        if llm is not None:
            self.judge = judge or LLMConsistencyJudge(llm, timeout=timeout)
            self.extractor = extractor or EntityFactExtractor(llm, timeout=timeout)
        self.heuristic_extractor = HeuristicFactExtractor(
            confidence=self.config.heuristic_confidence
        )
        self.extraction_errors: deque[tuple[datetime, str]] = deque(maxlen=100)
        """Recent errors of :meth:`remember_from_text` (time, message), newest last."""
        self.access = RecordAccess(
            self.store,
            self.scope,
            self.clock,
            tier="semantic",
            id_field="fact_id",
            records=self.scope.namespace("semantic", "facts"),
        )

    # ------------------------------------------------------------ drivers

    def _ctx(self) -> flows.FlowContext:
        now = ensure_aware(self.clock())
        return flows.FlowContext(
            self.scope, self.config, now, self.judge, self.extractor, unwrap(self.store)
        )

    def _run(self, flow: flows.Flow[T]) -> T:
        try:
            return run_plan(self.store, flow)
        finally:
            flow.close()  # a flow stopped by an error releases the slot lock it holds

    async def _arun(self, flow: flows.Flow[T]) -> T:
        try:
            return await arun_plan(self.store, flow)
        finally:
            flow.close()

    # ------------------------------------------------------------ access plans

    def _fill(self, facts: list[Fact]) -> Plan[list[Fact]]:
        """``facts`` with their access statistics (as read, if access is not tracked)."""
        if not facts or not self.config.track_access:
            return facts
        counts = yield from self.access.counts_plan([f.fact_id for f in facts])
        return self.access.with_counts(facts, counts)

    def _fill_one(self, fact: F) -> Plan[F]:
        if fact is None:
            return None
        (filled,) = yield from self._fill([fact])
        return filled

    def _touched(self, result: R) -> Plan[R]:
        """``result``, one access of each of its facts counted (in memory, no store I/O)."""
        if self.config.track_access:
            facts = result.facts if isinstance(result, EntityContext) else [h.fact for h in result]
            self.access.touch([f.fact_id for f in facts if f is not None])
        return result
        yield  # a plan without store I/O

    def _drop_access(self, fact_id: str, deleted: bool) -> Plan[bool]:
        if deleted:
            yield from self.access.delete_plan(fact_id)
        return deleted

    def _remember_flow(
        self, text: str, source_episode_id: str | None, subject_id: str | None
    ) -> flows.Flow[RememberResult]:
        checked = validate_remember(text, source_episode_id)
        return flows.remember_from_text(
            self._ctx(),
            checked,
            heuristic=self.heuristic_extractor.extract(checked),
            subject_id=subject_id or self.scope.user_id,
            source_episode_id=source_episode_id,
        )

    def _record(self, result: RememberResult) -> RememberResult:
        now = ensure_aware(self.clock())
        self.extraction_errors.extend((now, e) for e in result.errors)
        return result

    # ------------------------------------------------------------ entities

    def upsert_entity(
        self,
        entity_id: str,
        *,
        entity_type: str | None = None,
        name: str | None = None,
        aliases: Sequence[str] = (),
    ) -> Entity:
        """Create an entity (type defaults to ``"user"``) or update type, name, aliases."""
        return self._run(flows.upsert_entity(self._ctx(), entity_id, entity_type, name, aliases))

    async def aupsert_entity(
        self,
        entity_id: str,
        *,
        entity_type: str | None = None,
        name: str | None = None,
        aliases: Sequence[str] = (),
    ) -> Entity:
        """Async twin of :meth:`upsert_entity`."""
        flow = flows.upsert_entity(self._ctx(), entity_id, entity_type, name, aliases)
        return await self._arun(flow)

    def get_entity(self, entity_id: str) -> Entity | None:
        """The entity with this (normalised) id, or ``None``."""
        return self._run(flows.get_entity(self._ctx(), entity_id))

    async def aget_entity(self, entity_id: str) -> Entity | None:
        """Async twin of :meth:`get_entity`."""
        return await self._arun(flows.get_entity(self._ctx(), entity_id))

    def list_entities(self, *, entity_type: str | None = None, limit: int = 100) -> list[Entity]:
        """Entities of this scope, optionally of one type."""
        return self._run(flows.list_entities(self._ctx(), entity_type, limit))

    async def alist_entities(
        self, *, entity_type: str | None = None, limit: int = 100
    ) -> list[Entity]:
        """Async twin of :meth:`list_entities`."""
        return await self._arun(flows.list_entities(self._ctx(), entity_type, limit))

    def add_relation(
        self, source_id: str, relation_type: str, target_id: str, *, description: str = ""
    ) -> Relation:
        """Relate two existing entities.

        Raises:
            InvalidInputError: Either entity does not exist (nothing is stored).
        """
        flow = flows.add_relation(self._ctx(), source_id, relation_type, target_id, description)
        return self._run(flow)

    async def aadd_relation(
        self, source_id: str, relation_type: str, target_id: str, *, description: str = ""
    ) -> Relation:
        """Async twin of :meth:`add_relation`."""
        flow = flows.add_relation(self._ctx(), source_id, relation_type, target_id, description)
        return await self._arun(flow)

    def get_relations(self, entity_id: str) -> list[RelatedEntity]:
        """Outgoing relations of an entity, with their target entities."""
        return self._run(flows.relations_of(self._ctx(), entity_id))

    async def aget_relations(self, entity_id: str) -> list[RelatedEntity]:
        """Async twin of :meth:`get_relations`."""
        return await self._arun(flows.relations_of(self._ctx(), entity_id))

    # ------------------------------------------------------------ facts

    def store_fact(
        self,
        entity_id: str,
        content: str,
        *,
        attribute: str | None = None,
        value: str | None = None,
        confidence: float = 0.8,
        source_episode_id: str | None = None,
        entity_type: str = "user",
        source: str = "manual",
    ) -> FactWriteResult:
        """Store a fact, or reinforce, supersede or contradict what is known (see :mod:`.rules`).

        The entity is created (with ``entity_type``) if it does not exist.

        Raises:
            InvalidInputError: Empty content, confidence outside [0, 1] or NaN,
                a bad id or attribute; nothing is stored.
        """
        request = FactRequest(
            entity_id, content, attribute, value, confidence, source_episode_id, entity_type, source
        )
        return self._run(flows.store_fact(self._ctx(), request))

    async def astore_fact(
        self,
        entity_id: str,
        content: str,
        *,
        attribute: str | None = None,
        value: str | None = None,
        confidence: float = 0.8,
        source_episode_id: str | None = None,
        entity_type: str = "user",
        source: str = "manual",
    ) -> FactWriteResult:
        """Async twin of :meth:`store_fact`."""
        request = FactRequest(
            entity_id, content, attribute, value, confidence, source_episode_id, entity_type, source
        )
        return await self._arun(flows.store_fact(self._ctx(), request))

    def get_fact(self, fact_id: str) -> Fact | None:
        """One fact by id (any status, with its access statistics), or ``None``."""
        return self._run(_then(flows.get_fact(self._ctx(), fact_id), self._fill_one))

    async def aget_fact(self, fact_id: str) -> Fact | None:
        """Async twin of :meth:`get_fact`."""
        return await self._arun(_then(flows.get_fact(self._ctx(), fact_id), self._fill_one))

    def get_facts(self, entity_id: str, *, as_of: datetime | None = None) -> list[Fact]:
        """The entity's current facts, or the facts that were current at ``as_of``.

        Each carries its access statistics (``access_count``, ``last_accessed``).
        """
        return self._run(_then(flows.get_facts(self._ctx(), entity_id, as_of), self._fill))

    async def aget_facts(self, entity_id: str, *, as_of: datetime | None = None) -> list[Fact]:
        """Async twin of :meth:`get_facts`."""
        return await self._arun(_then(flows.get_facts(self._ctx(), entity_id, as_of), self._fill))

    def fact_history(self, entity_id: str, attribute: str | None = None) -> list[Fact]:
        """All facts (current, superseded, candidate) of an entity or attribute, oldest first.

        Each carries its access statistics (``access_count``, ``last_accessed``).
        """
        return self._run(_then(flows.fact_history(self._ctx(), entity_id, attribute), self._fill))

    async def afact_history(self, entity_id: str, attribute: str | None = None) -> list[Fact]:
        """Async twin of :meth:`fact_history`."""
        flow = flows.fact_history(self._ctx(), entity_id, attribute)
        return await self._arun(_then(flow, self._fill))

    def delete_fact(self, fact_id: str) -> bool:
        """Remove a fact, its history entry and its access statistics; ``False`` if absent."""
        flow = flows.delete_fact(self._ctx(), fact_id)
        return self._run(_then(flow, lambda deleted: self._drop_access(fact_id, deleted)))

    async def adelete_fact(self, fact_id: str) -> bool:
        """Async twin of :meth:`delete_fact`."""
        flow = flows.delete_fact(self._ctx(), fact_id)
        return await self._arun(_then(flow, lambda deleted: self._drop_access(fact_id, deleted)))

    def pin_fact(self, fact_id: str, pinned: bool = True) -> Fact:
        """Pin a stored fact (``pinned=False``: unpin it); pinned facts are never forgotten.

        Consolidation neither forgets them (by its rules or the per-user size cap)
        nor merges them away as duplicates. Works on a fact of any status.

        Args:
            fact_id: The fact's id (``Fact.fact_id``).
            pinned: ``True`` to pin, ``False`` to unpin.

        Returns:
            The fact as stored now, with its access statistics.

        Raises:
            InvalidInputError: No fact has this id in this scope, or ``pinned`` is not a bool.
        """
        return self._run(_then(flows.pin_fact(self._ctx(), fact_id, pinned), self._fill_one))

    async def apin_fact(self, fact_id: str, pinned: bool = True) -> Fact:
        """Async twin of :meth:`pin_fact`."""
        return await self._arun(_then(flows.pin_fact(self._ctx(), fact_id, pinned), self._fill_one))

    # ------------------------------------------------------------ retrieval

    def retrieve_entity_context(self, entity_id: str, max_facts: int = 20) -> EntityContext:
        """Current, confident, non-stale facts and relations of an entity, with text.

        Counts one access of each fact (in memory, see :meth:`flush_access`); the
        facts carry ``access_count=0``: read the counts with :meth:`get_facts`.
        """
        flow = flows.entity_context(self._ctx(), entity_id, max_facts)
        return self._run(_then(flow, self._touched))

    async def aretrieve_entity_context(self, entity_id: str, max_facts: int = 20) -> EntityContext:
        """Async twin of :meth:`retrieve_entity_context`."""
        flow = flows.entity_context(self._ctx(), entity_id, max_facts)
        return await self._arun(_then(flow, self._touched))

    def critical_facts(
        self,
        entity_id: str,
        attributes: Sequence[str],
        *,
        include_pinned: bool = True,
        limit: int = 10,
    ) -> list[Fact]:
        """Current facts of ``entity_id`` in any of ``attributes`` (or pinned), however old.

        The context assembler shows them whatever the query (health, hard constraints).
        """
        return self._run(
            flows.critical_facts(self._ctx(), entity_id, attributes, include_pinned, limit)
        )

    async def acritical_facts(
        self,
        entity_id: str,
        attributes: Sequence[str],
        *,
        include_pinned: bool = True,
        limit: int = 10,
    ) -> list[Fact]:
        """Async twin of :meth:`critical_facts`."""
        return await self._arun(
            flows.critical_facts(self._ctx(), entity_id, attributes, include_pinned, limit)
        )

    def semantic_search(
        self, query: str, *, entity_type: str | None = None, top_k: int = 10
    ) -> list[SemanticSearchHit]:
        """Current facts and entities of this scope, ranked by relevance to ``query``.

        Counts one access of each returned fact (in memory; see :meth:`flush_access`).
        The facts carry ``access_count=0``: read the counts with :meth:`get_fact`.
        """
        flow = flows.search(self._ctx(), query, entity_type, top_k)
        return self._run(_then(flow, self._touched))

    async def asemantic_search(
        self, query: str, *, entity_type: str | None = None, top_k: int = 10
    ) -> list[SemanticSearchHit]:
        """Async twin of :meth:`semantic_search`."""
        flow = flows.search(self._ctx(), query, entity_type, top_k)
        return await self._arun(_then(flow, self._touched))

    # ------------------------------------------------------------ write path

    def remember_from_text(
        self, text: str, source_episode_id: str | None = None, *, subject_id: str | None = None
    ) -> RememberResult:
        """Extract and store facts from what the user said.

        The regex extractor always runs; the LLM extractor too when a model is set.
        Each fact records its path. A failed LLM extraction stores nothing from that
        path: the error is in the result and :attr:`extraction_errors`, never raised.

        Args:
            text: The user's message (first person refers to ``subject_id``).
            source_episode_id: Provenance recorded on every fact written.
            subject_id: The speaker's entity id (default: the scope's user id).

        Raises:
            InvalidInputError: ``text`` is empty, not valid Unicode or longer than
                :data:`~langchain_tiered_memory.text.MAX_TEXT_CHARS` (nothing is stored).
        """
        return self._record(self._run(self._remember_flow(text, source_episode_id, subject_id)))

    async def aremember_from_text(
        self, text: str, source_episode_id: str | None = None, *, subject_id: str | None = None
    ) -> RememberResult:
        """Async twin of :meth:`remember_from_text`."""
        flow = self._remember_flow(text, source_episode_id, subject_id)
        return self._record(await self._arun(flow))
