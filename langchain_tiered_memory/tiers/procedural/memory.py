"""Procedural memory on any LangGraph ``BaseStore``: tool statistics, strategies, preferences.

Namespaces under the scope: ``("procedural", "tool_stats")`` (one record per tool,
see :mod:`.stats`), ``("procedural", "strategies")`` (definitions, embedded for
relevance), ``("procedural", "strategy_counts")`` and ``("procedural", "preferences")``.

Examples:
    >>> from langgraph.store.memory import InMemoryStore
    >>> from langchain_tiered_memory.tiers.common.scope import MemoryScope
    >>> memory = ProceduralMemory(InMemoryStore(), MemoryScope("alice"))
    >>> _ = memory.record_tool_use(ToolUsageRecord(tool_name="orders", success=False,
    ...     error_message="410 Gone", hint="use orders_v2"))
    >>> print(memory.get_context_injection())
    Tool usage warnings:
    - orders: 100% failure rate over 1 uses; last call failed: 410 Gone (hint: use orders_v2)
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from langgraph.store.base import BaseStore, GetOp, PutOp, SearchItem, SearchOp

from langchain_tiered_memory.errors import ConfigurationError, InvalidInputError
from langchain_tiered_memory.stores.abilities import NamespaceVersioned
from langchain_tiered_memory.stores.serialized import unwrap
from langchain_tiered_memory.text import check_top_k
from langchain_tiered_memory.tiers.common.args import Clock, tier_args
from langchain_tiered_memory.tiers.common.ranking import RelevanceScale, relevance_scores
from langchain_tiered_memory.tiers.common.records import (
    Plan,
    StoreOps,
    arun_plan,
    run_plan,
    search_all,
    to_epoch,
    validate_model,
)
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.tiers.common.slot_lock import SlotLock, slot_lock
from langchain_tiered_memory.tiers.procedural.legacy import fold_legacy_plan
from langchain_tiered_memory.tiers.procedural.models import (
    ScoredStrategy,
    Strategy,
    ToolGuidance,
    ToolUsageRecord,
)
from langchain_tiered_memory.tiers.procedural.render import render_injection
from langchain_tiered_memory.tiers.procedural.stats import (
    OutcomeCounts,
    ToolStats,
    strategy_key,
    strategy_value,
    validate_tool_use,
)

__all__ = ["ProceduralConfig", "ProceduralMemory"]

T = TypeVar("T")


@dataclass(frozen=True)
class ProceduralConfig:
    """Settings of :class:`ProceduralMemory`.

    Args:
        relevance_weight: Weight of similarity to the context when ranking strategies.
        confidence_weight: Weight of a strategy's Wilson confidence.
        inject_min_confidence: Strategies below this are left out of the injection.
        inject_min_successes: ... and so are strategies with fewer successes.
        max_injected_strategies: At most this many strategies are injected.
        warn_min_failures: A tool is warned about when it failed at least this often
            with a failure rate of at least ``warn_failure_rate`` ...
        warn_failure_rate: ... or whenever its last call failed.
        max_tool_warnings: At most this many tool warnings (most recent failures first).
        max_common_errors: Error patterns kept per tool.
        pattern_min_frequency: A parameter value shared by more than this share of
            successful calls is reported as a pattern.
        relevance_scale: How store scores become relevance in [0, 1]; see
            :class:`~langchain_tiered_memory.tiers.common.ranking.RankingConfig`.
    """

    relevance_weight: float = 0.6
    confidence_weight: float = 0.4
    inject_min_confidence: float = 0.5
    inject_min_successes: int = 3
    max_injected_strategies: int = 5
    warn_min_failures: int = 3
    warn_failure_rate: float = 0.3
    max_tool_warnings: int = 5
    max_common_errors: int = 5
    pattern_min_frequency: float = 0.6
    relevance_scale: RelevanceScale = "relative"

    def __post_init__(self) -> None:
        weights = (self.relevance_weight, self.confidence_weight)
        if any(not math.isfinite(w) or w < 0 for w in weights) or sum(weights) <= 0:
            raise ConfigurationError(
                f"relevance_weight={self.relevance_weight}, confidence_weight="
                f"{self.confidence_weight}: use finite weights >= 0, not both zero"
            )
        for name in ("inject_min_confidence", "warn_failure_rate", "pattern_min_frequency"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigurationError(f"{name}={getattr(self, name)}: use a value in [0, 1]")


def _copy_guidance(guidance: ToolGuidance) -> ToolGuidance:
    """A copy a caller may change (the dataclass is frozen; its lists are not)."""
    return replace(
        guidance,
        common_errors=list(guidance.common_errors),
        successful_patterns=list(guidance.successful_patterns),
    )


def _name(value: str, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{what} is {value!r}: pass a non-empty name")
    return " ".join(value.split())


class ProceduralMemory:
    """One scope's learned procedures, kept in a store.

    Strategy relevance uses the store's vector index when it has one (the
    ``text`` field of each strategy is indexed explicitly); without an index,
    strategies rank by confidence alone.

    Args:
        store: Any LangGraph ``BaseStore``.
        scope: Whose procedures these are.
        config: Ranking weights and injection thresholds.
        clock: Returns "now" (aware); injectable for tests.

    Examples:
        >>> from langgraph.store.memory import InMemoryStore
        >>> memory = ProceduralMemory(InMemoryStore(), MemoryScope("bob"))
        >>> _ = memory.register_strategy("small-commits", "Commit in small steps",
        ...                              conditions="refactoring", procedure="commit often")
        >>> memory.update_strategy_outcome("small-commits", success=True).success_count
        1
        >>> memory.set_preference("language", "python"); memory.get_preferences()
        {'language': 'python'}
    """

    def __init__(
        self,
        store: BaseStore,
        scope: MemoryScope,
        *,
        config: ProceduralConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._args = tier_args(store, scope, clock)
        self.store: BaseStore = self._args.store
        self.scope: MemoryScope = self._args.scope
        self.config = config or ProceduralConfig()
        self.tool_stats_namespace = scope.namespace("procedural", "tool_stats")
        self.strategies_namespace = scope.namespace("procedural", "strategies")
        self.strategy_counts_namespace = scope.namespace("procedural", "strategy_counts")
        self.preferences_namespace = scope.namespace("procedural", "preferences")
        # The last folded tool guidance, under the store version it was read at.
        self._kept_guidance: tuple[Hashable, list[ToolGuidance]] | None = None
        self._legacy_moved = False  # statistics of the earlier layout (see :mod:`.legacy`)

    def _lock(self, namespace: tuple[str, ...], key: str) -> SlotLock:
        """The process-wide lock of one statistics record (held from its read to its write)."""
        return slot_lock(unwrap(self.store), namespace, key, "")

    def _legacy_plan(self) -> Plan[int]:
        return fold_legacy_plan(
            self.scope, self.tool_stats_namespace, self.strategy_counts_namespace
        )

    def _run(self, plan: Plan[T], lock: SlotLock | None = None) -> T:
        """Run ``plan`` (holding ``lock``), the earlier layout's statistics moved first."""
        if not self._legacy_moved:
            with self._lock(self.scope.namespace("procedural"), "legacy"):
                run_plan(self.store, self._legacy_plan())
                self._legacy_moved = True
        with lock or nullcontext():
            return run_plan(self.store, plan)

    async def _arun(self, plan: Plan[T], lock: SlotLock | None = None) -> T:
        if not self._legacy_moved:
            async with self._lock(self.scope.namespace("procedural"), "legacy"):
                await arun_plan(self.store, self._legacy_plan())
                self._legacy_moved = True
        async with lock or nullcontext():
            return await arun_plan(self.store, plan)

    # ------------------------------------------------------------------ plans: tools

    def _record_tool(
        self, record: ToolUsageRecord | dict[str, Any]
    ) -> tuple[Plan[ToolUsageRecord], SlotLock]:
        """The plan adding ``record`` to its tool's record, and that record's lock."""
        rec = validate_tool_use(record)
        lock = self._lock(self.tool_stats_namespace, rec.tool_name)
        return self._record_tool_plan(rec), lock

    def _record_tool_plan(self, rec: ToolUsageRecord) -> Plan[ToolUsageRecord]:
        namespace, key = self.tool_stats_namespace, rec.tool_name
        (item,) = yield StoreOps((GetOp(namespace, key),))
        stats = ToolStats.from_value(None if item is None else item.value)
        if stats.add(rec):
            yield StoreOps((PutOp(namespace, key, stats.to_value(key), index=False),))
        return rec

    def _guidance(self, tool_name: str, value: dict[str, Any] | None) -> ToolGuidance:
        return ToolStats.from_value(value).guidance(
            tool_name,
            max_errors=self.config.max_common_errors,
            pattern_min_frequency=self.config.pattern_min_frequency,
        )

    def _guidance_plan(self, tool_name: str) -> Plan[ToolGuidance]:
        name = _name(tool_name, "tool_name")
        (item,) = yield StoreOps((GetOp(self.tool_stats_namespace, name),))
        return self._guidance(name, None if item is None else item.value)

    def _all_guidance_plan(self) -> Plan[list[ToolGuidance]]:
        items = yield from search_all(self.tool_stats_namespace, [None])
        guidance = [self._guidance(i.key, i.value) for i in sorted(items, key=lambda i: i.key)]
        return [g for g in guidance if g.known]

    # ------------------------------------------------------------------ plans: strategies

    def _register_plan(
        self, name: str, description: str, conditions: str, procedure: str
    ) -> Plan[Strategy]:
        strategy = validate_model(
            Strategy,
            {
                "name": name,
                "description": description,
                "conditions": conditions,
                "procedure": procedure,
                "created_at": self._args.now(),
            },
            "strategy",
        )
        key = strategy_key(strategy.name)
        put = PutOp(self.strategies_namespace, key, strategy_value(strategy), index=["text"])
        yield StoreOps((put,))
        (strategy,) = yield from self._with_counts([strategy])
        return strategy

    def _with_counts(self, strategies: list[Strategy]) -> Plan[list[Strategy]]:
        if not strategies:
            return []
        namespace = self.strategy_counts_namespace
        items = yield StoreOps(tuple(GetOp(namespace, strategy_key(s.name)) for s in strategies))
        return [
            OutcomeCounts.from_value(None if item is None else item.value).apply(s)
            for s, item in zip(strategies, items, strict=True)
        ]

    def _get_strategy_plan(self, name: str) -> Plan[Strategy | None]:
        key = strategy_key(_name(name, "strategy name"))
        (item,) = yield StoreOps((GetOp(self.strategies_namespace, key),))
        if item is None:
            return None
        (strategy,) = yield from self._with_counts([Strategy.model_validate(item.value)])
        return strategy

    def _outcome(self, name: str, success: bool) -> tuple[Plan[Strategy], SlotLock]:
        """The plan counting one outcome of strategy ``name``, and its counts record's lock."""
        if not isinstance(success, bool):
            raise InvalidInputError(f"success is {success!r}: pass True or False")
        key = strategy_key(_name(name, "strategy name"))
        lock = self._lock(self.strategy_counts_namespace, key)
        return self._outcome_plan(name, key, success), lock

    def _outcome_plan(self, name: str, key: str, success: bool) -> Plan[Strategy]:
        namespace = self.strategy_counts_namespace
        item, counted = yield StoreOps(
            (GetOp(self.strategies_namespace, key), GetOp(namespace, key))
        )
        if item is None:
            raise InvalidInputError(
                f"strategy {name!r} is not registered: call register_strategy first"
            )
        counts = OutcomeCounts.from_value(None if counted is None else counted.value)
        counts.add(self._args.now(), success)
        yield StoreOps((PutOp(namespace, key, counts.to_value(key), index=False),))
        return counts.apply(Strategy.model_validate(item.value))

    def _scored(self, strategy: Strategy, relevance: float | None) -> ScoredStrategy:
        w_rel, w_conf = self.config.relevance_weight, self.config.confidence_weight
        if relevance is None:  # no context: confidence alone
            w_rel, relevance = 0.0, 0.0
        total = (w_rel * relevance + w_conf * strategy.confidence) / ((w_rel + w_conf) or 1.0)
        return ScoredStrategy(strategy, relevance, strategy.confidence, total)

    def _applicable_plan(
        self, context: str | None, top_k: int, min_confidence: float, min_relevance: float
    ) -> Plan[list[ScoredStrategy]]:
        check_top_k(top_k)
        text = None
        if context is not None:
            if not isinstance(context, str):
                raise InvalidInputError(f"context must be text, got {type(context).__name__}")
            text = context.strip() or None
        items: list[SearchItem]
        scores: Sequence[float | None]
        if text is None:  # confidence alone
            items = yield from search_all(self.strategies_namespace, [None])
            scores = [None] * len(items)
        else:
            limit = max(top_k * 4, 20)
            (items,) = yield StoreOps((SearchOp(self.strategies_namespace, None, limit, 0, text),))
            scores = relevance_scores([i.score for i in items], self.config.relevance_scale)
        strategies = yield from self._with_counts([Strategy.model_validate(i.value) for i in items])
        floor = 0.0 if text is None else min_relevance
        scored = (self._scored(s, r) for s, r in zip(strategies, scores, strict=True))
        kept = [s for s in scored if s.confidence >= min_confidence and s.relevance >= floor]
        kept.sort(key=lambda s: (s.score, s.confidence), reverse=True)
        return kept[:top_k]

    # ------------------------------------------------------------------ plans: preferences

    def _set_preference_plan(self, key: str, value: Any) -> Plan[None]:
        name = _name(key, "preference key")
        stored = {"key": name, "value": value, "updated_at": self._args.now().isoformat()}
        yield StoreOps((PutOp(self.preferences_namespace, name, stored, index=False),))

    def _delete_preference_plan(self, key: str) -> Plan[None]:
        yield StoreOps((PutOp(self.preferences_namespace, _name(key, "preference key"), None),))

    def _preferences_plan(self) -> Plan[dict[str, Any]]:
        items = yield from search_all(self.preferences_namespace, [None])
        return {i.value["key"]: i.value["value"] for i in sorted(items, key=lambda i: i.key)}

    # ------------------------------------------------------------------ plans: injection

    def _injection_plan(self, context: str | None) -> Plan[str]:
        c = self.config
        scored = yield from self._applicable_plan(
            context, max(c.max_injected_strategies * 4, 20), c.inject_min_confidence, 0.0
        )
        strategies = [
            s.strategy for s in scored if s.strategy.success_count >= c.inject_min_successes
        ][: c.max_injected_strategies]
        guidance = yield from self._all_guidance_plan()
        warned = [
            g
            for g in guidance
            if g.last_success is False
            or (g.failures >= c.warn_min_failures and g.failure_rate >= c.warn_failure_rate)
        ]
        warned.sort(
            key=lambda g: (g.last_success is False, to_epoch(g.last_used) if g.last_used else 0.0),
            reverse=True,
        )
        preferences = yield from self._preferences_plan()
        return render_injection(strategies, warned[: c.max_tool_warnings], preferences)

    # ------------------------------------------------------------------ public API

    def record_tool_use(self, record: ToolUsageRecord | dict[str, Any]) -> ToolUsageRecord:
        """Count one tool use (secrets redacted) in its tool's statistics; returns the record.

        A ``record_id`` among the tool's last :data:`.stats.RECENT_IDS` uses counts once.

        Raises:
            InvalidInputError: The record is invalid (e.g. empty tool name,
                negative time); nothing was stored.
        """
        return self._run(*self._record_tool(record))

    async def arecord_tool_use(self, record: ToolUsageRecord | dict[str, Any]) -> ToolUsageRecord:
        """Async twin of :meth:`record_tool_use`."""
        return await self._arun(*self._record_tool(record))

    def get_tool_guidance(self, tool_name: str) -> ToolGuidance:
        """Success rate, average time, common normalised errors and parameter patterns."""
        return self._run(self._guidance_plan(tool_name))

    async def aget_tool_guidance(self, tool_name: str) -> ToolGuidance:
        """Async twin of :meth:`get_tool_guidance`."""
        return await self._arun(self._guidance_plan(tool_name))

    def get_all_tool_guidance(self) -> list[ToolGuidance]:
        """Guidance for every tool used in this scope, by tool name.

        On a store that versions its namespaces (the embedded ``QdrantMemoryStore``) the
        result is reused until this scope's procedural memory changes.
        """
        return self._run(self._kept_guidance_plan())

    async def aget_all_tool_guidance(self) -> list[ToolGuidance]:
        """Async twin of :meth:`get_all_tool_guidance`."""
        return await self._arun(self._kept_guidance_plan())

    def _kept_guidance_plan(self) -> Plan[list[ToolGuidance]]:
        # The version is read before the records (when the driver starts the plan).
        token = None
        if isinstance(self.store, NamespaceVersioned):
            token = self.store.namespace_version(self.scope.namespace("procedural"))
        kept = self._kept_guidance  # one read: another thread may replace it meanwhile
        if token is not None and kept is not None and kept[0] == token:
            return [_copy_guidance(g) for g in kept[1]]
        guidance = yield from self._all_guidance_plan()
        if token is not None:
            self._kept_guidance = (token, [_copy_guidance(g) for g in guidance])
        return guidance

    def register_strategy(
        self, name: str, description: str, conditions: str = "", procedure: str = ""
    ) -> Strategy:
        """Register (or redefine) a strategy; its recorded outcomes are kept."""
        return self._run(self._register_plan(name, description, conditions, procedure))

    async def aregister_strategy(
        self, name: str, description: str, conditions: str = "", procedure: str = ""
    ) -> Strategy:
        """Async twin of :meth:`register_strategy`."""
        return await self._arun(self._register_plan(name, description, conditions, procedure))

    def get_strategy(self, name: str) -> Strategy | None:
        """A strategy with its counts, or ``None``."""
        return self._run(self._get_strategy_plan(name))

    async def aget_strategy(self, name: str) -> Strategy | None:
        """Async twin of :meth:`get_strategy`."""
        return await self._arun(self._get_strategy_plan(name))

    def update_strategy_outcome(self, name: str, success: bool) -> Strategy:
        """Record one outcome of a strategy; returns it with its new counts.

        Raises:
            InvalidInputError: The strategy is not registered.
        """
        return self._run(*self._outcome(name, success))

    async def aupdate_strategy_outcome(self, name: str, success: bool) -> Strategy:
        """Async twin of :meth:`update_strategy_outcome`."""
        return await self._arun(*self._outcome(name, success))

    def get_applicable_strategies(
        self,
        context: str | None,
        *,
        top_k: int = 5,
        min_confidence: float = 0.0,
        min_relevance: float = 0.0,
    ) -> list[ScoredStrategy]:
        """Strategies for ``context``, ranked by relevance to it and by confidence.

        Without a context (``None`` or blank), every strategy ranks by confidence.
        """
        plan = self._applicable_plan(context, top_k, min_confidence, min_relevance)
        return self._run(plan)

    async def aget_applicable_strategies(
        self,
        context: str | None,
        *,
        top_k: int = 5,
        min_confidence: float = 0.0,
        min_relevance: float = 0.0,
    ) -> list[ScoredStrategy]:
        """Async twin of :meth:`get_applicable_strategies`."""
        plan = self._applicable_plan(context, top_k, min_confidence, min_relevance)
        return await self._arun(plan)

    def set_preference(self, key: str, value: Any) -> None:
        """Set a user preference (JSON-serialisable value); the last write wins."""
        run_plan(self.store, self._set_preference_plan(key, value))

    async def aset_preference(self, key: str, value: Any) -> None:
        """Async twin of :meth:`set_preference`."""
        await arun_plan(self.store, self._set_preference_plan(key, value))

    def delete_preference(self, key: str) -> None:
        """Forget a preference (no error if it is absent)."""
        run_plan(self.store, self._delete_preference_plan(key))

    async def adelete_preference(self, key: str) -> None:
        """Async twin of :meth:`delete_preference`."""
        await arun_plan(self.store, self._delete_preference_plan(key))

    def get_preferences(self) -> dict[str, Any]:
        """Every preference, by key."""
        return run_plan(self.store, self._preferences_plan())

    async def aget_preferences(self) -> dict[str, Any]:
        """Async twin of :meth:`get_preferences`."""
        return await arun_plan(self.store, self._preferences_plan())

    def get_context_injection(self, context: str | None = None) -> str:
        """Learned strategies (relevant to ``context`` if given), tool warnings and preferences.

        Returns ``""`` when there is nothing to say.
        """
        return self._run(self._injection_plan(context))

    async def aget_context_injection(self, context: str | None = None) -> str:
        """Async twin of :meth:`get_context_injection`."""
        return await self._arun(self._injection_plan(context))
