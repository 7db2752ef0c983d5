"""Operational health figures (the seed's evaluation framework, "Operational Health").

Computed by one scan of the store: sizes per user and tier, growth, the share
of episodes ever retrieved, the staleness distribution of current facts,
consolidation runs and their success rate, forgetting counts from the audit
trail, write-back counts and recorded failures.

Example:
    >>> from langgraph.store.memory import InMemoryStore
    >>> from langchain_tiered_memory import TieredMemory
    >>> memory = TieredMemory(InMemoryStore())
    >>> _ = memory.for_user("alice").remember("I live in Lyon.")
    >>> compute_stats(memory)["users"]["alice"]["semantic"] >= 1
    True
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from langchain_tiered_memory.tiers.episodic_access import flush_access_buffers
from langchain_tiered_memory.tiers.scope import ROOT_LABEL, label_to_id
from langchain_tiered_memory.types import ensure_aware

if TYPE_CHECKING:
    from langchain_tiered_memory.memory import TieredMemory

__all__ = ["STALENESS_BUCKETS", "compute_stats"]

STALENESS_BUCKETS: tuple[tuple[str, float], ...] = (
    ("<7d", 7.0),
    ("7-30d", 30.0),
    ("30-90d", 90.0),
    (">=90d", float("inf")),
)


def _bucket(days: float) -> str:
    for name, limit in STALENESS_BUCKETS:
        if days < limit:
            return name
    return STALENESS_BUCKETS[-1][0]


def _parse(value: Any) -> datetime | None:
    if isinstance(value, str):
        try:
            return ensure_aware(datetime.fromisoformat(value))
        except ValueError:
            return None
    return None


def compute_stats(memory: TieredMemory) -> dict[str, Any]:
    """Scan ``memory``'s store once and return its health figures as a dict."""
    now = memory.clock()
    users: dict[str, Counter[str]] = defaultdict(Counter)
    growth: Counter[str] = Counter()
    staleness: Counter[str] = Counter()
    forgetting: Counter[str] = Counter()
    consolidation: Counter[str] = Counter()
    episodes = 0
    accessed: set[tuple[str, str]] = set()  # (user, episode id) with any access event
    flush_access_buffers(memory.store)  # count accesses still buffered in this process
    for item in memory._scan((ROOT_LABEL,)):
        ns = tuple(item.namespace)
        if len(ns) < 4:
            continue
        user, tier = label_to_id(ns[1]), ns[3]
        sub = ns[4] if len(ns) > 4 else ""
        value = item.value
        if tier == "_audit":
            forgetting[str(value.get("action", "unknown"))] += 1
            continue
        if tier == "_consolidation":
            if sub == "runs":
                consolidation["runs"] += 1
                consolidation["succeeded" if value.get("ok") else "failed"] += 1
            continue
        if tier == "episodic" and sub == "access":
            # Raw access events and folded segment heads both name their episode.
            if isinstance(value.get("episode_id"), str):
                accessed.add((user, value["episode_id"]))
            continue
        users[user][tier] += 1
        age = now - ensure_aware(item.created_at)
        if age <= timedelta(days=1):
            growth["last_24h"] += 1
        if age <= timedelta(days=7):
            growth["last_7d"] += 1
        if tier == "episodic" and sub == "episodes":
            episodes += 1
        if tier == "semantic" and sub == "facts" and value.get("valid_to") is None:
            confirmed = _parse(value.get("last_confirmed"))
            if confirmed is not None:
                staleness[_bucket((now - confirmed).total_seconds() / 86400.0)] += 1
    runs = consolidation["runs"]
    writer = memory.writer
    return {
        "users": {u: dict(c) | {"total": sum(c.values())} for u, c in sorted(users.items())},
        "total_items": sum(sum(c.values()) for c in users.values()),
        "growth": {"last_24h": growth["last_24h"], "last_7d": growth["last_7d"]},
        "episodes_ever_retrieved": (len(accessed) / episodes) if episodes else 0.0,
        "fact_staleness": {name: staleness[name] for name, _ in STALENESS_BUCKETS},
        "consolidation": {
            "runs": runs,
            "succeeded": consolidation["succeeded"],
            "success_rate": consolidation["succeeded"] / runs if runs else None,
        },
        "forgetting": dict(forgetting),
        "writeback": dataclasses.asdict(writer.stats()) if writer is not None else None,
        "errors": dict(memory._errors),
    }
