"""One user's memory (from :meth:`TieredMemory.for_user`): every tier scoped to that user.

Examples:
    >>> from langchain_tiered_memory import TieredMemory
    >>> from langgraph.store.memory import InMemoryStore
    >>> memory = TieredMemory(InMemoryStore())
    >>> alice = memory.for_user("alice")
    >>> _ = alice.remember("I'm allergic to shellfish.")
    >>> "shellfish" in alice.build_memory_context("Dinner ideas?", token_budget=300).text
    True
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from langchain_tiered_memory.assembly.assembler import ContextAssembler
from langchain_tiered_memory.assembly.convert import fact_item
from langchain_tiered_memory.assembly.items import MemoryContext, MemoryItem
from langchain_tiered_memory.consolidation.consolidator import (
    ConsolidationReport,
    MemoryConsolidator,
    ProgressCallback,
)
from langchain_tiered_memory.consolidation.trash import MemoryTrash
from langchain_tiered_memory.erasure_fence import call_started
from langchain_tiered_memory.errors import InvalidInputError
from langchain_tiered_memory.runtime import MemoryRuntime
from langchain_tiered_memory.text import cap_query, check_top_k, check_unicode, word_overlap
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.tiers.episodic.memory import EpisodicMemory
from langchain_tiered_memory.tiers.episodic.models import Episode
from langchain_tiered_memory.tiers.episodic.payload import validate_episode
from langchain_tiered_memory.tiers.procedural.memory import ProceduralMemory
from langchain_tiered_memory.tiers.procedural.models import ToolUsageRecord
from langchain_tiered_memory.tiers.procedural.stats import validate_tool_use
from langchain_tiered_memory.tiers.semantic.memory import SemanticMemory
from langchain_tiered_memory.tiers.semantic.results import RememberResult
from langchain_tiered_memory.tiers.semantic.rules import validate_remember
from langchain_tiered_memory.tiers.turns.memory import ConversationTurns
from langchain_tiered_memory.writeback.handlers import episode_op, remember_op, tool_use_op
from langchain_tiered_memory.writeback.ops import WriteOp, WriteReceipt

__all__ = ["ForgetResult", "UserMemory"]


@dataclass(frozen=True)
class ForgetResult:
    """What :meth:`UserMemory.forget` moved to the trash."""

    forgotten: list[MemoryItem]

    def __bool__(self) -> bool:
        return bool(self.forgotten)


class UserMemory:
    """All tiers of one user (and optional agent), plus context assembly.

    **Writing memories.** The recommended write path is :meth:`queue_remember`:
    it checks the text, commits it to the durable write-back outbox and returns
    at once, and the facts are extracted and stored off the hot path (directly
    when the memory has no writer; :meth:`TieredMemory.flush` waits for them).
    Use the others when they fit better:

    * :meth:`remember`: the facts must be stored before the next line (scripts,
      tests) or you want the :class:`RememberResult` of what was stored;
    * ``semantic.store_fact(...)``: you already hold one structured fact with
      a confidence (no extraction);
    * :meth:`queue_episode` and :meth:`queue_tool_use`: task episodes and tool
      records, the same way;
    * in an agent, :func:`~langchain_tiered_memory.create_memory_agent` or
      :class:`~langchain_tiered_memory.integrations.middleware.TieredMemoryMiddleware`
      writes every turn for you (its memory tools use :meth:`queue_remember`).

    Every method raises :class:`~langchain_tiered_memory.errors.MemoryClosedError`
    once the memory it came from is closed.

    Args:
        runtime: The shared parts of the memory (``TieredMemory.runtime``).
        scope: Whose memory this is.

    Attributes:
        runtime: The shared parts of the memory this user belongs to.
        scope: Whose memory this is.
        episodic: Episodes: trajectories, outcomes, reflections.
        semantic: Entities and facts.
        procedural: Tool statistics, strategies, preferences.
        turns: Conversation turns, verbatim, searchable by question.
        trash: Soft-deleted memories and the audit trail.
    """

    def __init__(self, runtime: MemoryRuntime, scope: MemoryScope) -> None:
        self.runtime = runtime
        self.scope = scope
        store, clock = runtime.store, runtime.clock
        self.episodic = EpisodicMemory(store, scope, config=runtime.episodic_config, clock=clock)
        self.semantic = SemanticMemory(
            store, scope, llm=runtime.llm, clock=clock, config=runtime.semantic_config
        )
        self.procedural = ProceduralMemory(
            store, scope, config=runtime.procedural_config, clock=clock
        )
        self.turns = ConversationTurns(store, scope, config=runtime.turns_config, clock=clock)
        self.trash = MemoryTrash(store, scope, clock=clock)
        self.assembler = ContextAssembler(
            episodic=self.episodic,
            semantic=self.semantic,
            procedural=self.procedural,
            counter=runtime.token_counter,
            entity_id=scope.user_id,
            config=runtime.assembly,
            on_error=lambda name, exc: runtime.record_error(f"retrieval.{name}", exc),
            turns=self.turns,
        )

    @property
    def user_id(self) -> str:
        """The (normalised) user id."""
        return self.scope.user_id

    def __repr__(self) -> str:
        return f"UserMemory(user_id={self.scope.user_id!r}, agent_id={self.scope.agent_id!r})"

    # -- context -------------------------------------------------------------------

    def build_memory_context(self, query: str, token_budget: int = 2000) -> MemoryContext:
        """Assemble the memory injection for ``query`` within ``token_budget`` tokens.

        A query longer than :data:`~langchain_tiered_memory.text.MAX_QUERY_CHARS`
        characters is cut to that length; ``MemoryContext.notes`` says so.

        Raises:
            InvalidInputError: ``query`` is not a string, is empty or blank, or is
                not valid Unicode.
        """
        self.runtime.lifecycle.check_open("build_memory_context")
        checked, note = _check_query(query, "build_memory_context")
        return _noted(self.assembler.build(checked, token_budget), note)

    async def abuild_memory_context(self, query: str, token_budget: int = 2000) -> MemoryContext:
        """Async twin of :meth:`build_memory_context`."""
        self.runtime.lifecycle.check_open("abuild_memory_context")
        checked, note = _check_query(query, "abuild_memory_context")
        return _noted(await self.assembler.abuild(checked, token_budget), note)

    # -- convenience writes ---------------------------------------------------------

    def remember(self, text: str, source_episode_id: str | None = None) -> RememberResult:
        """Extract facts from what the user said and store them (cheap path first)."""
        self.runtime.lifecycle.check_open("remember")
        return self.semantic.remember_from_text(text, source_episode_id)

    async def aremember(self, text: str, source_episode_id: str | None = None) -> RememberResult:
        """Async twin of :meth:`remember`."""
        self.runtime.lifecycle.check_open("aremember")
        return await self.semantic.aremember_from_text(text, source_episode_id)

    # -- write-back off the hot path ---------------------------------------------------

    def _queue(
        self, method: str, direct: Callable[[], object], op: Callable[[], WriteOp]
    ) -> WriteReceipt | None:
        """Submit ``op()`` (it validates before the ack); with no writer, run ``direct()``."""
        self.runtime.lifecycle.check_open(method)
        with call_started():  # the erasure fence counts the call from here
            writer = self.runtime.writer
            if writer is None:
                direct()
                return None
            return writer.submit(op())

    async def _aqueue(
        self, method: str, direct: Callable[[], Awaitable[object]], op: Callable[[], WriteOp]
    ) -> WriteReceipt | None:
        """Async twin of :meth:`_queue`."""
        self.runtime.lifecycle.check_open(method)
        with call_started():
            writer = self.runtime.writer
            if writer is None:
                await direct()
                return None
            return await writer.asubmit(op())

    def _episode_op(self, episode: Episode) -> WriteOp:
        checked = validate_episode(episode, self.runtime.clock())
        return episode_op(self.scope, checked.model_dump(mode="json"))

    def _remember_op(self, text: str, source_episode_id: str | None) -> WriteOp:
        return remember_op(
            self.scope, validate_remember(text, source_episode_id), source_episode_id
        )

    def _tool_use_op(self, record: ToolUsageRecord) -> WriteOp:
        return tool_use_op(self.scope, validate_tool_use(record).model_dump(mode="json"))

    def queue_episode(self, episode: Episode) -> WriteReceipt | None:
        """Record ``episode`` through the durable writer (directly when there is none).

        The episode is validated as :meth:`EpisodicMemory.record` validates it,
        before the write is acknowledged.

        Raises:
            InvalidInputError: The episode is invalid or too large; nothing is queued.
        """
        direct, op = partial(self.episodic.record, episode), partial(self._episode_op, episode)
        return self._queue("queue_episode", direct, op)

    async def aqueue_episode(self, episode: Episode) -> WriteReceipt | None:
        """Async twin of :meth:`queue_episode`."""
        direct, op = partial(self.episodic.arecord, episode), partial(self._episode_op, episode)
        return await self._aqueue("aqueue_episode", direct, op)

    def queue_remember(
        self, text: str, source_episode_id: str | None = None
    ) -> WriteReceipt | None:
        """Extract and store facts from ``text`` through the durable writer.

        Raises:
            InvalidInputError: ``text`` is refused as :meth:`remember` refuses it
                (blank, not valid Unicode, over ``MAX_TEXT_CHARS``); nothing is queued.
        """
        op = partial(self._remember_op, text, source_episode_id)
        return self._queue("queue_remember", partial(self.remember, text, source_episode_id), op)

    async def aqueue_remember(
        self, text: str, source_episode_id: str | None = None
    ) -> WriteReceipt | None:
        """Async twin of :meth:`queue_remember`."""
        direct = partial(self.aremember, text, source_episode_id)
        op = partial(self._remember_op, text, source_episode_id)
        return await self._aqueue("aqueue_remember", direct, op)

    def queue_tool_use(self, record: ToolUsageRecord) -> WriteReceipt | None:
        """Record a tool use through the durable writer (directly when there is none).

        Raises:
            InvalidInputError: The record is invalid or too large; nothing is queued.
        """
        direct = partial(self.procedural.record_tool_use, record)
        return self._queue("queue_tool_use", direct, partial(self._tool_use_op, record))

    async def aqueue_tool_use(self, record: ToolUsageRecord) -> WriteReceipt | None:
        """Async twin of :meth:`queue_tool_use`."""
        direct = partial(self.procedural.arecord_tool_use, record)
        return await self._aqueue("aqueue_tool_use", direct, partial(self._tool_use_op, record))

    # -- consolidation -----------------------------------------------------------------

    def consolidate(self, progress: ProgressCallback | None = None) -> ConsolidationReport:
        """Run a consolidation pass (extract, learn, merge, forget); resumable.

        Afterwards the access counts of the user's episodes and facts counted in
        this process are saved.
        """
        self.runtime.lifecycle.check_open("consolidate")
        with call_started():  # a pass begun before a forget of the user stores nothing after it
            report = MemoryConsolidator(self).consolidate(progress)
        self.episodic.flush_access()
        self.semantic.flush_access()
        return report

    async def aconsolidate(self, progress: ProgressCallback | None = None) -> ConsolidationReport:
        """Async twin of :meth:`consolidate`."""
        self.runtime.lifecycle.check_open("aconsolidate")
        with call_started():
            report = await MemoryConsolidator(self).aconsolidate(progress)
        await self.episodic.aflush_access()
        await self.semantic.aflush_access()
        return report

    # -- search and forget (also the agent's memory tools) ---------------------------

    @staticmethod
    def _search_items(ctx: MemoryContext, top_k: int) -> list[MemoryItem]:
        # Scores equal to 9 decimals are ties (kept in context order), so float noise
        # (0.75 on one engine, 0.7500000000000002 on another) cannot reorder results.
        items = ctx.items + [d.item for d in ctx.dropped]
        return sorted(items, key=lambda i: -round(i.score, 9))[:top_k]

    def search(self, query: str, top_k: int = 5) -> list[MemoryItem]:
        """Memories of every tier related to ``query``, best first (no budget applied).

        Only the first :data:`~langchain_tiered_memory.text.MAX_QUERY_CHARS`
        characters of ``query`` are used.

        Raises:
            InvalidInputError: ``query`` is empty, blank or not valid Unicode, or
                ``top_k`` is not a positive int.
        """
        self.runtime.lifecycle.check_open("search")
        check_top_k(top_k)
        checked, _ = _check_query(query, "search")
        return self._search_items(self.assembler.build(checked, token_budget=100_000), top_k)

    async def asearch(self, query: str, top_k: int = 5) -> list[MemoryItem]:
        """Async twin of :meth:`search`."""
        self.runtime.lifecycle.check_open("asearch")
        check_top_k(top_k)
        checked, _ = _check_query(query, "asearch")
        ctx = await self.assembler.abuild(checked, token_budget=100_000)
        return self._search_items(ctx, top_k)

    @staticmethod
    def _forget_targets(query: str, hits: list[Any], min_overlap: float) -> list[Any]:
        # The search before this has refused a query that is not a non-blank string.
        return [
            h for h in hits if h.fact is not None and word_overlap(query, h.text) >= min_overlap
        ]

    def forget(self, query: str, *, min_overlap: float = 0.5, limit: int = 3) -> ForgetResult:
        """Soft-delete the facts that match ``query`` (restorable from :attr:`trash`).

        Candidates come from semantic search; one is forgotten only when at least
        ``min_overlap`` of the content words of the shorter of query and fact are
        shared, so "forget that I'm allergic to shellfish" removes "Allergic to
        shellfish" but never an unrelated fact that merely ranked first (search
        scores are not comparable across retrieval modes, word overlap is).
        """
        self.runtime.lifecycle.check_open("forget")
        hits = self._forget_targets(
            query, self.semantic.semantic_search(query, top_k=limit), min_overlap
        )
        ns, why = self.scope.namespace("semantic", "facts"), f"user asked to forget: {query}"
        gone = [h for h in hits if self.trash.soft_delete(ns, h.fact.fact_id, reason=why)]
        return ForgetResult([_fact_to_item(h) for h in gone])

    async def aforget(
        self, query: str, *, min_overlap: float = 0.5, limit: int = 3
    ) -> ForgetResult:
        """Async twin of :meth:`forget`."""
        self.runtime.lifecycle.check_open("aforget")
        hits = self._forget_targets(
            query, await self.semantic.asemantic_search(query, top_k=limit), min_overlap
        )
        ns, why = self.scope.namespace("semantic", "facts"), f"user asked to forget: {query}"
        gone = [h for h in hits if await self.trash.asoft_delete(ns, h.fact.fact_id, reason=why)]
        return ForgetResult([_fact_to_item(h) for h in gone])


def _fact_to_item(hit: Any) -> MemoryItem:
    return fact_item(hit.fact, section="knowledge", score=hit.score or 0.0, breakdown={})


def _noted(ctx: MemoryContext, note: str | None) -> MemoryContext:
    if note is not None:
        ctx.notes.append(note)
    return ctx


def _check_query(query: Any, method: str) -> tuple[str, str | None]:
    """The query to use (non-blank, valid Unicode, cut to ``MAX_QUERY_CHARS``) and a cut note."""
    if not isinstance(query, str):
        raise InvalidInputError(
            f"{method} needs the query as a string, got {type(query).__name__}: pass the "
            "user's message or the question to find memories for"
        )
    if not query.strip():
        raise InvalidInputError(
            f"{method} needs a non-empty query, got {query!r}: pass the user's message or the "
            "question to find memories for (skip memory retrieval when there is none)"
        )
    return cap_query(check_unicode(query, f"the query of {method}"))
