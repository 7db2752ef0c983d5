"""``QdrantMemoryStore``: a LangGraph ``BaseStore`` on Qdrant, embedded or client.

Engines, retrieval modes and scores (in ``[0, 1]``, higher is better): ``docs/store.md``.
``lexical_fields=`` BM25-indexes other value fields than the embedded ones, with repeat
weights. BM25 document frequencies count the points under the searched namespace prefix
(``lexical_idf="namespace"``: a user's scores never depend on other users' memories) or
the whole collection (``"global"``: constant time per query term). A dense search whose
filter keeps at most ``full_scan_points`` points scans them exactly (:mod:`.search_walk`).
Only ``distance_type="cosine"`` is accepted in ``index``.

Limits: values are JSON dicts of at most 1 MiB (compact UTF-8 JSON), nested at
most 32 levels; namespace labels are non-empty strings without ``.`` or NUL.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from langgraph.store.base import (
    NOT_PROVIDED,
    BaseStore,
    IndexConfig,
    Item,
    NamespacePath,
    NotProvided,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)

from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.plans import arun_plan, run_plan
from langchain_tiered_memory.stores.edge.build import EdgeOptimizers
from langchain_tiered_memory.stores.edge.engine import EdgeEngine
from langchain_tiered_memory.stores.edge.optimizer import (
    OptimizationReport,
    OptimizationStatus,
    Progress,
)
from langchain_tiered_memory.stores.fusion import IN_UNIT, FusionConfig
from langchain_tiered_memory.stores.plan import Planner, RetrievalMode, check_namespace
from langchain_tiered_memory.stores.requests import (
    EmbedDocuments,
    EmbedQueries,
    LexicalIdf,
    Optimize,
    Plan,
)
from langchain_tiered_memory.stores.restore import RestoreOp, restore_plan
from langchain_tiered_memory.stores.search_walk import FullScan
from langchain_tiered_memory.stores.versions import NamespaceVersions
from langchain_tiered_memory.types import utcnow

if TYPE_CHECKING:  # qdrant-client takes seconds to import: only when a client is used
    from qdrant_client import AsyncQdrantClient, QdrantClient

    from langchain_tiered_memory.stores.engine_client import ClientEngine

__all__ = ["DISTANCE_TYPES", "QdrantMemoryStore", "check_distance_type", "check_unit_fusion"]

T = TypeVar("T")


class QdrantMemoryStore(BaseStore):
    """A LangGraph store on Qdrant with hybrid search, namespaces, TTL, sync and async.

    Build it with :meth:`embedded` (a directory on disk), :meth:`from_client`
    or :meth:`from_url`. Namespace prefixes are filtered inside the engine
    through a payload index; point ids are uuid5 of (namespace, key), so writes
    are idempotent.

    Examples:
        >>> import tempfile
        >>> from langchain_tiered_memory.testing.fakes import HashingEmbeddings
        >>> index = {"dims": 64, "embed": HashingEmbeddings(size=64), "fields": ["text"]}
        >>> with QdrantMemoryStore.embedded(tempfile.mkdtemp(), index=index) as store:
        ...     store.put(("memories", "alice"), "m1", {"text": "Alice is allergic to shellfish"})
        ...     store.put(("memories", "alice"), "m2", {"text": "Alice lives in Lisbon"})
        ...     hits = store.search(("memories", "alice"), query="shellfish allergy", limit=1)
        ...     hits[0].key
        'm1'
    """

    supports_ttl = True

    @property
    def concurrent_reads(self) -> bool:
        """Whether reads from several threads overlap (callers may then fan out).

        False on the embedded engine (qdrant-edge-py holds the GIL while it
        searches, so threads only queue); True on a server.
        """
        return not isinstance(self.engine, EdgeEngine)

    def prefetch_query(self, query: str) -> bool:
        """Start embedding ``query`` for a search to come, on a background thread.

        Works when the index's embeddings can prefetch (a
        :class:`~langchain_tiered_memory.embedding_cache.CachedEmbeddings`) and
        retrieval is not lexical; returns whether it did. Searches of ``query``
        started together then share one embedding.
        """
        prefetch = getattr(self._planner.embeddings, "prefetch", None)
        if self._planner.retrieval == "lexical" or not callable(prefetch):
            return False
        prefetch(query)
        return True

    def __init__(
        self,
        engine: EdgeEngine | ClientEngine,
        *,
        index: IndexConfig | None = None,
        retrieval: RetrievalMode | str = "hybrid",
        collection: str = "memories",
        ttl: TTLConfig | None = None,
        clock: Callable[[], datetime] | None = None,
        fusion: FusionConfig | None = None,
        lexical_fields: Sequence[str] | Mapping[str, int] | None = None,
        lexical_idf: LexicalIdf = "namespace",
        full_scan_points: FullScan = "auto",
        owns_engine: bool = True,
    ) -> None:
        """Wrap an engine; prefer the ``embedded``/``from_client``/``from_url`` constructors."""
        if not isinstance(collection, str) or not collection or "/" in collection:
            raise ConfigurationError(
                f"collection must be a non-empty name without '/', got {collection!r}"
            )
        check_distance_type(index)
        check_unit_fusion(fusion)
        self._planner = Planner(
            collection=collection,
            index=index,
            retrieval=retrieval,
            ttl=ttl,
            clock=clock or utcnow,
            lexical_fields=lexical_fields,
            lexical_idf=lexical_idf,
            full_scan_points=full_scan_points,
            estimate=bool(getattr(engine, "estimates", False)),
            **({} if fusion is None else {"fusion": fusion}),
        )
        self.index_config = index
        self.ttl_config = ttl
        self.engine = engine
        self._async_only = bool(getattr(engine, "is_async", False))  # an AsyncQdrantClient
        self._owns_engine = owns_engine
        self._ready = False
        self._versions = NamespaceVersions()

    # ----------------------------------------------------------- constructors
    @classmethod
    def embedded(
        cls,
        path: str | os.PathLike[str],
        *,
        index: IndexConfig | None = None,
        retrieval: RetrievalMode | str = "hybrid",
        collection: str = "memories",
        ttl: TTLConfig | None = None,
        clock: Callable[[], datetime] | None = None,
        fusion: FusionConfig | None = None,
        lexical_fields: Sequence[str] | Mapping[str, int] | None = None,
        lexical_idf: LexicalIdf = "namespace",
        full_scan_points: FullScan = "auto",
        optimizers: EdgeOptimizers | None = None,
        auto_optimize: int | None = None,
    ) -> QdrantMemoryStore:
        """Open (or create) a store in directory ``path`` with the embedded Qdrant Edge engine.

        ``optimizers`` (:class:`EdgeOptimizers`) is saved in the store.
        ``auto_optimize=N`` starts a background optimisation (:meth:`start_optimize`)
        each time N points were written since the store was opened or last
        optimised (off by default; ``50_000`` suits a busy store).

        Raises:
            StoreLockedError: The path is open in another process or store.
            ConfigurationError: The store holds vectors of another size.
        """
        store = cls(
            EdgeEngine(Path(path), optimizers=optimizers, auto_optimize=auto_optimize),
            index=index,
            retrieval=retrieval,
            collection=collection,
            ttl=ttl,
            clock=clock,
            fusion=fusion,
            lexical_fields=lexical_fields,
            lexical_idf=lexical_idf,
            full_scan_points=full_scan_points,
        )
        store.setup()
        return store

    @classmethod
    def from_client(
        cls,
        client: QdrantClient | AsyncQdrantClient,
        *,
        index: IndexConfig | None = None,
        retrieval: RetrievalMode | str = "hybrid",
        collection: str = "memories",
        ttl: TTLConfig | None = None,
        clock: Callable[[], datetime] | None = None,
        fusion: FusionConfig | None = None,
        lexical_fields: Sequence[str] | Mapping[str, int] | None = None,
        lexical_idf: LexicalIdf = "namespace",
        full_scan_points: FullScan = "auto",
    ) -> QdrantMemoryStore:
        """A store on an existing client (not closed by :meth:`close`).

        A sync ``QdrantClient`` serves both sync and async methods; an
        ``AsyncQdrantClient`` serves only the async ones (``abatch``, ``aput``, ...)
        and is set up on first use.
        """
        from qdrant_client import AsyncQdrantClient, QdrantClient

        from langchain_tiered_memory.stores.engine_client import ClientEngine

        if not isinstance(client, (QdrantClient, AsyncQdrantClient)):
            raise ConfigurationError(
                "from_client needs a QdrantClient or AsyncQdrantClient, got "
                f"{type(client).__name__}"
            )
        store = cls(
            ClientEngine(client, collection),
            index=index,
            retrieval=retrieval,
            collection=collection,
            ttl=ttl,
            clock=clock,
            fusion=fusion,
            lexical_fields=lexical_fields,
            lexical_idf=lexical_idf,
            full_scan_points=full_scan_points,
            owns_engine=False,
        )
        if not isinstance(client, AsyncQdrantClient):
            store.setup()
        return store

    @classmethod
    def from_url(cls, url: str, api_key: str | None = None, **kw: Any) -> QdrantMemoryStore:
        """A store with its own ``QdrantClient`` for ``url`` (closed by :meth:`close`).

        ``api_key`` defaults to the ``QDRANT_API_KEY`` environment variable. The
        options of :meth:`from_client` are taken from ``kw``; the rest go to
        ``QdrantClient``.
        """
        from qdrant_client import QdrantClient

        names = inspect.signature(cls.from_client).parameters.keys() - {"client"}
        options = {k: kw.pop(k) for k in names if k in kw}

        key = api_key if api_key is not None else os.environ.get("QDRANT_API_KEY")
        client = QdrantClient(location=url, api_key=key, **kw)
        store = cls.from_client(client, **options)
        store._owns_engine = True
        return store

    # ---------------------------------------------------------------- drivers
    def _execute(self, request: Any) -> Any:
        embeddings = self._planner.embeddings
        if isinstance(request, EmbedDocuments) and embeddings is not None:
            return embeddings.embed_documents(request.texts)
        if isinstance(request, EmbedQueries) and embeddings is not None:
            return [embeddings.embed_query(text) for text in request.texts]
        return self.engine.execute(request)

    async def _aexecute(self, request: Any) -> Any:
        embeddings = self._planner.embeddings
        if isinstance(request, EmbedDocuments) and embeddings is not None:
            return await embeddings.aembed_documents(request.texts)
        if isinstance(request, EmbedQueries) and embeddings is not None:
            return [await embeddings.aembed_query(text) for text in request.texts]
        engine: Any = self.engine  # only async clients get here
        return await engine.aexecute(request)

    def _run(self, plan: Plan[T], method: str = "abatch") -> T:
        if self._async_only:
            plan.close()
            raise ConfigurationError(
                f"this store wraps an AsyncQdrantClient: use the async method ({method}) "
                "or pass a sync QdrantClient"
            )
        if not self._ready:
            run_plan(self._planner.setup_plan(), self._execute)
            self._ready = True
        return run_plan(plan, self._execute)

    async def _arun(self, make_plan: Callable[[], Plan[T]]) -> T:
        if not self._async_only:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(None, lambda: self._run(make_plan()))
        if not self._ready:
            await arun_plan(self._planner.setup_plan(), self._aexecute)
            self._ready = True
        return await arun_plan(make_plan(), self._aexecute)

    # ------------------------------------------------------------- lifecycle
    def setup(self) -> None:
        """Create the collection and payload indexes if missing, and check them; idempotent."""
        self._run(self._planner.setup_plan(), "asetup")  # sets _ready

    async def asetup(self) -> None:
        """Async twin of :meth:`setup`."""
        await self._arun(self._planner.setup_plan)

    def close(self) -> None:
        """Release the engine (the embedded directory lock, an owned client); idempotent."""
        if self._owns_engine and not self._async_only:
            self.engine.close()

    async def aclose(self) -> None:
        """Async twin of :meth:`close`."""
        if not self._owns_engine:
            return
        if isinstance(self.engine, EdgeEngine):
            await asyncio.get_running_loop().run_in_executor(None, self.engine.close)
        else:
            await self.engine.aclose()

    def __enter__(self) -> QdrantMemoryStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> QdrantMemoryStore:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # ------------------------------------------------------------ operations
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute a batch of get/search/list/put operations (reads see the state before writes)."""
        ops = list(ops)
        with self._versions.bumped_after(_written(ops)):
            return self._run(self._planner.batch_plan(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async twin of :meth:`batch`."""
        ops = list(ops)
        with self._versions.bumped_after(_written(ops)):
            return await self._arun(lambda: self._planner.batch_plan(ops))

    def namespace_version(self, namespace_prefix: tuple[str, ...]) -> Hashable | None:
        """A token that stays equal while no item under ``namespace_prefix`` changes.

        Read it *before* reading the items: a result computed from them can be
        kept under the token and reused while a later call returns an equal one.
        Tokens move after every put or delete under the prefix through this store.
        Returns None when the store cannot see every change: a client engine (other
        writers), a store holding items with a TTL (they expire without a write),
        or before the store's first operation.

        Examples:
            >>> import tempfile
            >>> with QdrantMemoryStore.embedded(tempfile.mkdtemp()) as store:
            ...     store.put(("alice", "notes"), "n1", {"text": "hello"})
            ...     before = store.namespace_version(("alice",))
            ...     store.put(("bob", "notes"), "n1", {"text": "hi"})
            ...     unchanged = store.namespace_version(("alice",)) == before
            ...     store.put(("alice", "notes"), "n2", {"text": "hi"})
            ...     unchanged, store.namespace_version(("alice",)) == before
            (True, False)
        """
        if not self._ready or not isinstance(self.engine, EdgeEngine) or not self.engine.ttl_free:
            return None
        return self._versions.token(tuple(namespace_prefix))

    @overload
    def optimize(self, *, background: Literal[True] = True) -> OptimizationStatus: ...
    @overload
    def optimize(self, *, background: Literal[False]) -> bool: ...
    def optimize(self, *, background: bool = True) -> bool | OptimizationStatus:
        """Build HNSW graphs, vacuum and merge segments (embedded engine), without stalling.

        Nothing requires it: until it has run, searches are exact scans of the
        points matching the (indexed) filter; it pays off for large stores. By
        default it runs in the background (:meth:`start_optimize`) and returns an
        :class:`OptimizationStatus` at once. ``background=False`` runs it in this
        process and returns True if anything changed; ``qdrant-edge`` holds the GIL
        meanwhile, so every other thread stalls (minutes for large stores): ask for
        it only when the process is idle. On a server both are no-ops.

        Examples:
            >>> import tempfile
            >>> with QdrantMemoryStore.embedded(tempfile.mkdtemp()) as store:
            ...     store.put(("alice", "notes"), "n1", {"text": "hello"})
            ...     status = store.optimize()  # returns at once
            ...     report = status.result(timeout=120)
            ...     store.get(("alice", "notes"), "n1").value
            {'text': 'hello'}
        """
        if background:
            return self.start_optimize()
        return bool(self._run(_single(Optimize()), "aoptimize"))

    @overload
    async def aoptimize(self, *, background: Literal[True] = True) -> OptimizationStatus: ...
    @overload
    async def aoptimize(self, *, background: Literal[False]) -> bool: ...
    async def aoptimize(self, *, background: bool = True) -> bool | OptimizationStatus:
        """Async twin of :meth:`optimize`."""
        if background:
            return self.start_optimize()
        return bool(await self._arun(lambda: _single(Optimize())))

    def start_optimize(
        self, *, purge: bool = False, progress: Progress | None = None
    ) -> OptimizationStatus:
        """Optimise in the background without stalling reads or writes; returns at once.

        Embedded engine: a child process builds an optimised copy of the shard;
        writes made meanwhile are replayed into it, then it is swapped in. Writes
        wait while the shard is copied and both reads and writes wait for the swap
        (milliseconds). A crash at any point loses no acknowledged write. A store
        made before segments were laid out by namespace is purged once, whatever
        ``purge`` says. On a server the status is already done (``"skipped"``).

        Args:
            purge: Also remove deleted items' data from disk.
            progress: Called with each phase name, from the background thread.

        Returns:
            A handle: ``status.result()`` waits for the report.
        """
        edge = self._edge()
        if edge is None:
            return OptimizationStatus.finished_without_work(
                "the Qdrant server optimises and vacuums its collections by itself"
            )
        return edge.start_optimize(purge=purge, progress=progress)

    def purge_deleted(self, timeout: float | None = None) -> OptimizationReport:
        """Remove the data of deleted items from disk now, and optimise (embedded engine).

        Deleting an item hides it at once, but Qdrant Edge keeps its payload in
        segment files and its write-ahead log until they are rewritten. This
        rewrites the shard from its live points in a child process (reads and
        writes go on), builds HNSW graphs, and returns when the old files are
        deleted: call it after deleting personal data, not after every delete.
        On a server it returns at once (the server vacuums itself).

        Raises:
            BackendError: The rewrite failed; the store kept its data.
            TimeoutError: It did not finish within ``timeout`` seconds.
        """
        return self.start_optimize(purge=True).result(timeout)

    async def apurge_deleted(self, timeout: float | None = None) -> OptimizationReport:
        """Async twin of :meth:`purge_deleted`."""
        return await self.start_optimize(purge=True).aresult(timeout)

    def warm(self) -> int:
        """Read the store's files into the operating system's page cache (embedded engine).

        A search that touches pages not cached reads them from disk (about 1 ms
        per hit's payload). Call this after opening a large store in a long-running
        process, off the request path. On a server it does nothing and returns 0.

        Returns:
            The number of bytes read.

        Examples:
            >>> import tempfile
            >>> with QdrantMemoryStore.embedded(tempfile.mkdtemp()) as store:
            ...     store.put(("notes",), "n1", {"text": "hello"})
            ...     store.warm() > 0
            True
        """
        edge = self._edge()
        return 0 if edge is None else edge.warm()

    async def awarm(self) -> int:
        """Async twin of :meth:`warm` (the files are read in a worker thread)."""
        return await asyncio.to_thread(self.warm)

    def _edge(self) -> EdgeEngine | None:
        if not isinstance(self.engine, EdgeEngine):
            return None
        if not self._ready:
            self.setup()
        return self.engine

    def sweep_ttl(self) -> int:
        """Delete every expired item now; return how many expired items were deleted.

        The count is taken just before the deletion, so a call that deletes or
        refreshes one of those items at the same moment can make it one too high.
        """
        with self._versions.bumped_after(None):
            return self._run(self._planner.sweep_plan(), "asweep_ttl")

    async def asweep_ttl(self) -> int:
        """Async twin of :meth:`sweep_ttl`."""
        with self._versions.bumped_after(None):
            return await self._arun(self._planner.sweep_plan)

    def _search_plan(
        self,
        namespace_prefix: tuple[str, ...],
        query: str | None,
        filter: dict[str, Any] | None,
        limit: int,
        offset: int,
        refresh_ttl: bool | None,
        retrieval: RetrievalMode | None,
    ) -> Plan[list[Result]]:
        prefix = check_namespace(namespace_prefix, allow_empty=True)
        if refresh_ttl is None:  # LangGraph's default: the TTL config's refresh_on_read
            refresh_ttl = (self.ttl_config or {}).get("refresh_on_read", True)
        op = SearchOp(prefix, filter, limit, offset, query, refresh_ttl)
        return self._planner.batch_plan([op], {0: retrieval} if retrieval is not None else None)

    def search(  # type: ignore[override]
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
        retrieval: RetrievalMode | None = None,
    ) -> list[SearchItem]:
        """Search items under a namespace prefix; ``retrieval`` overrides the store's mode."""
        args = (namespace_prefix, query, filter, limit, offset, refresh_ttl, retrieval)
        return self._run(self._search_plan(*args), "asearch")[0]  # type: ignore[return-value]

    async def asearch(  # type: ignore[override]
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
        retrieval: RetrievalMode | None = None,
    ) -> list[SearchItem]:
        """Async twin of :meth:`search`."""
        args = (namespace_prefix, query, filter, limit, offset, refresh_ttl, retrieval)
        return (await self._arun(lambda: self._search_plan(*args)))[0]  # type: ignore[return-value]

    # Namespace checks that raise NamespaceError before LangGraph's own checks.
    def get(
        self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None
    ) -> Item | None:
        """Get one item, or None if missing or expired."""
        return super().get(check_namespace(namespace), key, refresh_ttl=refresh_ttl)

    async def aget(
        self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None
    ) -> Item | None:
        """Async twin of :meth:`get`."""
        return await super().aget(check_namespace(namespace), key, refresh_ttl=refresh_ttl)

    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> None:
        """Store or replace one item (``ttl`` in minutes)."""
        super().put(check_namespace(namespace), key, value, index, ttl=ttl)

    async def aput(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> None:
        """Async twin of :meth:`put`."""
        await super().aput(check_namespace(namespace), key, value, index, ttl=ttl)

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        """Delete one item (no error if missing)."""
        super().delete(check_namespace(namespace), key)

    async def adelete(self, namespace: tuple[str, ...], key: str) -> None:
        """Async twin of :meth:`delete`."""
        await super().adelete(check_namespace(namespace), key)

    def list_namespaces(
        self,
        *,
        prefix: NamespacePath | None = None,
        suffix: NamespacePath | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        """List namespaces holding live items (``*`` wildcards allowed in prefix/suffix)."""
        _check_paths(prefix, suffix)
        return super().list_namespaces(
            prefix=prefix, suffix=suffix, max_depth=max_depth, limit=limit, offset=offset
        )

    async def alist_namespaces(
        self,
        *,
        prefix: NamespacePath | None = None,
        suffix: NamespacePath | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        """Async twin of :meth:`list_namespaces`."""
        _check_paths(prefix, suffix)
        return await super().alist_namespaces(
            prefix=prefix, suffix=suffix, max_depth=max_depth, limit=limit, offset=offset
        )

    def restore_items(self, ops: Iterable[RestoreOp]) -> int:
        """Write items back with their own ``created_at``/``updated_at`` (import, restore).

        Unlike :meth:`put`, nothing is stamped with the current time: each item
        keeps the times of its :class:`~.restore.RestoreOp`, and newest-first
        order follows ``updated_at``. Restored items get no TTL. All ops are
        validated and embedded before the first write.

        Returns:
            How many items were written (one per namespace and key).

        Raises:
            InvalidInputError: An op has a bad namespace, key, value or timestamp;
                nothing was written.

        Examples:
            >>> import tempfile
            >>> from datetime import datetime, timezone
            >>> from langchain_tiered_memory.stores.restore import RestoreOp
            >>> when = datetime(2024, 5, 1, tzinfo=timezone.utc)
            >>> with QdrantMemoryStore.embedded(tempfile.mkdtemp()) as store:
            ...     store.restore_items([RestoreOp(("docs",), "a", {"n": 1}, when, when)])
            ...     store.get(("docs",), "a").updated_at == when
            1
            True
        """
        ops = list(ops)
        with self._versions.bumped_after(op.namespace for op in ops):
            return int(self._run(restore_plan(self._planner, ops), "arestore_items"))

    async def arestore_items(self, ops: Iterable[RestoreOp]) -> int:
        """Async twin of :meth:`restore_items`."""
        ops = list(ops)
        with self._versions.bumped_after(op.namespace for op in ops):
            return int(await self._arun(lambda: restore_plan(self._planner, ops)))


DISTANCE_TYPES = ("cosine",)
"""``IndexConfig["distance_type"]`` values this store honours (``"cosine"``, the default)."""


def check_distance_type(index: IndexConfig | None) -> None:
    """Refuse an index ``distance_type`` the store would not honour (it searches by cosine only).

    Raises:
        ConfigurationError: ``distance_type`` is not ``"cosine"``.

    Example:
        >>> check_distance_type({"distance_type": "cosine"})  # type: ignore
        >>> check_distance_type({"distance_type": "l2"})  # type: ignore  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        langchain_tiered_memory.errors.ConfigurationError: index distance_type 'l2' is not ...
    """
    distance = dict(index or {}).get("distance_type")
    if distance is not None and distance not in DISTANCE_TYPES:
        raise ConfigurationError(
            f"index distance_type {distance!r} is not supported: QdrantMemoryStore searches "
            "by cosine similarity; remove distance_type or set it to 'cosine' (normalise "
            "your vectors if you relied on l2 or inner_product: then all three rank alike)"
        )


def check_unit_fusion(fusion: FusionConfig | None) -> None:
    """Refuse a hybrid fusion whose scores would leave ``[0, 1]``.

    Raises:
        ConfigurationError: A retriever is normalised by ``"zscore"`` or ``"none"``.
    """
    if not isinstance(fusion, FusionConfig) or fusion.method != "score":
        return  # None is the default; the planner reports a wrong type; RRF scores are in [0, 1]
    for name in ("dense", "lexical"):
        method = fusion.method_of(name)
        if method not in IN_UNIT:
            raise ConfigurationError(
                f"fusion normalization {method!r} for {name!r} gives scores outside [0, 1]: "
                "use 'cosine' (dense), 'saturate' (lexical), 'minmax' or 'max'"
            )


def _check_paths(*paths: NamespacePath | None) -> None:
    for path in paths:
        if path is not None:
            check_namespace(path, allow_empty=True)


def _written(ops: Sequence[Op]) -> set[tuple[str, ...]]:
    """The namespaces a batch puts or deletes items in, each once (valid ones only)."""
    return {
        tuple(op.namespace)
        for op in ops
        if isinstance(op, PutOp) and all(type(label) is str for label in op.namespace)
    }


def _single(request: Any) -> Plan[Any]:
    return (yield request)
