"""What to forget: the forgetting policy.

Pure decisions, no I/O: each ``*_verdict`` returns the reason to forget a
memory, or ``None`` to keep it; pinned memories are never forgotten.

Examples:
    >>> from datetime import datetime, timedelta, timezone
    >>> now = datetime(2026, 6, 1, tzinfo=timezone.utc)
    >>> policy = ForgettingPolicy()
    >>> policy.episode_verdict(outcome="abandoned", has_reflection=False,
    ...                        created_at=now - timedelta(days=10), now=now)
    'abandoned episode older than 7 days'
    >>> policy.episode_verdict(outcome="abandoned", has_reflection=False,
    ...                        created_at=now - timedelta(days=10), now=now, pinned=True) is None
    True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.types import ensure_aware

__all__ = ["ForgettingPolicy", "RetentionCandidate"]


@dataclass(frozen=True)
class RetentionCandidate:
    """What the size cap needs to know about one memory.

    Attributes:
        key: A unique key (for example ``"episodic:<id>"``).
        created_at: When it was stored.
        access_count: How often it was retrieved (episodes and facts alike: both
            tiers count the accesses of their retrievals).
        importance: 0..1; facts use their confidence.
        pinned: Pinned memories are never selected.
        last_accessed: When it was last retrieved (``None``: never); for facts,
            also a restatement (``last_confirmed``) counts as a use.
    """

    key: str
    created_at: datetime
    access_count: int = 0
    importance: float = 0.5
    pinned: bool = False
    last_accessed: datetime | None = None


def _days(now: datetime, then: datetime) -> float:
    return max(0.0, (ensure_aware(now) - ensure_aware(then)).total_seconds() / 86400.0)


@dataclass(frozen=True)
class ForgettingPolicy:
    """Configurable forgetting rules: age, confidence, importance, pins, grace and a size cap.

    Args:
        max_episode_age_days: Ordinary episodes are forgotten after this age.
        abandoned_episode_days: Abandoned episodes go sooner.
        successful_reflected_factor: Reflected successes live this many times longer.
        min_fact_confidence: Facts below this confidence are forgotten.
        max_stale_days: Facts unconfirmed this long and below ``stale_confidence`` go.
        stale_confidence: See ``max_stale_days``.
        max_contradictions: Facts contradicted more often than this go.
        max_items_per_user: Size cap per user across tiers (``None``: no cap).
        grace_period_days: Soft-deleted memories are purged for good after this.
        recency_weight: Weight of recency in a memory's value.
        access_weight: Weight of access frequency.
        importance_weight: Weight of importance.
    """

    max_episode_age_days: float = 90.0
    abandoned_episode_days: float = 7.0
    successful_reflected_factor: float = 3.0
    min_fact_confidence: float = 0.3
    max_stale_days: float = 60.0
    stale_confidence: float = 0.6
    max_contradictions: int = 3
    max_items_per_user: int | None = 10_000
    grace_period_days: float = 30.0
    recency_weight: float = 0.3
    access_weight: float = 0.3
    importance_weight: float = 0.4

    def __post_init__(self) -> None:
        for name in (
            "max_episode_age_days",
            "abandoned_episode_days",
            "max_stale_days",
            "grace_period_days",
            "successful_reflected_factor",
        ):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or math.isnan(value) or value < 0:
                raise ConfigurationError(f"ForgettingPolicy.{name} must be >= 0, got {value!r}")
        if self.max_items_per_user is not None and self.max_items_per_user < 0:
            raise ConfigurationError(
                f"max_items_per_user must be >= 0 or None, got {self.max_items_per_user!r}"
            )

    def episode_verdict(
        self,
        *,
        outcome: str,
        has_reflection: bool,
        created_at: datetime,
        now: datetime,
        pinned: bool = False,
    ) -> str | None:
        """Reason to forget an episode, or ``None`` to keep it."""
        if pinned:
            return None
        if outcome == "success" and has_reflection:
            factor = self.successful_reflected_factor
            what, limit = "reflected success", self.max_episode_age_days * factor
        elif outcome == "abandoned":
            what, limit = "abandoned episode", self.abandoned_episode_days
        else:
            what, limit = f"{outcome} episode", self.max_episode_age_days
        return f"{what} older than {limit:g} days" if _days(now, created_at) > limit else None

    def fact_verdict(
        self,
        *,
        confidence: float,
        last_confirmed: datetime,
        contradiction_count: int,
        now: datetime,
        pinned: bool = False,
    ) -> str | None:
        """Reason to forget a fact, or ``None`` to keep it."""
        if pinned:
            return None
        if confidence < self.min_fact_confidence:
            return f"confidence {confidence:.2f} below {self.min_fact_confidence:g}"
        if _days(now, last_confirmed) > self.max_stale_days and confidence < self.stale_confidence:
            return (
                f"not confirmed for {self.max_stale_days:g}+ days and confidence "
                f"{confidence:.2f} below {self.stale_confidence:g}"
            )
        if contradiction_count > self.max_contradictions:
            return f"contradicted {contradiction_count} times"
        return None

    def value(self, candidate: RetentionCandidate, now: datetime) -> float:
        """A memory's value: higher is more worth keeping."""
        age = _days(now, candidate.created_at)
        since_use = _days(now, candidate.last_accessed) if candidate.last_accessed else age
        recency = 1.0 / (1.0 + min(age, since_use))
        access = candidate.access_count / max(1.0, age)
        return (
            self.recency_weight * recency
            + self.access_weight * min(1.0, access)
            + self.importance_weight * candidate.importance
        )

    def select_for_removal(
        self, candidates: Sequence[RetentionCandidate], now: datetime
    ) -> list[tuple[str, str]]:
        """Keys to forget so that at most ``max_items_per_user`` remain, lowest value first.

        Pinned memories count toward the total but are never selected.
        """
        cap = self.max_items_per_user
        if cap is None or len(candidates) <= cap:
            return []
        excess = len(candidates) - cap
        scored = sorted((self.value(c, now), c.key) for c in candidates if not c.pinned)
        return [
            (key, f"size cap {cap}: value {value:.3f} among the lowest")
            for value, key in scored[:excess]
        ]
