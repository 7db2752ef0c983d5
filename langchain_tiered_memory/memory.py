"""``TieredMemory``: the facade over the store, the tiers, assembly and write-back.

Examples:
    >>> import tempfile
    >>> from langchain_tiered_memory import TieredMemory
    >>> from langchain_tiered_memory.testing.fakes import HashingEmbeddings
    >>> memory = TieredMemory.open(tempfile.mkdtemp(), embeddings=HashingEmbeddings())
    >>> alice = memory.for_user("alice")
    >>> _ = alice.semantic.store_fact("alice", "Allergic to shellfish", confidence=0.95)
    >>> ctx = alice.build_memory_context("Recommend a restaurant for dinner", token_budget=2000)
    >>> "shellfish" in ctx.text and ctx.tokens <= 2000
    True
    >>> memory.close()
"""

from __future__ import annotations

import asyncio
import inspect
import os
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langgraph.store.base import BaseStore, PutOp

from langchain_tiered_memory.assembly.assembler import AssemblyConfig
from langchain_tiered_memory.consolidation.policy import ForgettingPolicy
from langchain_tiered_memory.embedding_cache import CachedEmbeddings, clear_embedding_cache
from langchain_tiered_memory.embeddings import LocalEmbeddings
from langchain_tiered_memory.erasure import (
    DELETIONS_NAMESPACE,
    ERASURES_NAMESPACE,
    deletion_record,
    erasure_done,
    erasure_marker,
    unfinished_users,
)
from langchain_tiered_memory.erasure_fence import aerasing, call_started, erasing
from langchain_tiered_memory.errors import ConfigurationError, MemoryPathError
from langchain_tiered_memory.export_import import (
    ImportTarget,
    awrite_records,
    export_record,
    jsonl_line,
    read_records,
    write_records,
)
from langchain_tiered_memory.health import acompute_stats, compute_stats
from langchain_tiered_memory.runtime import MemoryRuntime
from langchain_tiered_memory.stores import QdrantMemoryStore
from langchain_tiered_memory.stores.abilities import Closable, Purging
from langchain_tiered_memory.stores.serialized import thread_safe
from langchain_tiered_memory.tiers.common.access import access_counts, asave_access, save_access
from langchain_tiered_memory.tiers.common.scope import (
    ROOT_LABEL,
    MemoryScope,
    label_to_id,
    normalize_id,
)
from langchain_tiered_memory.tiers.episodic.memory import EpisodicConfig
from langchain_tiered_memory.tiers.procedural.memory import ProceduralConfig
from langchain_tiered_memory.tiers.semantic.models import SemanticConfig
from langchain_tiered_memory.tiers.turns.models import LEXICAL_FIELD, TurnsConfig
from langchain_tiered_memory.tokens import TokenCounter
from langchain_tiered_memory.types import utcnow
from langchain_tiered_memory.user_memory import UserMemory
from langchain_tiered_memory.writeback.handlers import register_memory_handlers
from langchain_tiered_memory.writeback.writer import DurableMemoryWriter

__all__ = ["DELETIONS_NAMESPACE", "TieredMemory"]

_PAGE = 1000
_DELETE_CHUNK = 256
_MARKERS = 100_000
"""At most this many unfinished erasures are resumed at once."""


