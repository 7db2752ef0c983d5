"""Operational health figures: sizes, growth, staleness, consolidation, write-back.

One scan of the store folds every item into a :class:`StatsScan`;
:func:`compute_stats` and :func:`acompute_stats` differ only in their store calls.

Examples:
    >>> from langgraph.store.memory import InMemoryStore
    >>> from langchain_tiered_memory import TieredMemory
    >>> memory = TieredMemory(InMemoryStore())
    >>> _ = memory.for_user("alice").remember("I live in Lyon.")
    >>> compute_stats(memory.runtime)["users"]["alice"]["semantic"] >= 1
    True
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from langchain_tiered_memory.tiers.common.access import asave_access, save_access
from langchain_tiered_memory.tiers.common.scope import ROOT_LABEL, label_to_id
from langchain_tiered_memory.types import ensure_aware

if TYPE_CHECKING:
    from langgraph.store.base import Item

    from langchain_tiered_memory.runtime import MemoryRuntime
    from langchain_tiered_memory.writeback.ops import WriteBackStats

__all__ = ["STALENESS_BUCKETS", "StatsScan", "acompute_stats", "compute_stats"]

STALENESS_BUCKETS: tuple[tuple[str, float], ...] = (
    ("<7d", 7.0),
    ("7-30d", 30.0),
    ("30-90d", 90.0),
    (">=90d", float("inf")),
)


def _parse(value: Any) -> datetime | None:
    try:
        return ensure_aware(datetime.fromisoformat(value)) if isinstance(value, str) else None
    except ValueError:
        return None


_ACCESS_ID = {"episodic": "episode_id", "semantic": "fact_id"}
"""The field that names the record in a tier's saved access counts."""


def _share(accessed: set[tuple[str, str]], live: set[tuple[str, str]]) -> float:
    return len(accessed & live) / len(live) if live else 0.0


class StatsScan:
    """The health figures folded from one scan of the store (pure: no I/O).

    :func:`compute_stats` and :func:`acompute_stats` feed it every item of the
    store with :meth:`add` and read the figures with :meth:`result`.

    Args:
        now: The time growth and staleness are measured against (aware).
    """

    def __init__(self, now: datetime) -> None:
        self.now = now
        self.users: dict[str, Counter[str]] = defaultdict(Counter)
        self.growth: Counter[str] = Counter()
        self.staleness: Counter[str] = Counter()
        self.forgetting: Counter[str] = Counter()
        self.consolidation: Counter[str] = Counter()
        # (user, id) of the live episodes and current facts, and of those with an access count
        self.episodes: set[tuple[str, str]] = set()
        self.facts: set[tuple[str, str]] = set()
        self.accessed: dict[str, set[tuple[str, str]]] = {"episodic": set(), "semantic": set()}

    def add(self, item: Item) -> None:
        """Fold one store item into the figures (items outside a user scope are ignored)."""
        ns = tuple(item.namespace)
        if len(ns) < 4:
            return
        user, tier = label_to_id(ns[1]), ns[3]
        sub = ns[4] if len(ns) > 4 else ""
        value = item.value
        if tier == "_audit":
            self.forgetting[str(value.get("action", "unknown"))] += 1
            return
        if tier == "_consolidation":
            if sub == "runs":
                self.consolidation["runs"] += 1
                self.consolidation["succeeded" if value.get("ok") else "failed"] += 1
            return
        if sub == "access":  # retrieval counts: statistics, not memories
            record = value.get(_ACCESS_ID.get(tier, ""))
            if tier in self.accessed and isinstance(record, str):
                self.accessed[tier].add((user, record))
            return
        self.users[user][tier] += 1
        age = self.now - ensure_aware(item.created_at)
        for name, span in (("last_24h", 1), ("last_7d", 7)):
            if age <= timedelta(days=span):
                self.growth[name] += 1
        if tier == "episodic" and sub == "episodes":
            self.episodes.add((user, str(value.get("episode_id", item.key))))
        if tier == "semantic" and sub == "facts" and value.get("valid_to") is None:
            self.facts.add((user, str(value.get("fact_id", item.key))))
            confirmed = _parse(value.get("last_confirmed"))
            if confirmed is not None:
                days = (self.now - confirmed).total_seconds() / 86400.0
                self.staleness[next(n for n, limit in STALENESS_BUCKETS if days < limit)] += 1

    def result(self, writeback: WriteBackStats | None, errors: Mapping[str, int]) -> dict[str, Any]:
        """The figures as the dict :meth:`TieredMemory.stats` returns.

        Args:
            writeback: The write-back counts (``None`` without a writer).
            errors: Failures recorded by the facade, by kind.
        """
        users, consolidation = self.users, self.consolidation
        runs = consolidation["runs"]
        return {
            "users": {u: dict(c) | {"total": sum(c.values())} for u, c in sorted(users.items())},
            "total_items": sum(sum(c.values()) for c in users.values()),
            "growth": {"last_24h": self.growth["last_24h"], "last_7d": self.growth["last_7d"]},
            "episodes_ever_retrieved": _share(self.accessed["episodic"], self.episodes),
            "facts_ever_retrieved": _share(self.accessed["semantic"], self.facts),
            "memories_ever_retrieved": _share(
                self.accessed["episodic"] | self.accessed["semantic"], self.episodes | self.facts
            ),
            "fact_staleness": {name: self.staleness[name] for name, _ in STALENESS_BUCKETS},
            "consolidation": {
                "runs": runs,
                "succeeded": consolidation["succeeded"],
                "success_rate": consolidation["succeeded"] / runs if runs else None,
            },
            "forgetting": dict(self.forgetting),
            "writeback": dataclasses.asdict(writeback) if writeback is not None else None,
            "errors": dict(errors),
        }


def compute_stats(runtime: MemoryRuntime) -> dict[str, Any]:
    """Scan the memory's store once and return its health figures as a dict."""
    scan = StatsScan(runtime.clock())
    save_access(runtime.store)  # count accesses not saved yet in this process
    for item in runtime.scan((ROOT_LABEL,)):
        scan.add(item)
    writer = runtime.writer
    return scan.result(writer.stats() if writer is not None else None, runtime.error_counts())


async def acompute_stats(runtime: MemoryRuntime) -> dict[str, Any]:
    """Async twin of :func:`compute_stats`."""
    scan = StatsScan(runtime.clock())
    await asave_access(runtime.store)
    async for item in runtime.ascan((ROOT_LABEL,)):
        scan.add(item)
    writer = runtime.writer
    return scan.result(
        await writer.astats() if writer is not None else None, runtime.error_counts()
    )
