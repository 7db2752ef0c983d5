"""The embedded engine: a Qdrant Edge shard on disk (``qdrant-edge-py``).

One shard directory per collection, ``<path>/<collection>``. The shard keeps
its write-ahead log (never disabled: without it a second handle silently loses
writes), which also locks the directory against a second opener; that lock is
reported as :class:`~langchain_tiered_memory.errors.StoreLockedError`.

Qdrant Edge is synchronous and holds the GIL while it runs, so the async driver
runs whole plans in a worker thread. Searches on unoptimised segments are exact
scans of the points that match the indexed namespace filter, which is fast for
namespace-scoped queries; :meth:`EdgeEngine.optimize` builds HNSW graphs.

Value filters are answered from payload indexes only: equality through the
keyword index on ``value_marks``, numeric ranges through a float index on
``value.<path>`` that is created the first time a filter ranges over that path
(it then exists in the shard, so it is created once per collection and is kept
up to date by every later write).

Example:
    >>> import tempfile
    >>> from langchain_tiered_memory.stores.requests import Collection, Count, Setup
    >>> from langchain_tiered_memory.stores.filters import Where
    >>> engine = EdgeEngine(tempfile.mkdtemp())
    >>> engine.execute(Setup(Collection("memories", dims=None, sparse=False)))
    >>> engine.execute(Count(Where()))
    0
    >>> engine.close()
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from langchain_tiered_memory.errors import BackendError, ConfigurationError, StoreLockedError
from langchain_tiered_memory.stores import filters as f
from langchain_tiered_memory.stores.requests import (
    DENSE,
    INTEGER_INDEXES,
    KEYWORD_INDEXES,
    SPARSE,
    Collection,
    Count,
    Delete,
    DeleteWhere,
    Facet,
    Hit,
    Optimize,
    PointData,
    Query,
    QueryBatch,
    Retrieve,
    SetPayload,
    Setup,
    Upsert,
)
from langchain_tiered_memory.stores.sparse import SparseVec

__all__ = ["EdgeEngine"]

_META = "tiered_memory_store.json"
_FORMAT = 2
"""Payload layout version: 2 added the ``k:`` and ``e:`` equality markers."""


def _condition(cond: f.Condition) -> Any:
    if isinstance(cond, f.Where):
        return _filter(cond)
    if isinstance(cond, f.Match):
        return qe.FieldCondition(cond.key, match=qe.MatchValue(cond.value))
    if isinstance(cond, f.MatchAny):
        return qe.FieldCondition(cond.key, match=qe.MatchAny(list(cond.values)))
    if isinstance(cond, f.Range):
        rng = qe.RangeFloat(gte=cond.gte, gt=cond.gt, lte=cond.lte, lt=cond.lt)
        return qe.FieldCondition(cond.key, range=rng)
    if isinstance(cond, f.IsEmpty):
        return qe.IsEmptyCondition(cond.key)
    raise TypeError(f"unknown condition {cond!r}")  # pragma: no cover


def _filter(where: f.Where) -> qe.Filter:
    return qe.Filter(
        must=[_condition(c) for c in where.must] or None,
        should=[_condition(c) for c in where.should] or None,
        must_not=[_condition(c) for c in where.must_not] or None,
    )


def _sparse(vec: SparseVec) -> qe.SparseVector:
    return qe.SparseVector(list(vec.indices), list(vec.values))


def _point(p: PointData) -> qe.Point:
    vector: dict[str, Any] = {}
    if p.dense:
        vector[DENSE] = p.dense
    if p.sparse:
        vector[SPARSE] = _sparse(p.sparse)
    return qe.Point(p.id, vector, p.payload)


def _query(q: Query) -> qe.QueryRequest:
    flt = _filter(q.filter)
    payload = list(q.fields)
    params = qe.SearchParams(exact=True) if q.exact else None
    if q.mode == "recent":
        order = qe.OrderBy("updated_us", direction=qe.Direction.Desc)
        return qe.QueryRequest(limit=q.limit, query=order, filter=flt, with_payload=payload)
    if q.mode == "dense":
        assert q.dense is not None
        query = qe.Query.Nearest([q.dense], using=DENSE)
        return qe.QueryRequest(
            limit=q.limit, query=query, filter=flt, with_payload=payload, params=params
        )
    assert q.sparse is not None
    query = qe.Query.Nearest(_sparse(q.sparse), using=SPARSE)
    # IDF over the live points the search may return (deleted points are not counted).
    idf = qe.SearchParams(idf=qe.IdfParams(corpus=flt))
    return qe.QueryRequest(limit=q.limit, query=query, filter=flt, with_payload=payload, params=idf)


def _translate(exc: Exception, path: Path) -> Exception:
    text = str(exc)
    if "WAL" in text and ("WouldBlock" in text or "lock" in text.lower()):
        return StoreLockedError(
            f"the store at {path} is already open in another process or handle: close the "
            "other store (store.close()) or use a different path"
        )
    return BackendError(f"Qdrant Edge failed on {path}: {text}")


class EdgeEngine:
    """Executes engine-neutral requests on a Qdrant Edge shard.

    Args:
        path: Directory of the store; each collection is a sub-directory.
    """

    def __init__(self, path: str | Path) -> None:
        self.root = Path(path)
        self.shard: qe.EdgeShard | None = None
        self.dir: Path | None = None
        self.collection: Collection | None = None
        self._write_lock = threading.Lock()
        self._float_indexed: frozenset[str] = frozenset()

    # ------------------------------------------------------------------ set-up
    def _config(self, c: Collection) -> qe.EdgeConfig:
        vectors = {}
        if c.dims is not None:
            vectors[DENSE] = qe.EdgeVectorParams(
                size=c.dims,
                distance=qe.Distance.Cosine,
                multivector_config=qe.MultiVectorConfig(qe.MultiVectorComparator.MaxSim),
            )
        sparse = {SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)}
        return qe.EdgeConfig(vectors=vectors, sparse_vectors=sparse)

    @staticmethod
    def _check_meta(meta_path: Path, c: Collection) -> None:
        if not meta_path.exists():
            return
        meta = json.loads(meta_path.read_text("utf-8"))
        if meta.get("format") != _FORMAT:
            raise ConfigurationError(
                f"the store at {meta_path.parent} was written in payload format "
                f"{meta.get('format')!r}, but this version reads format {_FORMAT} (its value "
                "filters need markers the old format lacks): re-create the store at a new "
                "path and copy the items over (store.search(..., limit=...) then put)"
            )
        stored = meta.get("dims")
        if c.dims is not None and stored != c.dims:
            have = "no vectors" if stored is None else f"{stored}-d vectors"
            raise ConfigurationError(
                f"the store at {meta_path.parent} holds {have} but index['dims'] is {c.dims}: "
                "use the embedding model the store was created with, or a new path"
            )

    def _open(self, c: Collection) -> None:
        directory = self.root / c.name
        meta_path = directory / _META
        try:
            if directory.is_dir() and any(directory.iterdir()):
                self._check_meta(meta_path, c)
                self.shard = qe.EdgeShard.load(str(directory))
            else:
                directory.mkdir(parents=True, exist_ok=True)
                self.shard = qe.EdgeShard.create(str(directory), self._config(c))
                for name in KEYWORD_INDEXES:
                    self.shard.update(
                        qe.UpdateOperation.create_field_index(name, qe.PayloadSchemaType.Keyword)
                    )
                for name in INTEGER_INDEXES:
                    self.shard.update(
                        qe.UpdateOperation.create_field_index(name, qe.PayloadSchemaType.Integer)
                    )
                self.shard.flush()
                meta = {"format": _FORMAT, "dims": c.dims}
                meta_path.write_text(json.dumps(meta), "utf-8")
        except ConfigurationError:
            raise
        except Exception as exc:
            raise _translate(exc, directory) from exc
        self.dir = directory
        self.collection = c
        schema = self.shard.info().payload_schema
        self._float_indexed = frozenset(
            k for k, v in schema.items() if v.data_type == qe.PayloadSchemaType.Float
        )

    # ----------------------------------------------------------------- execute
    def _shard(self) -> qe.EdgeShard:
        if self.shard is None:
            raise BackendError(
                f"the store at {self.root} is closed or not set up: open a new store"
            )
        return self.shard

    def execute(self, request: Any) -> Any:
        """Run one request; engine errors become :class:`BackendError` subclasses."""
        if isinstance(request, Setup):
            if self.shard is None:
                self._open(request.collection)
            return None
        shard = self._shard()
        try:
            return self._dispatch(shard, request)
        except (BackendError, ConfigurationError):
            raise
        except Exception as exc:
            raise _translate(exc, self.dir or self.root) from exc

    def _index_ranges(self, shard: qe.EdgeShard, wheres: Iterable[f.Where]) -> None:
        """Give every ``value.<path>`` a filter ranges over a float index (once)."""
        wanted = set().union(*(f.range_fields(w) for w in wheres)) - self._float_indexed
        if not wanted:
            return
        with self._write_lock:
            for key in sorted(wanted - self._float_indexed):
                shard.update(qe.UpdateOperation.create_field_index(key, qe.PayloadSchemaType.Float))
                self._float_indexed |= {key}

    def _dispatch(self, shard: qe.EdgeShard, request: Any) -> Any:
        if isinstance(request, (Count, Facet, DeleteWhere)):
            self._index_ranges(shard, [request.filter])
        if isinstance(request, QueryBatch):
            self._index_ranges(shard, [q.filter for q in request.queries])
            batch = qe.QueryBatchRequest([_query(q) for q in request.queries])
            return [
                [Hit(str(p.id), float(p.score), dict(p.payload or {})) for p in points]
                for points in shard.query_batch(batch)
            ]
        if isinstance(request, Retrieve):
            if not request.ids:
                return {}
            records = shard.retrieve(list(request.ids), list(request.fields), False)
            return {str(r.id): dict(r.payload or {}) for r in records}
        if isinstance(request, Upsert):
            with self._write_lock:
                shard.update(qe.UpdateOperation.upsert_points([_point(p) for p in request.points]))
            return None
        if isinstance(request, Delete):
            with self._write_lock:
                shard.update(qe.UpdateOperation.delete_points(list(request.ids)))
            return None
        if isinstance(request, DeleteWhere):
            with self._write_lock:
                shard.update(qe.UpdateOperation.delete_points_by_filter(_filter(request.filter)))
            return None
        if isinstance(request, SetPayload):
            flt = qe.Filter(must=[qe.HasIdCondition({uuid.UUID(i) for i in request.ids})])
            with self._write_lock:
                shard.update(qe.UpdateOperation.set_payload_by_filter(flt, request.payload))
            return None
        if isinstance(request, Facet):
            req = qe.FacetRequest(
                request.key, limit=request.limit, exact=True, filter=_filter(request.filter)
            )
            return [(str(h.value), int(h.count)) for h in shard.facet(req).hits]
        if isinstance(request, Count):
            return shard.count(qe.CountRequest(exact=True, filter=_filter(request.filter)))
        if isinstance(request, Optimize):
            return bool(shard.optimize())
        raise TypeError(f"the edge engine cannot execute {type(request).__name__}")

    def close(self) -> None:
        """Flush and release the shard (and its directory lock); safe to repeat."""
        shard, self.shard = self.shard, None
        if shard is not None:
            try:
                shard.flush()
            finally:
                shard.close()