class TieredMemory:
    """Long-term memory for agents: working, episodic, semantic and procedural tiers.

    Build it from parts on any LangGraph ``BaseStore`` with ``TieredMemory(store, ...)``,
    or open the batteries-included default (embedded Qdrant on disk, bundled
    embedding model, offline tokenizer, no LLM) with :meth:`open`.

    Work with one user's memory through :meth:`for_user`. The recommended way to
    write is ``memory.for_user(user_id).queue_remember(text)`` (durable, off the
    hot path); :class:`UserMemory` says when to use ``remember``,
    ``semantic.store_fact``, ``queue_episode`` and ``queue_tool_use`` instead.
    After :meth:`close`, every method except ``close`` raises
    :class:`~langchain_tiered_memory.errors.MemoryClosedError`.

    Args:
        store: Any LangGraph ``BaseStore``; give it a vector index for
            similarity search (``index={"dims": ..., "embed": ...}``).
        embeddings: The embeddings behind the store's index, if you want
            :meth:`stats` and consolidation to know them (optional).
        llm: Optional chat model for LLM extraction, consistency judgement
            and reflection; without one, documented heuristics are used.
        token_counter: Token counter for budgets (default: tiktoken o200k_base, offline).
        writer: A :class:`DurableMemoryWriter` for write-back off the hot path.
        clock: Returns "now" (aware); injectable for tests.
        assembly: How much the context assembler asks each tier for.
        forgetting: The forgetting policy used by consolidation.
        episodic: Settings of the episodic tier (ranking, access counting).
        semantic: Settings of the semantic tier (confidence, staleness, duplicates).
        procedural: Settings of the procedural tier.
        turns: How the conversation-turn tier (``for_user(...).turns``)
            indexes and searches turns.

    Attributes:
        runtime: What every user's memory shares (store, writer, model, clock,
            token counter, configurations, recorded failures); fixed at construction.
        embeddings: The embeddings given to the constructor, or ``None``.
    """

    __slots__ = (
        "__weakref__",
        "_lock",
        "_owns_store",
        "_users",
        "embeddings",
        "runtime",
    )

    def __init__(
        self,
        store: BaseStore,
        *,
        embeddings: Embeddings | None = None,
        llm: BaseChatModel | None = None,
        token_counter: TokenCounter | None = None,
        writer: DurableMemoryWriter | None = None,
        clock: Callable[[], datetime] | None = None,
        assembly: AssemblyConfig | None = None,
        forgetting: ForgettingPolicy | None = None,
        episodic: EpisodicConfig | None = None,
        semantic: SemanticConfig | None = None,
        procedural: ProceduralConfig | None = None,
        turns: TurnsConfig | None = None,
    ) -> None:
        if not isinstance(store, BaseStore):
            raise ConfigurationError(
                f"store must be a langgraph BaseStore, got {type(store).__name__}: use "
                "TieredMemory.open(path) for the default embedded store"
            )
        self.runtime = MemoryRuntime(
            store=thread_safe(store),  # InMemoryStore gets one lock (stores/serialized.py)
            writer=writer,
            llm=llm,
            clock=clock or utcnow,
            token_counter=token_counter or TokenCounter(),
            assembly=assembly or AssemblyConfig(),
            forgetting=forgetting or ForgettingPolicy(),
            episodic_config=episodic,
            semantic_config=semantic,
            procedural_config=procedural,
            turns_config=turns,
        )
        self.embeddings = embeddings
        self._users: dict[MemoryScope, UserMemory] = {}
        self._lock = threading.Lock()
        self._owns_store = False

    @property
    def store(self) -> BaseStore:
        """The store every tier reads and writes (``InMemoryStore`` behind one lock)."""
        return self.runtime.store

    @property
    def writer(self) -> DurableMemoryWriter | None:
        """The durable writer of write-back, or ``None``."""
        return self.runtime.writer

    @property
    def llm(self) -> BaseChatModel | None:
        """The chat model for extraction, judgement and reflection, or ``None``."""
        return self.runtime.llm

    @property
    def clock(self) -> Callable[[], datetime]:
        """Returns "now" (aware)."""
        return self.runtime.clock

    @property
    def token_counter(self) -> TokenCounter:
        """The token counter of budgets."""
        return self.runtime.token_counter

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        embeddings: Embeddings | None = None,
        llm: BaseChatModel | None = None,
        retrieval: str = "hybrid",
        durable_writes: bool = True,
        store_options: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> TieredMemory:
        """Open (or create) a memory directory with the embedded Qdrant engine.

        Args:
            path: The memory directory (store, outbox).
            embeddings: Defaults to the bundled all-MiniLM-L6-v2 (ONNX, offline).
            llm: Optional chat model for extraction, consistency and reflection.
            retrieval: ``"hybrid"`` (dense + BM25), ``"dense"`` or ``"lexical"``.
            durable_writes: Start a :class:`DurableMemoryWriter` on ``path``.
            store_options: More options of
                :meth:`~langchain_tiered_memory.stores.QdrantMemoryStore.embedded`,
                e.g. ``{"full_scan_points": 20_000, "auto_optimize": 50_000}``.
            **kwargs: Passed to the constructor.

        Raises:
            MemoryPathError: ``path`` is empty, is a file, or cannot be created
                (a parent is a file, no permission); nothing was written.
            StoreLockedError: The directory is open in another process.
            ConfigurationError: ``store_options`` names an unknown option or one
                that ``open`` sets itself.
        """
        options = _store_options(store_options)
        root = _memory_dir(path)
        cached = CachedEmbeddings(LocalEmbeddings.default() if embeddings is None else embeddings)
        dims = len(cached.embed_query("dimension probe"))
        store = QdrantMemoryStore.embedded(
            root / "store",
            index={"dims": dims, "embed": cached, "fields": ["text"]},
            retrieval=retrieval,
            # BM25 text of conversation turns; other records keep their embedded text.
            lexical_fields=[LEXICAL_FIELD],
            **options,
        )
        try:
            writer = DurableMemoryWriter(store, root, start=False) if durable_writes else None
        except BaseException:
            store.close()
            raise
        memory = cls(store, embeddings=cached, llm=llm, writer=writer, **kwargs)
        memory._owns_store = True
        memory.runtime.lifecycle.path = str(root)
        try:
            if writer is not None:
                register_memory_handlers(writer, memory.for_user)
                writer.start()
            memory.resume_erasures()
        except BaseException:
            memory.close()
            raise
        return memory

    # -- users -----------------------------------------------------------------------

    def for_user(self, user_id: str, agent_id: str | None = None) -> UserMemory:
        """Everything of one user (optionally one agent); every call through it is scoped.

        Ids are normalised (:func:`~langchain_tiered_memory.tiers.common.scope.normalize_id`):
        Unicode NFC, surrounding whitespace stripped, inner whitespace collapsed
        and lower-cased, so ``for_user("Alice")`` and ``for_user(" alice ")`` are
        the same user, ``"alice"`` (:attr:`UserMemory.user_id`). Keep your own
        display names elsewhere if case matters to you.

        Raises:
            InvalidInputError: ``user_id`` or ``agent_id`` is not a usable id.
            MemoryClosedError: The memory was closed.
        """
        self._check_open("for_user")
        scope = MemoryScope(user_id, agent_id)
        with self._lock:
            if scope not in self._users:
                self._users[scope] = UserMemory(self.runtime, scope)
            return self._users[scope]

    def users(self) -> list[str]:
        """Every user id with memories in the store."""
        self._check_open("users")
        namespaces = self.store.list_namespaces(prefix=(ROOT_LABEL,), max_depth=2, limit=100_000)
        # Some stores keep emptied namespaces listed: a user is one with at least one item.
        return [
            label_to_id(u)
            for u in _user_labels(namespaces)
            if self.store.search((ROOT_LABEL, u), limit=1)
        ]

    async def ausers(self) -> list[str]:
        """Async twin of :meth:`users`."""
        self._check_open("ausers")
        namespaces = await self.store.alist_namespaces(
            prefix=(ROOT_LABEL,), max_depth=2, limit=100_000
        )
        return [
            label_to_id(u)
            for u in _user_labels(namespaces)
            if await self.store.asearch((ROOT_LABEL, u), limit=1)
        ]

    def _check_open(self, method: str) -> None:
        self.runtime.lifecycle.check_open(method)

    # -- export / import -------------------------------------------------------------

    def export_user(self, user_id: str) -> Iterator[dict[str, Any]]:
        """Yield every record of a user (all tiers and agents) as JSON-ready dicts."""
        self._check_open("export_user")
        prefix = MemoryScope(user_id).user_prefix
        return (export_record(item) for item in self.runtime.scan(prefix))

    def aexport_user(self, user_id: str) -> AsyncIterator[dict[str, Any]]:
        """Async twin of :meth:`export_user` (an async iterator: ``async for``)."""
        self._check_open("aexport_user")
        items = self.runtime.ascan(MemoryScope(user_id).user_prefix)
        return (export_record(item) async for item in items)

    def export_jsonl(self, user_id: str, path: str | os.PathLike[str]) -> int:
        """Write :meth:`export_user` to a JSON Lines file; returns the record count."""
        self._check_open("export_jsonl")
        count = 0
        with open(path, "w", encoding="utf-8") as fh:
            for record in self.export_user(user_id):
                fh.write(jsonl_line(record))
                count += 1
        return count

    async def aexport_jsonl(self, user_id: str, path: str | os.PathLike[str]) -> int:
        """Async twin of :meth:`export_jsonl`: the file is written off the event loop."""
        self._check_open("aexport_jsonl")
        fh = await asyncio.to_thread(open, path, "w", encoding="utf-8")
        try:
            count, lines = 0, []
            async for record in self.aexport_user(user_id):
                lines.append(jsonl_line(record))
                count += 1
                if len(lines) >= _PAGE:
                    await asyncio.to_thread(fh.writelines, lines)
                    lines = []
            await asyncio.to_thread(fh.writelines, lines)
        finally:
            await asyncio.to_thread(fh.close)
        return count

    def import_jsonl(
        self,
        path: str | os.PathLike[str],
        *,
        user_id: str | None = None,
        user_map: Mapping[str, str] | None = None,
        keep_file_users: bool = False,
    ) -> int:
        """Load records written by :meth:`export_jsonl` into the users you name.

        Say whose memory the records become: ``user_id="alice"`` imports a
        one-user file (as :meth:`export_jsonl` writes) as alice,
        ``user_map={"old id": "new id"}`` moves each named user, and
        ``keep_file_users=True`` keeps each record's own user (with ``user_map``:
        each user it does not name). The file's user labels are normalised as
        :meth:`for_user` normalises ids, so every imported record is reachable by
        :meth:`for_user`, :meth:`export_user` and :meth:`forget_user`. Records
        keep their content: a fact about the entity ``"old id"`` stays about it.

        Each record keeps its exported ``created_at``/``updated_at`` on stores
        with the :class:`~langchain_tiered_memory.stores.abilities.Restoring`
        ability (both ``QdrantMemoryStore`` engines) and, as a best effort, on
        LangGraph's ``InMemoryStore``; any other store stamps the records with
        the import time (a warning is logged). See
        :mod:`langchain_tiered_memory.export_import`.

        Returns:
            How many records were written.

        Raises:
            InvalidInputError: No target was given, a line is not an export
                record, a record's user is not named (or not a valid id), or
                ``user_id`` was given for a file of several users. The message
                names the file, line and label; nothing is written.
        """
        self._check_open("import_jsonl")
        target = ImportTarget(user_id=user_id, user_map=user_map, keep_file_users=keep_file_users)
        with call_started():
            ops = read_records(path, target)
            write_records(self.store, ops)
        return len(ops)

    async def aimport_jsonl(
        self,
        path: str | os.PathLike[str],
        *,
        user_id: str | None = None,
        user_map: Mapping[str, str] | None = None,
        keep_file_users: bool = False,
    ) -> int:
        """Async twin of :meth:`import_jsonl`."""
        self._check_open("aimport_jsonl")
        target = ImportTarget(user_id=user_id, user_map=user_map, keep_file_users=keep_file_users)
        with call_started():
            ops = read_records(path, target)
            await awrite_records(self.store, ops)
        return len(ops)

    # -- right to be forgotten -------------------------------------------------------

    def _forget_prepare(self, user_id: str) -> tuple[str, tuple[str, ...]]:
        uid = normalize_id(user_id, what="user_id")
        return uid, MemoryScope(uid).user_prefix

    def _forget_finish(self, uid: str, count: int) -> list[PutOp]:
        """Drop cached state of the user; the ops recording the deletion and what is left."""
        with self._lock:
            self._users = {s: u for s, u in self._users.items() if s.user_id != uid}
        config = getattr(self.store, "index_config", None)  # the embeddings of the store's index
        index = config.get("embed") if isinstance(config, dict) else None
        clear_embedding_cache(self.embeddings, index, getattr(self.store, "embeddings", None))
        now = self.clock()
        # On a store that purges, the marker stays (at "purge") until the purge is done.
        purging = isinstance(self.store, Purging)
        last = erasure_marker(uid, "purge", now) if purging else erasure_done(uid)
        return [deletion_record(uid, now, count), last]

    def forget_user(self, user_id: str, *, purge: bool = True) -> int:
        """Delete every record of a user across tiers, agents, trash, audit and outbox.

        Only the fact that a deletion happened is kept (a hash of the user id,
        the time and the count) under :data:`DELETIONS_NAMESPACE`. The user's
        access counts not saved yet are dropped, and none can be saved for them
        afterwards. The query embedding caches of :attr:`embeddings` and of the
        store's index are cleared too (every user's cached queries: the cache does
        not know whose they are; see
        :func:`~langchain_tiered_memory.embedding_cache.clear_embedding_cache`),
        so the user's recent query texts do not stay in process memory.

        With ``purge=True`` (the default) and a store that can purge (one with the
        :class:`~langchain_tiered_memory.stores.abilities.Purging` ability, as the
        embedded Qdrant store has), the call also waits until the deleted
        payloads are gone from the store's files: the store rewrites its shard in a
        child process while reads and writes go on (about 0.3 ms per stored point,
        plus the HNSW build). On a large store, forget several users with
        ``purge=False`` and call :meth:`resume_erasures` once.

        The erasure is journaled (:mod:`~langchain_tiered_memory.erasure`): if the
        process dies part-way, :meth:`resume_erasures` (called by :meth:`open`)
        finishes it, purge included.

        Writes racing the erasure (:mod:`~langchain_tiered_memory.erasure_fence`):
        a write whose call started before this one is refused with
        :class:`~langchain_tiered_memory.errors.UserErasedError` if it reaches the
        store after the erasure began (a queued one is dropped and counted in
        ``writer.stats().erased``); a write that starts while the erasure runs
        waits for it and then lands in the emptied user.

        Returns:
            How many store records were deleted.
        """
        self._check_open("forget_user")
        uid, prefix = self._forget_prepare(user_id)
        self.store.batch([erasure_marker(uid, "delete", self.clock())])  # before anything goes
        if self.writer is not None:
            self.writer.flush()  # outside the fence: the writer thread may wait at it
        with erasing(self.store, prefix):
            if self.writer is not None:
                self.writer.purge(prefix)
            with access_counts(self.store).erasing(prefix):
                ops = [PutOp(tuple(i.namespace), i.key, None) for i in self.runtime.scan(prefix)]
                for start in range(0, len(ops), _DELETE_CHUNK):
                    self.store.batch(ops[start : start + _DELETE_CHUNK])
            self.store.batch(self._forget_finish(uid, len(ops)))
            if purge and isinstance(self.store, Purging):
                self.store.purge_deleted()
                self.store.batch([erasure_done(uid)])
        return len(ops)

    async def aforget_user(self, user_id: str, *, purge: bool = True) -> int:
        """Async twin of :meth:`forget_user`."""
        self._check_open("aforget_user")
        uid, prefix = self._forget_prepare(user_id)
        await self.store.abatch([erasure_marker(uid, "delete", self.clock())])
        if self.writer is not None:
            await self.writer.aflush()
        async with aerasing(self.store, prefix):
            if self.writer is not None:
                await self.writer.apurge(prefix)
            async with access_counts(self.store).aerasing(prefix):
                ops = [
                    PutOp(tuple(i.namespace), i.key, None) async for i in self.runtime.ascan(prefix)
                ]
                for start in range(0, len(ops), _DELETE_CHUNK):
                    await self.store.abatch(ops[start : start + _DELETE_CHUNK])
            await self.store.abatch(self._forget_finish(uid, len(ops)))
            if purge and isinstance(self.store, Purging):
                await self.store.apurge_deleted()
                await self.store.abatch([erasure_done(uid)])
        return len(ops)

    def resume_erasures(self) -> int:
        """Finish every :meth:`forget_user` that did not complete; returns how many.

        A crash during :meth:`forget_user`, or a call with ``purge=False``,
        leaves an erasure marker. This deletes what is left of each such user,
        rewrites the store without the deleted records (when it can purge) and
        removes the markers. :meth:`open` calls it; call it yourself after
        building a ``TieredMemory`` from parts, or to purge after several
        ``forget_user(..., purge=False)``.
        """
        self._check_open("resume_erasures")
        markers = self.store.search(ERASURES_NAMESPACE, limit=_MARKERS)
        if not markers:
            return 0
        for uid in unfinished_users([m.value for m in markers], self.users()):
            self.forget_user(uid, purge=False)
        if isinstance(self.store, Purging):
            self.store.purge_deleted()
        self.store.batch([PutOp(ERASURES_NAMESPACE, m.key, None) for m in markers])
        return len(markers)

    async def aresume_erasures(self) -> int:
        """Async twin of :meth:`resume_erasures`."""
        self._check_open("aresume_erasures")
        markers = await self.store.asearch(ERASURES_NAMESPACE, limit=_MARKERS)
        if not markers:
            return 0
        for uid in unfinished_users([m.value for m in markers], await self.ausers()):
            await self.aforget_user(uid, purge=False)
        if isinstance(self.store, Purging):
            await self.store.apurge_deleted()
        await self.store.abatch([PutOp(ERASURES_NAMESPACE, m.key, None) for m in markers])
        return len(markers)

    # -- health ----------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Operational health: sizes per user and tier, utilisation, staleness, failures.

        A full scan of the store: meant for dashboards and the CLI, not the hot path.
        """
        self._check_open("stats")
        return compute_stats(self.runtime)

    async def astats(self) -> dict[str, Any]:
        """Async twin of :meth:`stats`."""
        self._check_open("astats")
        return await acompute_stats(self.runtime)

    # -- lifecycle -------------------------------------------------------------------

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every queued write-back is applied (no-op without a writer)."""
        self._check_open("flush")
        if self.writer is not None:
            self.writer.flush(timeout)

    async def aflush(self, timeout: float | None = None) -> None:
        """Async twin of :meth:`flush`."""
        self._check_open("aflush")
        if self.writer is not None:
            await self.writer.aflush(timeout)

    def close(self) -> None:
        """Flush write-back, stop the writer, close the store if this object opened it.

        Closing twice is harmless; any other method called afterwards raises
        :class:`~langchain_tiered_memory.errors.MemoryClosedError`.
        """
        if self.runtime.lifecycle.closed:
            return
        try:
            # The writer flushes first, and its handlers still need for_user().
            if self.writer is not None:
                self.writer.close()
        finally:
            self.runtime.lifecycle.close()
            try:
                save_access(self.store)  # access counts of this process, before closing
            finally:
                if self._owns_store and isinstance(self.store, Closable):
                    self.store.close()

    async def aclose(self) -> None:
        """Async twin of :meth:`close`."""
        if self.runtime.lifecycle.closed:
            return
        try:
            if self.writer is not None:
                await self.writer.aclose()
        finally:
            self.runtime.lifecycle.close()
            try:
                await asave_access(self.store)
            finally:
                if self._owns_store and isinstance(self.store, Closable):
                    await self.store.aclose()

    def __enter__(self) -> TieredMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> TieredMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _memory_dir(path: Any) -> Path:
    """The memory directory ``TieredMemory.open`` was given, checked and created."""
    if not isinstance(path, (str, os.PathLike)):
        raise MemoryPathError(
            f"path must be a directory path (str or os.PathLike), got {type(path).__name__} "
            f"{path!r}: pass the directory to keep the memory in, e.g. "
            "TieredMemory.open('./memory')"
        )
    text = os.fsdecode(os.fspath(path))
    if not text.strip():
        raise MemoryPathError(
            f"path {text!r} is empty: pass the directory to keep the memory in, e.g. "
            "TieredMemory.open('./memory') (an empty path would put the store and the "
            "write-back outbox in the current directory)"
        )
    root = Path(text)
    if root.exists() and not root.is_dir():
        raise MemoryPathError(
            f"{root} is a file, not a directory: pass the path of a directory for the memory "
            "(it is created if missing), not the path of a file"
        )
    try:
        root.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as exc:
        raise MemoryPathError(
            f"cannot create the memory directory {root}: part of that path is a file "
            f"({exc.filename or root}): choose a path whose parents are directories"
        ) from exc
    except OSError as exc:
        raise MemoryPathError(
            f"cannot create the memory directory {root}: {exc.strerror or exc}: choose a "
            "directory this process can write to"
        ) from exc
    return root


_OPEN_SETS = ("path", "index", "retrieval", "lexical_fields")
"""Options of ``QdrantMemoryStore.embedded`` that ``TieredMemory.open`` sets itself."""


def _store_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    options = dict(options or {})
    accepted = set(inspect.signature(QdrantMemoryStore.embedded).parameters) - set(_OPEN_SETS)
    taken = sorted(set(options) & set(_OPEN_SETS))
    if taken:
        raise ConfigurationError(
            f"store_options cannot set {', '.join(taken)}: TieredMemory.open sets it "
            "(pass retrieval= to open, or build the store yourself and use TieredMemory(store))"
        )
    unknown = sorted(set(options) - accepted)
    if unknown:
        raise ConfigurationError(
            f"unknown store option {', '.join(unknown)}: use one of {', '.join(sorted(accepted))}"
        )
    return options


def _user_labels(namespaces: Iterable[tuple[str, ...]]) -> list[str]:
    """The user labels (second namespace label) under ``tiered_memory``, sorted, once each."""
    return sorted({ns[1] for ns in namespaces if len(ns) >= 2})
