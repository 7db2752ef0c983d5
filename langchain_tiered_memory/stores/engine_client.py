"""The client engine: a ``QdrantClient`` or ``AsyncQdrantClient``.

Works with a Qdrant server or Qdrant Cloud, and with qdrant-client's local mode
(``":memory:"`` or a path: fine for small collections and tests; it scans). Every
request becomes a short sub-plan of client calls (:class:`Call`), run by
:meth:`ClientEngine.execute` on a sync client or awaited by
:meth:`ClientEngine.aexecute` on an async one. Value filters use payload indexes as
on the embedded engine (``value.<path>`` float indexes created on first use); the
collection's metadata records the payload format, and a collection of a format
this version cannot read is refused with a :class:`ConfigurationError`.

Examples:
    >>> from qdrant_client import QdrantClient
    >>> from langchain_tiered_memory.stores.requests import Collection, Count, Setup
    >>> from langchain_tiered_memory.stores.filters import Where
    >>> engine = ClientEngine(QdrantClient(":memory:"))
    >>> engine.execute(Setup(Collection("memories", dims=None)))
    >>> engine.execute(Count(Where()))
    0
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Generator, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

from qdrant_client import AsyncQdrantClient, QdrantClient, models

from langchain_tiered_memory.errors import BackendError, ConfigurationError
from langchain_tiered_memory.plans import arun_plan, run_plan
from langchain_tiered_memory.stores import filters as f
from langchain_tiered_memory.stores import requests as rq
from langchain_tiered_memory.stores.sparse import SparseVec

__all__ = ["ClientEngine"]


@dataclass(frozen=True)
class Call:
    """One client method call."""

    method: str
    kwargs: dict[str, Any]


Calls = Generator[Call, Any, Any]

FORMAT_KEY = "tiered_memory_format"
"""Collection metadata key holding the payload format (as on the embedded engine)."""


_LEAVES: dict[type, Callable[[Any], Any]] = {
    f.Match: lambda c: models.FieldCondition(key=c.key, match=models.MatchValue(value=c.value)),
    f.Range: lambda c: models.FieldCondition(
        key=c.key, range=models.Range(gt=c.gt, gte=c.gte, lt=c.lt, lte=c.lte)
    ),
}


def _filter(where: f.Where) -> models.Filter:
    return f.lower(where, models.Filter, _LEAVES)


def _sparse(vec: SparseVec) -> models.SparseVector:
    return models.SparseVector(indices=list(vec.indices), values=list(vec.values))


def _point(p: rq.PointData) -> models.PointStruct:
    return models.PointStruct(id=p.id, vector=p.vectors(_sparse), payload=p.payload)


def _query(q: rq.Query) -> models.QueryRequest:
    flt = _filter(q.filter)
    params = None
    if q.exact or q.acorn:  # local mode ignores both (it scans), a server applies them
        acorn = models.AcornSearchParams(enable=True) if q.acorn and not q.exact else None
        params = models.SearchParams(exact=q.exact, acorn=acorn)
    payload = list(q.fields) or False  # no fields: ids and scores only
    common: dict[str, Any] = {"limit": q.limit, "filter": flt, "with_payload": payload}
    if q.mode == "recent":
        order = models.OrderBy(key="updated_us", direction=models.Direction.DESC)
        return models.QueryRequest(query=models.OrderByQuery(order_by=order), **common)
    if q.mode == "dense":
        assert q.dense is not None
        return models.QueryRequest(query=[q.dense], using=rq.DENSE, params=params, **common)
    assert q.sparse is not None
    idf = None
    if q.idf_corpus is not None:  # IDF over these points, as on the embedded engine
        idf = models.SearchParams(idf=models.IdfCorpusParams(corpus=_filter(q.idf_corpus)))
    return models.QueryRequest(query=_sparse(q.sparse), using=rq.SPARSE, params=idf, **common)


def _setup_calls(c: rq.Collection) -> Calls:
    exists = yield Call("collection_exists", {"collection_name": c.name})
    if not exists:
        vectors = {}
        if c.dims is not None:
            vectors[rq.DENSE] = models.VectorParams(
                size=c.dims,
                distance=models.Distance.COSINE,
                multivector_config=models.MultiVectorConfig(
                    comparator=models.MultiVectorComparator.MAX_SIM
                ),
            )
        sparse = {rq.SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)}
        yield Call(
            "create_collection",
            {
                "collection_name": c.name,
                "vectors_config": vectors,
                "sparse_vectors_config": sparse,
                "metadata": {FORMAT_KEY: rq.PAYLOAD_FORMAT},
            },
        )
        for name in (*rq.KEYWORD_INDEXES, *rq.INTEGER_INDEXES):
            yield _index_call(c.name, name)
    info = yield Call("get_collection", {"collection_name": c.name})
    found = (info.config.metadata or {}).get(FORMAT_KEY)
    holder = f"collection {c.name!r}"
    rq.check_format(found, holder, "use a new collection name and copy the items over")
    if found != rq.PAYLOAD_FORMAT:  # an older readable one is upgraded on open
        yield Call(
            "update_collection",
            {"collection_name": c.name, "metadata": {FORMAT_KEY: rq.PAYLOAD_FORMAT}},
        )
    vectors = info.config.params.vectors
    params = vectors.get(rq.DENSE) if isinstance(vectors, dict) else None
    rq.check_dims(
        None if params is None else int(params.size),
        c.dims,
        holder,
        "use the embedding model it was created with, or another collection",
    )
    return info


def _index_call(collection: str, name: str) -> Call:
    """Index payload field ``name`` (links and layout as in :mod:`.requests`)."""
    linked = name in rq.LINKED_INDEXES
    schema: models.PayloadSchemaParams
    if name in rq.KEYWORD_INDEXES:
        schema = models.KeywordIndexParams(
            type=models.KeywordIndexType.KEYWORD,
            enable_hnsw=linked,
            is_tenant=True if name == rq.TENANT_INDEX else None,
        )
    elif name in rq.INTEGER_INDEXES:
        schema = models.IntegerIndexParams(
            type=models.IntegerIndexType.INTEGER, lookup=True, range=True, enable_hnsw=linked
        )
    else:
        schema = models.FloatIndexParams(type=models.FloatIndexType.FLOAT, enable_hnsw=linked)
    kwargs = {"collection_name": collection, "field_name": name, "field_schema": schema}
    return Call("create_payload_index", {**kwargs, "wait": True})


def _calls(name: str, request: Any, indexed: set[str]) -> Calls:
    if isinstance(request, rq.Setup):
        info = yield from _setup_calls(request.collection)
        indexed.update(info.payload_schema or {})
        return None
    for key in sorted(rq.fields_to_index(request) - indexed):  # float-index ranges once
        yield _index_call(name, key)
        indexed.add(key)

    def call(method: str, **kwargs: Any) -> Call:
        return Call(method, {"collection_name": name, **kwargs})

    if isinstance(request, rq.QueryBatch):
        responses = yield call("query_batch_points", requests=[_query(q) for q in request.queries])
        return [
            [rq.Hit(str(p.id), float(p.score), dict(p.payload or {})) for p in r.points]
            for r in responses
        ]
    if isinstance(request, rq.Retrieve):
        ids, fields = list(request.ids), list(request.fields)
        records = yield call("retrieve", ids=ids, with_payload=fields, with_vectors=False)
        return {str(r.id): dict(r.payload or {}) for r in records}
    if isinstance(request, rq.Facet):
        flt, limit = _filter(request.filter), request.limit
        response = yield call("facet", key=request.key, facet_filter=flt, limit=limit, exact=True)
        return [(str(h.value), int(h.count)) for h in response.hits]
    if isinstance(request, rq.Count):
        response = yield call("count", count_filter=_filter(request.filter), exact=True)
        return int(response.count)
    if isinstance(request, rq.Estimate):
        sizes = []
        for ask in request.filters:
            response = yield call("count", count_filter=_filter(ask), exact=False)
            sizes.append(int(response.count))
        return sizes
    if isinstance(request, rq.Optimize):
        return False  # servers optimise in the background by themselves
    if isinstance(request, rq.Upsert):
        yield call("upsert", points=[_point(p) for p in request.points], wait=True)
    elif isinstance(request, rq.Delete):
        yield call(
            "delete", points_selector=models.PointIdsList(points=list(request.ids)), wait=True
        )
    elif isinstance(request, rq.DeleteWhere):
        where = models.FilterSelector(filter=_filter(request.filter))
        yield call("delete", points_selector=where, wait=True)
    elif isinstance(request, rq.SetPayload):
        # A filter, not ids: refreshing a point deleted meanwhile is then a no-op.
        flt = models.Filter(must=[models.HasIdCondition(has_id=list(request.ids))])
        yield call("set_payload", payload=request.payload, points=flt, wait=True)
    else:
        raise TypeError(f"the client engine cannot execute {type(request).__name__}")
    return None


@contextmanager
def _client_errors() -> Iterator[None]:
    try:
        yield
    except (BackendError, ConfigurationError):
        raise
    except Exception as exc:
        raise BackendError(f"Qdrant client request failed: {type(exc).__name__}: {exc}") from exc


class ClientEngine:
    """Executes engine-neutral requests with a qdrant-client client.

    Args:
        client: A ``QdrantClient`` (sync and, via a thread, async use) or an
            ``AsyncQdrantClient`` (async use only).
        collection: The collection name.
    """

    def __init__(
        self, client: QdrantClient | AsyncQdrantClient, collection: str = "memories"
    ) -> None:
        self.client = client
        self.name = collection
        self.is_async = isinstance(client, AsyncQdrantClient)
        self._indexed: set[str] = set()  # payload fields known to have an index
        # qdrant-client's local mode (":memory:" or a path) is plain Python dicts and
        # numpy arrays, not thread-safe: one request at a time. Servers run concurrently.
        options = client.init_options
        local = options.get("location") == ":memory:" or options.get("path") is not None
        self._lock: AbstractContextManager[Any] = threading.RLock() if local else nullcontext()
        # Local mode scans every search and counts in Python: estimates there cost a scan.
        self.estimates = not local

    def _sync_call(self, call: Call) -> Any:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*([Pp]ayload index|search_params)")
            return getattr(self.client, call.method)(**call.kwargs)

    async def _async_call(self, call: Call) -> Any:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*([Pp]ayload index|search_params)")
            return await getattr(self.client, call.method)(**call.kwargs)

    def execute(self, request: Any) -> Any:
        """Run one request on a sync client."""
        with _client_errors(), self._lock:
            return run_plan(_calls(self.name, request, self._indexed), self._sync_call)

    async def aexecute(self, request: Any) -> Any:
        """Run one request on an async client."""
        with _client_errors():
            return await arun_plan(_calls(self.name, request, self._indexed), self._async_call)

    def close(self) -> None:
        """Close a sync client (an async client is closed with :meth:`aclose`)."""
        if not self.is_async:
            self.client.close()

    async def aclose(self) -> None:
        """Close the client."""
        if isinstance(self.client, AsyncQdrantClient):
            await self.client.close()
        else:
            self.client.close()
