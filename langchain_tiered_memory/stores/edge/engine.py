"""The embedded engine: a Qdrant Edge shard on disk (``qdrant-edge-py``).

One directory per collection, ``<path>/<collection>`` (its layout, and the recovery
rule applied on open: :mod:`.files`), locked while open (:mod:`.lock`). The
write-ahead log is never disabled (without it a second handle silently loses writes).
Qdrant Edge holds the GIL while it runs, so the async driver runs whole plans in a
worker thread; HNSW graphs are built by ``Optimize`` (in-process: every thread
stalls) or by :meth:`EdgeEngine.start_optimize` (a child process: :mod:`.optimizer`).
Value filters are answered from payload indexes only; a float index on
``value.<path>`` is created the first time a filter ranges over it.

Examples:
    >>> import tempfile
    >>> from langchain_tiered_memory.stores.requests import Collection, Count, Setup
    >>> from langchain_tiered_memory.stores.filters import Where
    >>> engine = EdgeEngine(tempfile.mkdtemp())
    >>> engine.execute(Setup(Collection("memories", dims=None)))
    >>> engine.execute(Count(Where()))
    0
    >>> engine.close()
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from langchain_tiered_memory.errors import BackendError, ConfigurationError
from langchain_tiered_memory.stores import filters as f
from langchain_tiered_memory.stores import requests as rq
from langchain_tiered_memory.stores.edge.build import (
    EdgeOptimizers,
    VectorNames,
    edge_config,
    index_schema,
    relink_operations,
    tenant_layout,
)
from langchain_tiered_memory.stores.edge.files import (
    META,
    create_generation,
    has_shard,
    recover,
)
from langchain_tiered_memory.stores.edge.integrity import replace_file
from langchain_tiered_memory.stores.edge.live import (
    LiveShard,
    build_bytes,
    check_build_space,
    release_freed_memory,
)
from langchain_tiered_memory.stores.edge.lock import CollectionLock, locked_error
from langchain_tiered_memory.stores.edge.optimizer import (
    BackgroundOptimization,
    OptimizationStatus,
    Progress,
)
from langchain_tiered_memory.stores.edge.warm import read_files
from langchain_tiered_memory.stores.sparse import SparseVec

__all__ = ["EdgeEngine"]

_NAMES = VectorNames(dense=rq.DENSE, sparse=rq.SPARSE)
logger = logging.getLogger(__name__)


_LEAVES: dict[type, Callable[[Any], Any]] = {
    f.Match: lambda c: qe.FieldCondition(c.key, match=qe.MatchValue(c.value)),
    f.Range: lambda c: qe.FieldCondition(
        c.key, range=qe.RangeFloat(gte=c.gte, gt=c.gt, lte=c.lte, lt=c.lt)
    ),
}


def _filter(where: f.Where) -> qe.Filter:
    return f.lower(where, qe.Filter, _LEAVES)


def _sparse(vec: SparseVec) -> qe.SparseVector:
    return qe.SparseVector(list(vec.indices), list(vec.values))


def _query(q: rq.Query) -> qe.QueryRequest:
    flt = _filter(q.filter)
    payload = list(q.fields) or False  # no fields: ids and scores only
    query: Any
    params = None
    if q.mode == "recent":
        query = qe.OrderBy("updated_us", direction=qe.Direction.Desc)
    elif q.mode == "dense":
        assert q.dense is not None
        query = qe.Query.Nearest([q.dense], using=rq.DENSE)
        if q.exact or q.acorn:
            acorn = qe.AcornSearchParams(enable=True) if q.acorn and not q.exact else None
            params = qe.SearchParams(exact=q.exact, acorn=acorn)
    else:
        assert q.sparse is not None
        query = qe.Query.Nearest(_sparse(q.sparse), using=rq.SPARSE)
        if q.idf_corpus is not None:  # IDF over these points only (deleted ones never count)
            params = qe.SearchParams(idf=qe.IdfParams(corpus=_filter(q.idf_corpus)))
    return qe.QueryRequest(
        limit=q.limit, query=query, filter=flt, with_payload=payload, params=params
    )


def _translate(exc: Exception, path: Path, lock: CollectionLock | None = None) -> Exception:
    text = str(exc)
    if "WAL" in text and ("WouldBlock" in text or "lock" in text.lower()):
        return locked_error(path, lock.holder() if lock is not None else None)
    return BackendError(f"Qdrant Edge failed on {path}: {text}")


def _write_op(request: Any) -> qe.UpdateOperation | None:
    """The shard update for a write request, or None for a read."""
    if isinstance(request, rq.Upsert):
        return qe.UpdateOperation.upsert_points(
            [qe.Point(p.id, p.vectors(_sparse), p.payload) for p in request.points]
        )
    if isinstance(request, rq.Delete):
        return qe.UpdateOperation.delete_points(list(request.ids))
    if isinstance(request, rq.DeleteWhere):
        return qe.UpdateOperation.delete_points_by_filter(_filter(request.filter))
    if isinstance(request, rq.SetPayload):
        flt = qe.Filter(must=[qe.HasIdCondition({uuid.UUID(i) for i in request.ids})])
        return qe.UpdateOperation.set_payload_by_filter(flt, request.payload)
    return None


def _ensure_indexes(shard: qe.EdgeShard) -> None:
    """Create the keyword and integer payload indexes the shard lacks.

    A layout key added to a shard holding points is left unflagged (not laid out yet).
    """
    info = shard.info()
    schema, holds_points = info.payload_schema, info.points_count > 0
    for names, kind in (
        (rq.KEYWORD_INDEXES, qe.PayloadSchemaType.Keyword),
        (rq.INTEGER_INDEXES, qe.PayloadSchemaType.Integer),
    ):
        for name in names:
            if name not in schema:
                index = index_schema(name, kind, tenant=False if holds_points else None)
                shard.update(qe.UpdateOperation.create_field_index(name, index))


def _make_empty(path: Path, config: qe.EdgeConfig) -> None:
    shard = qe.EdgeShard.create(str(path), config)
    try:
        _ensure_indexes(shard)
        shard.flush()
    finally:
        shard.close()


class EdgeEngine:
    """Executes engine-neutral requests on a Qdrant Edge shard.

    Args:
        path: Directory of the store; each collection is a sub-directory.
        optimizers: Optimizer settings written to the shard config (``None``
            keeps the shard's own, or Qdrant Edge's defaults for a new shard).
        auto_optimize: Start a background optimisation (:meth:`start_optimize`)
            each time this many points were written since the store was opened
            or last optimised; ``None`` (the default) never starts one.
    """

    estimates = True
    """Answers :class:`~.requests.Estimate` from its indexes (see :mod:`.search_walk`)."""

    def __init__(
        self,
        path: str | Path,
        *,
        optimizers: EdgeOptimizers | None = None,
        auto_optimize: int | None = None,
    ) -> None:
        if auto_optimize is not None and auto_optimize < 1:
            raise ConfigurationError(
                f"auto_optimize must be a positive number of points or None, got {auto_optimize}"
            )
        for name, unit, default in (
            ("indexing_threads", "thread", "one fewer than the CPUs"),
            ("segments", "segment", "half the CPUs, at least 2"),
        ):
            value = getattr(optimizers, name, None)
            if value is not None and value < 1:
                raise ConfigurationError(
                    f"EdgeOptimizers.{name} must be a positive {unit} count, got {value}: "
                    f"pass None for Qdrant Edge's default ({default})"
                )
        self.root = Path(path)
        self.optimizers = optimizers
        self.auto_optimize = auto_optimize
        self._written = 0
        self.live: LiveShard | None = None
        self.container: Path | None = None
        self._lock: CollectionLock | None = None
        self._float_indexed: frozenset[str] = frozenset()
        self.ttl_free = False  # no point has a TTL (known once open): reads skip the expiry check
        self._dims: int | None = None
        self._builds: list[BackgroundOptimization] = []
        self._optimization_lock = threading.Lock()

    @property
    def shard(self) -> qe.EdgeShard | None:
        """The live Qdrant Edge shard (None when closed); it changes when an optimisation swaps."""
        return self.live.shard if self.live is not None else None

    @property
    def optimization(self) -> OptimizationStatus | None:
        """The status of the latest background optimisation (None if none was started)."""
        with self._optimization_lock:
            return self._builds[-1].status if self._builds else None

    @property
    def dir(self) -> Path | None:
        """The live shard directory (the collection directory or a generation in it)."""
        return self.live.dir if self.live is not None else None

    # ------------------------------------------------------------------ set-up
    def _load_or_create(
        self, container: Path, live: Path, c: rq.Collection
    ) -> tuple[qe.EdgeShard, Path, dict[str, Any]]:
        """Open or create the shard; returns it, its directory and the store's metadata."""
        meta_path = container / META
        meta = json.loads(meta_path.read_text("utf-8")) if meta_path.exists() else None
        if has_shard(live):
            if meta is not None:
                holder = f"the store at {container}"
                rq.check_format(
                    meta.get("format"),
                    holder,
                    "re-create the store at a new path and copy the items over "
                    "(store.search(..., limit=...) then put)",
                )
                fix = "use the embedding model the store was created with, or a new path"
                rq.check_dims(meta.get("dims"), c.dims, holder, fix)
            read_files(live, lazy=False)  # one sequential pass instead of random reads on load
            dims = (meta or {}).get("dims", c.dims)
            config = None if self.optimizers is None else edge_config(_NAMES, dims, self.optimizers)
            shard = qe.EdgeShard.load(str(live), config)
        else:
            config = edge_config(_NAMES, c.dims, self.optimizers)
            try:
                built = create_generation(container, lambda path: _make_empty(path, config))
            except Exception as exc:  # e.g. a full /dev/shm: build in place instead
                logger.warning("building the new store %s in memory failed: %r", container, exc)
                built = None
            if built is None:
                shard = qe.EdgeShard.create(str(live), config)
            else:
                live, shard = built, qe.EdgeShard.load(str(built))
        _ensure_indexes(shard)  # also completes a store whose creation was interrupted
        if meta is None or meta.get("format") != rq.PAYLOAD_FORMAT:  # new, or upgraded in place
            meta = {**(meta or {"dims": c.dims}), "format": rq.PAYLOAD_FORMAT}
            replace_file(meta_path, json.dumps(meta))
        return shard, live, meta

    def _open(self, c: rq.Collection) -> None:
        container = self.root / c.name
        lock = CollectionLock(container)
        lock.acquire()
        try:
            shard, live, meta = self._load_or_create(container, recover(container), c)
        except (BackendError, ConfigurationError):
            lock.release()
            raise
        except Exception as exc:
            lock.release()
            raise _translate(exc, container, lock) from exc
        try:
            lock.publish()
        except BaseException:
            shard.close()
            lock.release()
            raise
        self._lock, self.container = lock, container
        self._dims = meta.get("dims", c.dims)  # what the shard holds (index may be None)
        self.live = LiveShard(shard, live)
        schema = shard.info().payload_schema
        self._float_indexed = frozenset(
            k for k, v in schema.items() if v.data_type == qe.PayloadSchemaType.Float
        )
        expiry = schema.get("expires_us")
        self.ttl_free = expiry is None or expiry.points == 0

    # ----------------------------------------------------------------- execute
    def _live(self) -> LiveShard:
        if self.live is None:
            raise BackendError(
                f"the store at {self.root} is closed or not set up: open a new store"
            )
        return self.live

    def execute(self, request: Any) -> Any:
        """Run one request; engine errors become :class:`BackendError` subclasses."""
        if isinstance(request, rq.Setup):
            if self.live is None:
                self._open(request.collection)
            return None
        live = self._live()
        try:
            return self._dispatch(live, request)
        except (BackendError, ConfigurationError):
            raise
        except Exception as exc:
            raise _translate(exc, live.dir, self._lock) from exc

    def _index_ranges(self, live: LiveShard, request: Any) -> None:
        """Give every ``value.<path>`` the request's filters range over a float index (once)."""
        wanted = rq.fields_to_index(request) - self._float_indexed
        if not wanted:
            return
        with live.write_lock:
            for key in sorted(wanted - self._float_indexed):
                schema = index_schema(key, qe.PayloadSchemaType.Float)
                live.write(qe.UpdateOperation.create_field_index(key, schema))
                self._float_indexed |= {key}

    def _dispatch(self, live: LiveShard, request: Any) -> Any:
        # Index creation is a write: done before entering the read gate (see .live).
        self._index_ranges(live, request)
        if isinstance(request, rq.Optimize):  # in-process: relink a store made before
            check_build_space(live.dir, build_bytes(live.dir, copies=1))
            with live.write_lock:
                for relink in relink_operations(live.shard):
                    live.write(relink)
            if not tenant_layout(live.shard):
                logger.warning(
                    "the store at %s predates the namespace layout of its segments, which an "
                    "in-process optimize cannot add: run optimize(background=True) once to "
                    "rewrite it (namespace-filtered searches then read about twice as fast)",
                    self.root,
                )
        op = _write_op(request)
        if op is not None:
            if self.ttl_free and _sets_expiry(request):
                self.ttl_free = False  # before the write: no read may skip its check
            live.write(op)
            if isinstance(request, rq.Upsert) and self.auto_optimize is not None:
                self._count_written(len(request.points))
            return None
        if self.ttl_free:  # one process writes this store: no point can expire
            request = _without_expiry_checks(request)
        with live.reading() as shard:
            return _read(shard, request)

    # ------------------------------------------------------------ optimisation
    def start_optimize(
        self, *, purge: bool = False, progress: Progress | None = None
    ) -> OptimizationStatus:
        """Build an optimised shard in a child process and swap it in; returns at once.

        A run already going on is returned instead of starting another, unless
        ``purge`` is asked and that run does not purge: then the purge starts after
        it. A store made before segments were laid out by namespace is purged once.

        Args:
            purge: Rewrite the shard from its live points, so deleted payloads
                leave the disk (segment files and write-ahead log).
            progress: Called with each phase name, from the background thread.
        """
        live = self._live()
        assert self.container is not None
        with live.reading() as shard:
            purge = purge or not tenant_layout(shard)
        with self._optimization_lock:
            self._builds = [b for b in self._builds if not b.status.done()]
            running = self._builds[-1] if self._builds else None
            if running is not None and (running.status.purge or not purge):
                return running.status
            self._written = 0
            spec = {
                "names": asdict(_NAMES),
                "dims": self._dims,
                "optimizers": None if self.optimizers is None else asdict(self.optimizers),
            }
            after = running.status if running is not None else None
            build = BackgroundOptimization(
                live, self.container, spec, purge=purge, after=after, progress=progress
            )
            self._builds.append(build)
            return build.start()

    def warm(self) -> int:
        """Read the live shard's files into the page cache; returns the bytes read."""
        return read_files(self._live().dir)

    def _count_written(self, points: int) -> None:
        assert self.auto_optimize is not None
        with self._optimization_lock:
            self._written += points
            due = self._written >= self.auto_optimize and all(b.status.done() for b in self._builds)
        if due:
            self.start_optimize()

    def close(self) -> None:
        """Stop a background optimisation, flush and release the shard and lock; safe to repeat."""
        with self._optimization_lock:
            builds, self._builds = self._builds, []
        for build in reversed(builds):  # a later run may be waiting for an earlier one
            build.cancel()
        for build in builds:
            build.join()
        live, self.live = self.live, None
        lock, self._lock = self._lock, None
        try:
            if live is not None:
                live.close()
        finally:
            if lock is not None:
                lock.release()


