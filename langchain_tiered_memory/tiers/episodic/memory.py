"""Episodic memory on any LangGraph ``BaseStore``: record, reflect, retrieve, rank.

Every filter runs inside the store; similar episodes are ranked by relevance,
recency and importance (:mod:`~langchain_tiered_memory.tiers.common.ranking`). A
reflector's failure leaves the episode stored with ``reflection_status="pending"``
for :meth:`EpisodicMemory.retry_reflections`. Retrievals count accesses in process
(:mod:`~langchain_tiered_memory.tiers.common.access`). Sync and async methods run
the same plans (:mod:`~langchain_tiered_memory.tiers.common.records`).

Examples:
    >>> from langgraph.store.memory import InMemoryStore
    >>> from langchain_tiered_memory.testing.fakes import HashingEmbeddings
    >>> from langchain_tiered_memory.tiers.common.scope import MemoryScope
    >>> store = InMemoryStore(index={"dims": 384, "embed": HashingEmbeddings(), "fields": ["text"]})
    >>> memory = EpisodicMemory(store, MemoryScope("alice"))
    >>> _ = memory.record(Episode(task_description="Deploy the billing API", outcome="success",
    ...                           reflection="Run the migrations before the deploy."))
    >>> _ = memory.record(Episode(task_description="Bake bread", outcome="failure"))
    >>> best = memory.retrieve_similar("deploy an API", top_k=1)[0]
    >>> best.episode.task_description, best.score.relevance > 0.2
    ('Deploy the billing API', True)
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from langgraph.store.base import BaseStore, GetOp, PutOp, SearchItem, SearchOp

from langchain_tiered_memory.errors import ConfigurationError, InvalidInputError
from langchain_tiered_memory.text import check_top_k
from langchain_tiered_memory.tiers.common.access import CountsAccess, RecordAccess
from langchain_tiered_memory.tiers.common.args import Clock, tier_args
from langchain_tiered_memory.tiers.common.ranking import RankingConfig, rank_candidates
from langchain_tiered_memory.tiers.common.records import (
    Call,
    Plan,
    StoreOps,
    arun_plan,
    run_plan,
    search_all,
)
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.tiers.episodic.models import (
    Episode,
    Outcome,
    Reflection,
    ReflectionStatus,
    ScoredEpisode,
)
from langchain_tiered_memory.tiers.episodic.payload import (
    EMBED_FIELDS,
    TagMode,
    episode_filter,
    episode_from_value,
    episode_to_value,
    episodes_namespace,
    tag_filters,
    validate_episode,
)
from langchain_tiered_memory.tiers.episodic.reflection import EpisodeReflector
from langchain_tiered_memory.types import ensure_aware

__all__ = ["EpisodicConfig", "EpisodicMemory", "ReflectionRetryResult"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EpisodicConfig:
    """Settings of :class:`EpisodicMemory`.

    Args:
        ranking: Weights of relevance, recency and importance, and the half-life.
        candidate_multiplier: ``retrieve_similar`` fetches ``top_k *`` this many
            nearest episodes from the store (at least ``min_candidates``), then
            re-ranks them with recency and importance.
        min_candidates: Lower bound of the candidate pool.
        track_access: Count retrievals per episode (``access_count``, ``last_accessed``)
            for forgetting, with no store I/O; ``get``, the listings and consolidation
            read the counts.
        access_counts_in_results: Also read the counts (this retrieval included) into
            ``retrieve_similar`` / ``retrieve_recent`` results, at a store read per
            retrieval. Off: the results carry ``access_count=0``, ``last_accessed=None``.
        max_reflection_attempts: After this many failed tries an episode's
            reflection is marked ``failed`` and no longer retried automatically.
        recent_windows_hours: Growing time windows ``retrieve_recent`` searches
            until it has enough episodes (then everything).
    """

    ranking: RankingConfig = field(default_factory=RankingConfig)
    candidate_multiplier: int = 4
    min_candidates: int = 20
    track_access: bool = True
    access_counts_in_results: bool = False
    max_reflection_attempts: int = 3
    recent_windows_hours: tuple[float, ...] = (1.0, 24.0, 24.0 * 7, 24.0 * 30, 24.0 * 365)

    def __post_init__(self) -> None:
        if self.candidate_multiplier < 1 or self.min_candidates < 1:
            raise ConfigurationError(
                f"candidate_multiplier={self.candidate_multiplier}, min_candidates="
                f"{self.min_candidates}: both must be >= 1"
            )
        if self.max_reflection_attempts < 1:
            raise ConfigurationError(
                f"max_reflection_attempts={self.max_reflection_attempts}: use at least 1"
            )
        if any(not h > 0 for h in self.recent_windows_hours):
            raise ConfigurationError(
                f"recent_windows_hours={self.recent_windows_hours}: every window must be > 0"
            )


@dataclass(frozen=True)
class ReflectionRetryResult:
    """What :meth:`EpisodicMemory.retry_reflections` did, by episode id."""

    reflected: list[str] = field(default_factory=list)
    still_pending: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


class EpisodicMemory(CountsAccess):
    """One scope's episodes in a ``BaseStore``, searchable by meaning and by time.

    :meth:`retrieve_similar` needs a vector index (the ``text`` field is indexed
    explicitly on every write); everything else works on any store.

    Args:
        store: Any LangGraph ``BaseStore``.
        scope: Whose episodes these are.
        config: Ranking weights and retrieval settings.
        clock: Returns "now" (aware); injectable for tests.

    Examples:
        >>> from langgraph.store.memory import InMemoryStore
        >>> memory = EpisodicMemory(InMemoryStore(), MemoryScope("bob"))
        >>> ep = memory.record(Episode(task_description="Plan trip", outcome="partial",
        ...                            session_id="s1"))
        >>> [e.episode_id for e in memory.get_session_episodes("s1")] == [ep.episode_id]
        True
    """

    def __init__(
        self,
        store: BaseStore,
        scope: MemoryScope,
        *,
        config: EpisodicConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._args = tier_args(store, scope, clock)
        self.store: BaseStore = self._args.store
        self.scope: MemoryScope = self._args.scope
        self.config = config or EpisodicConfig()
        self.namespace = episodes_namespace(scope)
        self.access = RecordAccess(
            self.store,
            scope,
            self._args.clock,
            tier="episodic",
            id_field="episode_id",
            records=self.namespace,
        )

    # ------------------------------------------------------------------ plans

    def _put(self, episode: Episode) -> PutOp:
        return PutOp(
            self.namespace, episode.episode_id, episode_to_value(episode), index=EMBED_FIELDS
        )

    def _record_plan(
        self, episode: Episode | dict[str, Any], reflector: EpisodeReflector | None
    ) -> Plan[Episode]:
        ep = validate_episode(episode, self._args.now())
        if reflector is not None and not ep.reflection.strip():
            ep = ep.model_copy(update={"reflection_status": ReflectionStatus.PENDING})
            yield StoreOps((self._put(ep),))  # stored before any model call: nothing is lost
            return (yield from self._reflect_plan(ep, reflector))
        if ep.reflection.strip() and ep.reflection_status is ReflectionStatus.NONE:
            ep = ep.model_copy(update={"reflection_status": ReflectionStatus.DONE})
        yield StoreOps((self._put(ep),))
        return ep

    def _reflect_plan(self, episode: Episode, reflector: EpisodeReflector) -> Plan[Episode]:
        attempts = episode.reflection_attempts + 1
        try:
            reflection: Reflection = yield Call(
                lambda: reflector.reflect(episode), lambda: reflector.areflect(episode)
            )
        except Exception as exc:
            gave_up = attempts >= self.config.max_reflection_attempts
            status = ReflectionStatus.FAILED if gave_up else ReflectionStatus.PENDING
            logger.warning(
                "reflection of episode %s failed (attempt %d, now %s): %s",
                episode.episode_id,
                attempts,
                status.value,
                exc,
            )
            update: dict[str, Any] = {
                "reflection_status": status,
                "reflection_error": f"{type(exc).__name__}: {exc}",
            }
        else:
            update = {
                "reflection": reflection.to_text(),
                "reflection_detail": reflection,
                "reflection_status": ReflectionStatus.DONE,
                "reflection_error": None,
                "importance": reflection.importance,
            }
        updated = episode.model_copy(update={**update, "reflection_attempts": attempts})
        yield StoreOps((self._put(updated),))
        return updated

    def _access_plan(self, episodes: list[Episode], *, bump: bool) -> Plan[list[Episode]]:
        if not episodes or not self.config.track_access:
            return episodes
        if bump:
            self.access.touch([e.episode_id for e in episodes])
            if not self.config.access_counts_in_results:
                return episodes
        counts = yield from self.access.counts_plan([e.episode_id for e in episodes])
        return self.access.with_counts(episodes, counts)

    def _similar_plan(
        self,
        query: str,
        top_k: int,
        outcome: Outcome | str | None,
        max_age_hours: float | None,
        tags: Sequence[str] | None,
        tag_mode: TagMode,
        session_id: str | None,
    ) -> Plan[list[ScoredEpisode]]:
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError(f"query is {query!r}: pass the situation to match, as text")
        top_k = check_top_k(top_k)
        now = self._args.now()
        since = None
        if max_age_hours is not None:
            if not math.isfinite(max_age_hours) or max_age_hours <= 0:
                raise InvalidInputError(
                    f"max_age_hours is {max_age_hours!r}: use a positive number of hours or None"
                )
            with suppress(OverflowError):  # older than the calendar: no age limit at all
                since = now - timedelta(hours=max_age_hours)
        base = episode_filter(outcome=outcome, since=since, session_id=session_id)
        limit = max(top_k * self.config.candidate_multiplier, self.config.min_candidates)
        filters = tag_filters(base, tags, tag_mode)
        ops = tuple(SearchOp(self.namespace, flt, limit, 0, query) for flt in filters)
        results = yield StoreOps(ops)
        best: dict[str, SearchItem] = {}
        for items in results:
            for item in items:
                kept = best.get(item.key)
                if kept is None or (item.score or 0.0) > (kept.score or 0.0):
                    best[item.key] = item
        if best and all(item.score is None for item in best.values()):
            raise ConfigurationError(
                "the store returned no similarity scores: it has no vector index. Create it "
                "with index={'dims': ..., 'embed': ..., 'fields': ['text']}"
            )
        ranked = rank_candidates(
            [(episode_from_value(item.value), item.score) for item in best.values()],
            similarity=lambda pair: pair[1],
            timestamp=lambda pair: pair[0].created_at,
            importance=lambda pair: pair[0].importance,
            now=now,
            config=self.config.ranking,
        )[:top_k]
        touched = yield from self._access_plan([e for (e, _), _ in ranked], bump=True)
        return [ScoredEpisode(e, s) for e, (_, s) in zip(touched, ranked, strict=True)]

    def _recent_plan(
        self, limit: int, outcome: Outcome | str | None, session_id: str | None
    ) -> Plan[list[Episode]]:
        limit = check_top_k(limit, "limit")
        now = self._args.now()
        items: list[SearchItem] = []
        for hours in (*self.config.recent_windows_hours, None):
            since = None if hours is None else now - timedelta(hours=hours)
            flt = episode_filter(outcome=outcome, since=since, session_id=session_id)
            items = yield from search_all(self.namespace, [flt])
            if len(items) >= limit:
                break
        items.sort(key=_recording_order, reverse=True)
        episodes = [episode_from_value(i.value) for i in items[:limit]]
        return (yield from self._access_plan(episodes, bump=True))

    def _listing_plan(self, filters: list[dict[str, Any]]) -> Plan[list[Episode]]:
        items = yield from search_all(self.namespace, filters)
        items.sort(key=_recording_order)
        episodes = [episode_from_value(i.value) for i in items]
        return (yield from self._access_plan(episodes, bump=False))

    def _range_filters(
        self, start: datetime, end: datetime, tags: Sequence[str] | None, tag_mode: TagMode
    ) -> list[dict[str, Any]]:
        if not isinstance(start, datetime) or not isinstance(end, datetime):
            raise InvalidInputError("start and end must be datetimes")
        if ensure_aware(start) > ensure_aware(end):
            raise InvalidInputError(f"start {start} is after end {end}: swap them")
        return tag_filters(episode_filter(since=start, until=end), tags, tag_mode)

    def _get_plan(self, episode_id: str) -> Plan[Episode | None]:
        (item,) = yield StoreOps((GetOp(self.namespace, episode_id),))
        if item is None:
            return None
        (episode,) = yield from self._access_plan([episode_from_value(item.value)], bump=False)
        return episode

    def _pin_plan(self, episode_id: str, pinned: bool) -> Plan[Episode]:
        if not isinstance(pinned, bool):
            raise InvalidInputError(f"pinned is {pinned!r}: pass True to pin or False to unpin")
        episode = yield from self._get_plan(episode_id)
        if episode is None:
            raise InvalidInputError(
                f"no episode with id {episode_id!r} in this scope: pass an episode_id from "
                "record() or a retrieval of the same user"
            )
        if episode.pinned != pinned:
            episode = episode.model_copy(update={"pinned": pinned})
            yield StoreOps((self._put(episode),))
        return episode

    def _delete_plan(self, episode_id: str) -> Plan[None]:
        yield StoreOps((PutOp(self.namespace, episode_id, None),))
        yield from self.access.delete_plan(episode_id)

    def _pending_plan(self, limit: int) -> Plan[list[Episode]]:
        limit = check_top_k(limit, "limit")
        flt = episode_filter(reflection_status=ReflectionStatus.PENDING.value)
        (items,) = yield StoreOps((SearchOp(self.namespace, flt, limit, 0),))
        return sorted((episode_from_value(i.value) for i in items), key=lambda e: e.created_at)

    def _retry_plan(self, reflector: EpisodeReflector, limit: int) -> Plan[ReflectionRetryResult]:
        pending = yield from self._pending_plan(limit)
        result = ReflectionRetryResult()
        for episode in pending:
            updated = yield from self._reflect_plan(episode, reflector)
            bucket = {
                ReflectionStatus.DONE: result.reflected,
                ReflectionStatus.FAILED: result.failed,
            }.get(updated.reflection_status, result.still_pending)
            bucket.append(updated.episode_id)
        return result

    # ------------------------------------------------------------------ public API

    def record(
        self, episode: Episode | dict[str, Any], *, reflector: EpisodeReflector | None = None
    ) -> Episode:
        """Store an episode; with ``reflector``, then reflect on it (if it has no reflection).

        Returns:
            The episode as stored (status, reflection and importance filled in).

        Raises:
            InvalidInputError: The episode is invalid; nothing was stored.
        """
        return run_plan(self.store, self._record_plan(episode, reflector))

    async def arecord(
        self, episode: Episode | dict[str, Any], *, reflector: EpisodeReflector | None = None
    ) -> Episode:
        """Async twin of :meth:`record`."""
        return await arun_plan(self.store, self._record_plan(episode, reflector))

    def get(self, episode_id: str) -> Episode | None:
        """The episode with this id, or ``None``."""
        return run_plan(self.store, self._get_plan(episode_id))

    async def aget(self, episode_id: str) -> Episode | None:
        """Async twin of :meth:`get`."""
        return await arun_plan(self.store, self._get_plan(episode_id))

    def pin_episode(self, episode_id: str, pinned: bool = True) -> Episode:
        """Pin a recorded episode (``pinned=False``: unpin it); pinned episodes are never forgotten.

        Args:
            episode_id: The episode's id (``Episode.episode_id``).
            pinned: ``True`` to pin, ``False`` to unpin.

        Returns:
            The episode as stored now, with its access statistics.

        Raises:
            InvalidInputError: No episode has this id in this scope, or ``pinned`` is not a bool.
        """
        return run_plan(self.store, self._pin_plan(episode_id, pinned))

    async def apin_episode(self, episode_id: str, pinned: bool = True) -> Episode:
        """Async twin of :meth:`pin_episode`."""
        return await arun_plan(self.store, self._pin_plan(episode_id, pinned))

    def delete(self, episode_id: str) -> None:
        """Delete an episode and its access statistics (no error if it is absent)."""
        run_plan(self.store, self._delete_plan(episode_id))

    async def adelete(self, episode_id: str) -> None:
        """Async twin of :meth:`delete`."""
        await arun_plan(self.store, self._delete_plan(episode_id))

    def retrieve_similar(
        self,
        query: str,
        top_k: int = 5,
        *,
        outcome: Outcome | str | None = None,
        max_age_hours: float | None = None,
        tags: Sequence[str] | None = None,
        tag_mode: TagMode = "any",
        session_id: str | None = None,
    ) -> list[ScoredEpisode]:
        """Episodes similar to ``query``, ranked by relevance, recency and importance.

        Args:
            query: The current situation, as text.
            top_k: How many to return.
            outcome: Only episodes with this outcome.
            max_age_hours: Only episodes created within this many hours.
            tags: Only episodes with any (``tag_mode="any"``) or all of these tags.
            tag_mode: ``"any"`` or ``"all"``.
            session_id: Only episodes of this session.

        Returns:
            Best first; each with its :class:`ScoreBreakdown`.
        """
        plan = self._similar_plan(query, top_k, outcome, max_age_hours, tags, tag_mode, session_id)
        return run_plan(self.store, plan)

    async def aretrieve_similar(
        self,
        query: str,
        top_k: int = 5,
        *,
        outcome: Outcome | str | None = None,
        max_age_hours: float | None = None,
        tags: Sequence[str] | None = None,
        tag_mode: TagMode = "any",
        session_id: str | None = None,
    ) -> list[ScoredEpisode]:
        """Async twin of :meth:`retrieve_similar`."""
        plan = self._similar_plan(query, top_k, outcome, max_age_hours, tags, tag_mode, session_id)
        return await arun_plan(self.store, plan)

    def retrieve_recent(
        self,
        limit: int = 10,
        *,
        outcome: Outcome | str | None = None,
        session_id: str | None = None,
    ) -> list[Episode]:
        """The most recent episodes, newest first (searched in growing time windows)."""
        return run_plan(self.store, self._recent_plan(limit, outcome, session_id))

    async def aretrieve_recent(
        self,
        limit: int = 10,
        *,
        outcome: Outcome | str | None = None,
        session_id: str | None = None,
    ) -> list[Episode]:
        """Async twin of :meth:`retrieve_recent`."""
        return await arun_plan(self.store, self._recent_plan(limit, outcome, session_id))

    def get_episodes_in_range(
        self,
        start: datetime,
        end: datetime,
        tags: Sequence[str] | None = None,
        *,
        tag_mode: TagMode = "any",
    ) -> list[Episode]:
        """Episodes created in ``[start, end]`` (with any/all of ``tags``), oldest first."""
        plan = self._listing_plan(self._range_filters(start, end, tags, tag_mode))
        return run_plan(self.store, plan)

    async def aget_episodes_in_range(
        self,
        start: datetime,
        end: datetime,
        tags: Sequence[str] | None = None,
        *,
        tag_mode: TagMode = "any",
    ) -> list[Episode]:
        """Async twin of :meth:`get_episodes_in_range`."""
        plan = self._listing_plan(self._range_filters(start, end, tags, tag_mode))
        return await arun_plan(self.store, plan)

    def get_session_episodes(self, session_id: str) -> list[Episode]:
        """Every episode of one session, oldest first."""
        plan = self._listing_plan([episode_filter(session_id=session_id)])
        return run_plan(self.store, plan)

    async def aget_session_episodes(self, session_id: str) -> list[Episode]:
        """Async twin of :meth:`get_session_episodes`."""
        plan = self._listing_plan([episode_filter(session_id=session_id)])
        return await arun_plan(self.store, plan)

    def pending_reflections(self, limit: int = 100) -> list[Episode]:
        """Episodes whose reflection is still to be done, oldest first."""
        return run_plan(self.store, self._pending_plan(limit))

    async def apending_reflections(self, limit: int = 100) -> list[Episode]:
        """Async twin of :meth:`pending_reflections`."""
        return await arun_plan(self.store, self._pending_plan(limit))

    def retry_reflections(
        self, reflector: EpisodeReflector, limit: int = 100
    ) -> ReflectionRetryResult:
        """Reflect on pending episodes again; failures stay pending until the attempt limit."""
        return run_plan(self.store, self._retry_plan(reflector, limit))

    async def aretry_reflections(
        self, reflector: EpisodeReflector, limit: int = 100
    ) -> ReflectionRetryResult:
        """Async twin of :meth:`retry_reflections`."""
        return await arun_plan(self.store, self._retry_plan(reflector, limit))


def _recording_order(item: SearchItem) -> tuple[float, float, str]:
    """Creation time, then when the store got it (episodes stamped with one fake time), then key."""
    return (float(item.value.get("created_ts", 0.0)), item.created_at.timestamp(), item.key)
