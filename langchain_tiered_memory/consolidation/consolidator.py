"""Consolidation: extract, learn, merge, forget, in one resumable pass over one user's memory.

The steps are those of ``docs/concepts/consolidation.md``. Episodes whose ``context``
says ``facts_extracted`` or ``tool_uses_recorded`` (the agent did it at write-back)
skip that step. A cursor saved after every episode lets an interrupted pass resume;
each run's record feeds :meth:`TieredMemory.stats`.

Examples:
    >>> from langgraph.store.memory import InMemoryStore
    >>> from langchain_tiered_memory import TieredMemory, Episode
    >>> alice = TieredMemory(InMemoryStore()).for_user("alice")
    >>> _ = alice.episodic.record(Episode(task_description="Book dinner; I'm vegetarian.",
    ...                                   outcome="success"))
    >>> report = MemoryConsolidator(alice).consolidate()
    >>> report.episodes_processed, report.facts_extracted >= 1
    (1, True)
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from langgraph.store.base import PutOp

from langchain_tiered_memory.assembly.conflicts import word_set_similarity
from langchain_tiered_memory.consolidation.policy import ForgettingPolicy, RetentionCandidate
from langchain_tiered_memory.erasure_fence import writing
from langchain_tiered_memory.tiers.episodic.models import Episode
from langchain_tiered_memory.tiers.procedural.models import ToolUsageRecord
from langchain_tiered_memory.tiers.semantic.models import Fact, fact_to_value
from langchain_tiered_memory.types import ensure_aware

if TYPE_CHECKING:
    from langchain_tiered_memory.runtime import UserTiers

__all__ = ["ConsolidationReport", "MemoryConsolidator", "ProgressCallback"]

logger = logging.getLogger(__name__)

ProgressCallback = Callable[[str, int, int], None]
"""Called as ``progress(phase, done, total)``."""

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_CURSOR_KEY = "cursor"


@dataclass
class ConsolidationReport:
    """What one consolidation pass did."""

    episodes_processed: int = 0
    facts_extracted: int = 0
    tool_uses_recorded: int = 0
    facts_merged: int = 0
    forgotten: list[tuple[str, str]] = field(default_factory=list)
    purged: int = 0
    errors: list[str] = field(default_factory=list)
    resumed_from: str | None = None

    @property
    def ok(self) -> bool:
        """True when no step failed."""
        return not self.errors


def _tool_steps(episode: Episode) -> list[ToolUsageRecord]:
    records = []
    for i, step in enumerate(episode.trajectory):
        action = step.action.strip()
        if not action.lower().startswith("tool_call:"):
            continue
        name = action.split(":", 1)[1].strip().split("(")[0].strip()
        if not name:
            continue
        failed = "error" in step.observation.lower() or "fail" in step.observation.lower()
        records.append(
            ToolUsageRecord(
                tool_name=name,
                context=episode.task_description,
                success=not failed,
                error_message=step.observation if failed else "",
                timestamp=step.timestamp,
                record_id=uuid.uuid5(uuid.NAMESPACE_OID, f"{episode.episode_id}:{i}").hex,
            )
        )
    return records


class MemoryConsolidator:
    """Runs consolidation passes over one user's memory.

    Args:
        user: The user's memory (from ``TieredMemory.for_user``).
        policy: Forgetting rules (default: the memory's ``forgetting`` policy).
        duplicate_threshold: Word-set similarity at which two facts of one
            entity count as duplicates.
    """

    def __init__(
        self,
        user: UserTiers,
        *,
        policy: ForgettingPolicy | None = None,
        duplicate_threshold: float = 0.85,
    ) -> None:
        self.user = user
        self.runtime = user.runtime
        self.policy = policy or self.runtime.forgetting
        self.duplicate_threshold = duplicate_threshold
        self.store = self.runtime.store
        self.clock = self.runtime.clock
        self.namespace = user.scope.namespace("_consolidation")
        self.runs_namespace = user.scope.namespace("_consolidation", "runs")

    # -- phases --------------------------------------------------------------------

    def _process_episodes(self, report: ConsolidationReport, progress: ProgressCallback) -> None:
        since, done_at_since = _EPOCH, set()
        cursor = self.store.get(self.namespace, _CURSOR_KEY)
        if cursor is not None:
            since = ensure_aware(datetime.fromisoformat(cursor.value["at"]))
            done_at_since = set(cursor.value["ids"])
            report.resumed_from = since.isoformat()
        episodes = [
            e
            for e in self.user.episodic.get_episodes_in_range(since, self.clock())
            if e.episode_id not in done_at_since
        ]
        for n, episode in enumerate(episodes, 1):
            try:
                if not episode.context.get("facts_extracted"):
                    text = "\n".join(filter(None, [episode.task_description, episode.reflection]))
                    result = self.user.semantic.remember_from_text(text, episode.episode_id)
                    report.facts_extracted += len(result.writes)
                    report.errors.extend(
                        f"extract {episode.episode_id}: {e}" for e in result.errors
                    )
                recorded = episode.context.get("tool_uses_recorded")
                for record in [] if recorded else _tool_steps(episode):
                    self.user.procedural.record_tool_use(record)
                    report.tool_uses_recorded += 1
            except Exception as exc:
                logger.warning("consolidating episode %s failed: %r", episode.episode_id, exc)
                report.errors.append(f"episode {episode.episode_id}: {type(exc).__name__}: {exc}")
                raise
            at = ensure_aware(episode.created_at)
            done_at_since = (done_at_since if at == since else set()) | {episode.episode_id}
            since = at
            cursor_value = {"at": since.isoformat(), "ids": sorted(done_at_since)}
            with writing(self.store, [self.namespace]):
                self.store.put(self.namespace, _CURSOR_KEY, cursor_value, index=False)
            report.episodes_processed += 1
            progress("episodes", n, len(episodes))

    def _current_facts(self) -> list[Fact]:
        facts: list[Fact] = []
        for entity in self.user.semantic.list_entities(limit=10_000):
            facts.extend(self.user.semantic.get_facts(entity.entity_id))
        return facts

    def _fresh_pair(self, keep: Fact, other: Fact) -> tuple[Fact, Fact] | None:
        """Both duplicates as stored now, or ``None`` if either is no longer one."""
        semantic = self.user.semantic
        fresh_keep, fresh_other = semantic.get_fact(keep.fact_id), semantic.get_fact(other.fact_id)
        if fresh_keep is None or fresh_other is None or fresh_other.pinned:
            return None
        if not (fresh_keep.is_current and fresh_other.is_current):
            return None
        if word_set_similarity(fresh_keep.content, fresh_other.content) < self.duplicate_threshold:
            return None
        return fresh_keep, fresh_other

    def _merge_duplicates(self, report: ConsolidationReport, progress: ProgressCallback) -> None:
        facts = self._current_facts()
        by_entity: dict[tuple[str, str | None], list[Fact]] = {}
        for fact in facts:
            by_entity.setdefault((fact.entity_id, fact.slot_key), []).append(fact)
        facts_ns = self.user.scope.namespace("semantic", "facts")
        gone: set[str] = set()
        groups = list(by_entity.values())
        for n, group in enumerate(groups, 1):
            # Pinned facts first: a pinned fact is kept (gaining the duplicate's
            # provenance), never merged away.
            group.sort(key=lambda f: (not f.pinned, -f.confidence, f.first_observed))
            for i, keep in enumerate(group):
                if keep.fact_id in gone:
                    continue
                for other in group[i + 1 :]:
                    if other.fact_id in gone or other.pinned:
                        continue
                    if word_set_similarity(keep.content, other.content) < self.duplicate_threshold:
                        continue
                    # Merge what is stored now, not the snapshot: a write made since
                    # (a confirmation adding provenance) must not be overwritten.
                    fresh = self._fresh_pair(keep, other)
                    if fresh is None:
                        continue  # changed meanwhile; the next pass looks again
                    keep, other = fresh
                    merged = keep.model_copy(
                        update={
                            "source_episode_ids": sorted(
                                set(keep.source_episode_ids) | set(other.source_episode_ids)
                            ),
                            "confidence": max(keep.confidence, other.confidence),
                            "first_observed": min(keep.first_observed, other.first_observed),
                            "last_confirmed": max(keep.last_confirmed, other.last_confirmed),
                        }
                    )
                    put = PutOp(facts_ns, keep.fact_id, fact_to_value(merged), index=["content"])
                    with writing(self.store, [facts_ns]):
                        self.store.batch([put])
                    keep = merged
                    self.user.trash.soft_delete(
                        facts_ns, other.fact_id, reason=f"merged into duplicate {keep.fact_id}"
                    )
                    gone.add(other.fact_id)
                    report.facts_merged += 1
            progress("merge", n, len(groups))

    def _forget(self, report: ConsolidationReport, progress: ProgressCallback) -> None:
        now = self.clock()
        episodic, semantic = self.user.episodic, self.user.semantic
        episodes = episodic.get_episodes_in_range(_EPOCH, now + timedelta(days=1))
        facts = self._current_facts()
        facts_ns = self.user.scope.namespace("semantic", "facts")
        verdicts: list[tuple[tuple[str, ...], str, str]] = []
        for ep in episodes:
            why = self.policy.episode_verdict(
                outcome=ep.outcome.value,
                has_reflection=bool(ep.reflection),
                created_at=ep.created_at,
                now=now,
                pinned=ep.pinned,
            )
            if why:
                verdicts.append((episodic.namespace, ep.episode_id, why))
        for fact in facts:
            why = self.policy.fact_verdict(
                confidence=fact.confidence,
                last_confirmed=fact.last_confirmed,
                contradiction_count=fact.contradiction_count,
                now=now,
                pinned=fact.pinned,
            )
            if why:
                verdicts.append((facts_ns, fact.fact_id, why))
        doomed = {key for _, key, _ in verdicts}
        candidates = [
            RetentionCandidate(
                f"e:{ep.episode_id}",
                ep.created_at,
                access_count=ep.access_count,
                importance=ep.importance,
                pinned=ep.pinned,
                last_accessed=ep.last_accessed,
            )
            for ep in episodes
            if ep.episode_id not in doomed
        ] + [
            RetentionCandidate(
                f"f:{f.fact_id}",
                f.first_observed,
                access_count=f.access_count,
                importance=f.confidence,
                pinned=f.pinned,
                last_accessed=max(f.last_confirmed, f.last_accessed or f.last_confirmed),
            )
            for f in facts
            if f.fact_id not in doomed
        ]
        for key, why in self.policy.select_for_removal(candidates, now):
            kind, ident = key.split(":", 1)
            verdicts.append((episodic.namespace if kind == "e" else facts_ns, ident, why))
        judged: dict[tuple[tuple[str, ...], str], Episode | Fact] = {
            (episodic.namespace, ep.episode_id): ep for ep in episodes
        } | {(facts_ns, f.fact_id): f for f in facts}
        for n, (ns, key, why) in enumerate(verdicts, 1):
            # Only what is still as judged: a memory confirmed, accessed or pinned
            # since the snapshot above is kept (the next pass judges it again).
            stored = episodic.get(key) if ns == episodic.namespace else semantic.get_fact(key)
            if stored == judged[(ns, key)] and self.user.trash.soft_delete(ns, key, reason=why):
                report.forgotten.append((f"{ns[-1]}:{key}", why))
            progress("forget", n, len(verdicts))
        report.purged = self.user.trash.purge_expired(self.policy.grace_period_days)

    # -- entry points ----------------------------------------------------------------

    def consolidate(self, progress: ProgressCallback | None = None) -> ConsolidationReport:
        """Run one pass; resumes after an interrupted one. Failures are in the report."""
        report = ConsolidationReport()
        started = self.clock()
        tick: ProgressCallback = progress or (lambda phase, done, total: None)
        try:
            self._process_episodes(report, tick)
            self._merge_duplicates(report, tick)
            self._forget(report, tick)
        except Exception as exc:
            if not report.errors:
                report.errors.append(f"{type(exc).__name__}: {exc}")
            self.runtime.record_error("consolidation", exc)
        finally:
            run: dict[str, Any] = asdict(report) | {
                "ok": report.ok,
                "started": started.isoformat(),
                "finished": self.clock().isoformat(),
            }
            with writing(self.store, [self.runs_namespace]):
                self.store.put(self.runs_namespace, uuid.uuid4().hex, run, index=False)
        return report

    async def aconsolidate(self, progress: ProgressCallback | None = None) -> ConsolidationReport:
        """Async twin of :meth:`consolidate` (runs the pass in a worker thread)."""
        return await asyncio.to_thread(self.consolidate, progress)