def _sets_expiry(request: Any) -> bool:
    if isinstance(request, rq.Upsert):
        return any(p.payload.get("expires_us") is not None for p in request.points)
    return isinstance(request, rq.SetPayload) and "expires_us" in request.payload


def _without_expiry_checks(request: Any) -> Any:
    """``request`` without the not-expired condition (see :func:`.filters.without_expiry_check`)."""
    if isinstance(request, rq.QueryBatch):
        queries = [replace(q, filter=f.without_expiry_check(q.filter)) for q in request.queries]
        return rq.QueryBatch(queries)
    if isinstance(request, (rq.Count, rq.Facet)):
        return replace(request, filter=f.without_expiry_check(request.filter))
    return request


def _read(shard: qe.EdgeShard, request: Any) -> Any:
    """Run one read request (or the in-process ``Optimize``) on ``shard``."""
    if isinstance(request, rq.QueryBatch):
        batch = qe.QueryBatchRequest([_query(q) for q in request.queries])
        # p.payload builds a new dict on each access (None without payload): read it once.
        return [
            [rq.Hit(str(p.id), float(p.score), pl if (pl := p.payload) else {}) for p in points]
            for points in shard.query_batch(batch)
        ]
    if isinstance(request, rq.Retrieve):
        records = shard.retrieve(list(request.ids), list(request.fields), False)
        return {str(r.id): dict(r.payload or {}) for r in records}
    if isinstance(request, rq.Facet):
        req = qe.FacetRequest(
            request.key, limit=request.limit, exact=True, filter=_filter(request.filter)
        )
        return [(str(h.value), int(h.count)) for h in shard.facet(req).hits]
    if isinstance(request, rq.Count):
        return shard.count(qe.CountRequest(exact=True, filter=_filter(request.filter)))
    if isinstance(request, rq.Estimate):
        return [
            shard.count(qe.CountRequest(exact=False, filter=_filter(w))) for w in request.filters
        ]
    if isinstance(request, rq.Optimize):
        optimized = bool(shard.optimize())
        release_freed_memory()  # the segments it replaced
        return optimized
    raise TypeError(f"the edge engine cannot execute {type(request).__name__}")
