"""The context assembler: one memory context from every tier, within a token budget.

The steps (ask every tier at once, resolve conflicts, rank, pack) are in
docs/concepts/assembly.md. Tiers are asked in turn instead when the store's reads
do not overlap (``concurrent_reads = False``).

Examples:
    >>> from langgraph.store.memory import InMemoryStore
    >>> from langchain_tiered_memory.tiers.common.scope import MemoryScope
    >>> from langchain_tiered_memory.tiers.semantic.memory import SemanticMemory
    >>> from langchain_tiered_memory.tiers.episodic.memory import EpisodicMemory
    >>> from langchain_tiered_memory.tiers.procedural.memory import ProceduralMemory
    >>> from langchain_tiered_memory.tokens import TokenCounter
    >>> store, scope = InMemoryStore(), MemoryScope("alice")
    >>> semantic = SemanticMemory(store, scope)
    >>> _ = semantic.store_fact("alice", "Allergic to shellfish", confidence=0.95)
    >>> assembler = ContextAssembler(episodic=EpisodicMemory(store, scope), semantic=semantic,
    ...     procedural=ProceduralMemory(store, scope), counter=TokenCounter(), entity_id="alice")
    >>> ctx = assembler.build("Recommend a restaurant", token_budget=500)
    >>> "Allergic to shellfish" in ctx.text and ctx.tokens <= 500
    True
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Literal

from langchain_tiered_memory.assembly import convert
from langchain_tiered_memory.assembly.conflicts import MemoryConflictResolver
from langchain_tiered_memory.assembly.critical import CriticalFactPolicy
from langchain_tiered_memory.assembly.items import MemoryContext
from langchain_tiered_memory.assembly.packing import check_budget, pack_by_utility, pack_items
from langchain_tiered_memory.assembly.utility import rank_items
from langchain_tiered_memory.errors import ConfigurationError, InvalidInputError
from langchain_tiered_memory.stores.abilities import QueryPrefetching, ReadConcurrency
from langchain_tiered_memory.tiers.common.ranking import UtilityConfig
from langchain_tiered_memory.tiers.episodic.memory import EpisodicMemory
from langchain_tiered_memory.tiers.procedural.memory import ProceduralMemory
from langchain_tiered_memory.tiers.semantic.memory import SemanticMemory
from langchain_tiered_memory.tiers.turns.memory import ConversationTurns
from langchain_tiered_memory.tokens import TokenCounter

__all__ = [
    "DEFAULT_RELEVANCE_FLOOR",
    "DEFAULT_SECTION_FLOORS",
    "AssemblyConfig",
    "ContextAssembler",
]

Packing = Literal["utility", "sections"]

DEFAULT_RELEVANCE_FLOOR = 0.2
"""The relevance floor chosen by sweeping it on ``benchmarks/context_quality.py``
(see docs/assembly.md): the lowest floor that keeps distractors out while every
needed memory stays in."""

DEFAULT_SECTION_FLOORS: dict[str, float] = {"conversation": 0.05}
"""Per-section floors: a conversation turn's relevance is the turn tier's calibrated
score when it shares a term with the query, else 0 (see docs/assembly.md)."""

logger = logging.getLogger(__name__)

_EXECUTOR = ThreadPoolExecutor(max_workers=6, thread_name_prefix="tiered-memory-retrieve")


@dataclass(frozen=True)
class AssemblyConfig:
    """How much the assembler asks each tier for.

    Args:
        max_profile_facts: Profile facts of the user entity.
        knowledge_top_k: Query-relevant facts and entities.
        experiences_top_k: Similar past episodes.
        turns_top_k: Past conversation turns (when the assembler has a turn tier).
        strategies_top_k: Applicable strategies.
        min_strategy_confidence: Strategies below this Wilson confidence are left out.
        min_failure_rate: Tools failing at least this often get a warning (a tool
            whose last use failed always does).
        min_trim_tokens: Trim an item that does not fit only if this much room is left.
        packing: ``"utility"`` (one ranking across tiers, packed by utility per
            token, with the relevance floor and critical facts) or ``"sections"``
            (section by section in a fixed order, as a baseline to compare with).
        relevance_floor: Memories whose relevance is below it stay out even when
            budget is left (``"utility"`` packing only; critical facts aside).
        section_floors: A floor per section that replaces ``relevance_floor``
            there. Conversation turns are ranked by the turn tier's own score
            (:attr:`UtilityConfig.tier_scored`), on another scale than lexical
            evidence: a turn that shares a term with the query passes the
            default 0.05, one that shares none has relevance 0 and stays out.
        token_cost_weight: How much a memory's token cost lowers its priority
            (see :func:`~langchain_tiered_memory.assembly.packing.priority`).
        utility: How relevance, importance, recency, confidence and the
            section priors combine into one utility.
        critical: Which facts are critical: always shown, whatever the query.
    """

    max_profile_facts: int = 15
    knowledge_top_k: int = 5
    experiences_top_k: int = 3
    turns_top_k: int = 3
    strategies_top_k: int = 5
    min_strategy_confidence: float = 0.0
    min_failure_rate: float = 0.3
    min_trim_tokens: int = 24
    packing: Packing = "utility"
    relevance_floor: float = DEFAULT_RELEVANCE_FLOOR
    section_floors: Mapping[str, float] = field(
        default_factory=lambda: dict(DEFAULT_SECTION_FLOORS)
    )
    token_cost_weight: float = 0.25
    utility: UtilityConfig = field(default_factory=UtilityConfig)
    critical: CriticalFactPolicy = field(default_factory=CriticalFactPolicy)

    def __post_init__(self) -> None:
        if self.packing not in ("utility", "sections"):
            raise ConfigurationError(
                f"AssemblyConfig.packing is {self.packing!r}: use 'utility' or 'sections'"
            )
        numbers = [
            ("relevance_floor", self.relevance_floor, 1.0),
            ("token_cost_weight", self.token_cost_weight, 100.0),
            *((f"section_floors[{k!r}]", v, 1.0) for k, v in self.section_floors.items()),
        ]
        for name, value, top in numbers:
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not 0 <= value <= top
            ):
                raise ConfigurationError(
                    f"AssemblyConfig.{name} must be a number in [0, {top:g}], got {value!r}"
                )
        for name in (
            "max_profile_facts",
            "knowledge_top_k",
            "experiences_top_k",
            "turns_top_k",
            "strategies_top_k",
            "min_trim_tokens",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigurationError(
                    f"AssemblyConfig.{name} must be an int >= 0, got {value!r}"
                )


class _Task:
    def __init__(self, name: str, tier: object, method: str, *args: Any, **kw: Any) -> None:
        self.name = name
        self.run = partial(getattr(tier, method), *args, **kw)
        self.arun = partial(getattr(tier, "a" + method), *args, **kw)


class ContextAssembler:
    """Builds one user's memory injection for a query under a token budget.

    Args:
        episodic: The user's episodic memory.
        semantic: The user's semantic memory.
        procedural: The user's procedural memory.
        counter: Token counter for every figure.
        entity_id: The user's entity id in semantic memory (their profile).
        config: How much to ask each tier for.
        resolver: Conflict resolver (default: :class:`MemoryConflictResolver`).
        on_error: Called with ``(tier task name, exception)`` when a tier fails.
        turns: The user's conversation turns (:class:`ConversationTurns`); their
            best matches fill the last section, ``"conversation"``.
    """

    def __init__(
        self,
        *,
        episodic: EpisodicMemory,
        semantic: SemanticMemory,
        procedural: ProceduralMemory,
        counter: TokenCounter,
        entity_id: str,
        config: AssemblyConfig | None = None,
        resolver: MemoryConflictResolver | None = None,
        on_error: Callable[[str, BaseException], None] | None = None,
        turns: ConversationTurns | None = None,
    ) -> None:
        self.episodic = episodic
        self.semantic = semantic
        self.procedural = procedural
        self.counter = counter
        self.entity_id = entity_id
        self.config = config or AssemblyConfig()
        self.resolver = resolver or MemoryConflictResolver()
        self.on_error = on_error
        self.turns = turns
        stores = {id(t.store): t.store for t in (episodic, semantic, procedural)}.values()
        self._prefetchers: list[Callable[[str], object]] = [
            s.prefetch_query for s in stores if isinstance(s, QueryPrefetching)
        ]

    def _start(self, query: str, token_budget: int) -> tuple[list[_Task], bool]:
        """Check the input; return the tasks and whether they run at once (one shared embedding)."""
        if not isinstance(query, str):
            raise InvalidInputError(f"query must be a string, got {type(query).__name__}")
        check_budget(token_budget)
        store = self.episodic.store
        overlap = store.concurrent_reads if isinstance(store, ReadConcurrency) else True
        for prefetch in self._prefetchers if overlap else []:
            prefetch(query)
        return self._tasks(query), overlap

    def _tasks(self, query: str) -> list[_Task]:
        c, p, s, e, uid = self.config, self.procedural, self.semantic, self.episodic, self.entity_id
        strategies = {"top_k": c.strategies_top_k, "min_confidence": c.min_strategy_confidence}
        tasks = [
            _Task("warnings", p, "get_all_tool_guidance"),
            _Task("strategies", p, "get_applicable_strategies", query, **strategies),
            _Task("preferences", p, "get_preferences"),
            _Task("profile", s, "retrieve_entity_context", uid, c.max_profile_facts),
            _Task("knowledge", s, "semantic_search", query, top_k=c.knowledge_top_k),
            _Task("experiences", e, "retrieve_similar", query, top_k=c.experiences_top_k),
        ]
        crit = c.critical
        if (
            c.packing == "utility"
            and crit.max_facts > 0
            and (crit.attributes or crit.include_pinned)
        ):
            kw = {"include_pinned": crit.include_pinned, "limit": crit.max_facts}
            tasks.append(_Task("critical", s, "critical_facts", uid, crit.attributes, **kw))
        if self.turns is not None and c.turns_top_k > 0:
            tasks.append(_Task("conversation", self.turns, "search", query, top_k=c.turns_top_k))
        return tasks

    def _assemble(
        self, query: str, tasks: list[_Task], outcomes: list[Any], token_budget: int
    ) -> MemoryContext:
        c = self.config
        results: dict[str, Any] = {}
        errors: dict[str, str] = {}
        for task, outcome in zip(tasks, outcomes, strict=True):
            if not isinstance(outcome, BaseException):
                results[task.name] = outcome
            elif not isinstance(outcome, Exception):
                raise outcome
            else:  # the other tiers still answer
                logger.warning("memory retrieval from %s failed: %r", task.name, outcome)
                errors[task.name] = f"{type(outcome).__name__}: {outcome}"
                if self.on_error is not None:
                    self.on_error(task.name, outcome)
        items = convert.warning_items(
            results.get("warnings", []), min_failure_rate=c.min_failure_rate
        )
        items += convert.strategy_items(results.get("strategies", []))
        items += convert.preference_items(results.get("preferences", {}))
        profile = results.get("profile")
        profile_list = convert.profile_items(profile.facts) if profile else []
        seen = {i.id for i in profile_list}
        critical_list = [
            i for i in convert.profile_items(results.get("critical", [])) if i.id not in seen
        ]
        items += profile_list + critical_list
        items += convert.knowledge_items(
            results.get("knowledge", []), exclude=seen | {i.id for i in critical_list}
        )
        items += convert.experience_items(results.get("experiences", []))
        items += convert.turn_items(results.get("conversation", []))
        kept, conflicts = self.resolver.resolve(items)
        if c.packing == "sections":
            ctx = pack_items(
                kept, budget=token_budget, counter=self.counter, min_trim_tokens=c.min_trim_tokens
            )
        else:
            ranked = rank_items(
                kept, query, now=self.semantic.clock(), config=c.utility, critical=c.critical
            )
            # A fact about the user found by the query is shown with the profile (one heading less).
            ranked = [
                replace(i, section="profile")
                if i.section == "knowledge" and i.provenance.get("entity_id") == self.entity_id
                else i
                for i in ranked
            ]
            ctx = pack_by_utility(
                ranked,
                budget=token_budget,
                counter=self.counter,
                relevance_floor=c.relevance_floor,
                section_floors=c.section_floors,
                token_cost_weight=c.token_cost_weight,
                min_trim_tokens=c.min_trim_tokens,
            )
        ctx.dropped = conflicts + ctx.dropped
        ctx.errors = errors
        return ctx

    def build(self, query: str, token_budget: int = 2000) -> MemoryContext:
        """Assemble the memory context for ``query`` in at most ``token_budget`` tokens."""
        tasks, overlap = self._start(query, token_budget)
        runs: list[Callable[[], Any]]
        if overlap:
            runs = [_EXECUTOR.submit(t.run).result for t in tasks]
        else:  # threads would only queue for the GIL (embedded engine: p99 5-8 ms lower)
            runs = [t.run for t in tasks]
        return self._assemble(query, tasks, [_outcome(run) for run in runs], token_budget)

    async def abuild(self, query: str, token_budget: int = 2000) -> MemoryContext:
        """Async twin of :meth:`build`."""
        tasks, overlap = self._start(query, token_budget)
        outcomes: list[Any]
        if overlap:
            outcomes = await asyncio.gather(*(t.arun() for t in tasks), return_exceptions=True)
        else:  # as in build (embedded engine, 100k memories: p50 49 -> 42 ms, measured)
            outcomes = [await _aoutcome(t.arun()) for t in tasks]
        return self._assemble(query, tasks, outcomes, token_budget)


def _outcome(run: Callable[[], Any]) -> Any:
    """What ``run`` returns, or the exception it raises (as ``gather`` reports it)."""
    try:
        return run()
    except Exception as exc:
        return exc


async def _aoutcome(awaitable: Awaitable[Any]) -> Any:
    try:
        return await awaitable
    except Exception as exc:
        return exc
