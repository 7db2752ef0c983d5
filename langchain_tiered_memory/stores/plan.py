"""The engine-neutral query compiler: LangGraph store ops -> plans of requests.

One :class:`Planner` turns a batch of ``GetOp``/``SearchOp``/``ListNamespacesOp``/``PutOp``
into a plan (a generator of :mod:`.requests`). Every op is validated before the first
request, so bad input changes nothing; reads see the state before the batch's writes
(as in ``InMemoryStore``); embeddings are computed before the first write.

Examples:
    >>> from langgraph.store.base import GetOp
    >>> planner = Planner(collection="memories", index=None, retrieval="hybrid")
    >>> plan = planner.batch_plan([GetOp(("docs",), "a")])
    >>> type(next(plan)).__name__
    'Retrieve'
"""

from __future__ import annotations

import functools
import json
import math
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, NamedTuple, cast

from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
)

from langchain_tiered_memory.errors import ConfigurationError, InvalidInputError, NamespaceError
from langchain_tiered_memory.stores import filters
from langchain_tiered_memory.stores.fusion import DEFAULT_FUSION, FusionConfig
from langchain_tiered_memory.stores.payload import (
    CREATED_FIELDS,
    ITEM_FIELDS,
    ValueLayout,
    created_of,
    item_payload,
    layout_value,
    micros,
    namespace_fields,
    point_id,
    point_id_in,
    read_item,
)
from langchain_tiered_memory.stores.requests import (
    Collection,
    Count,
    Delete,
    DeleteWhere,
    EmbedDocuments,
    EmbedQueries,
    Facet,
    LexicalIdf,
    Plan,
    PointData,
    Retrieve,
    SetPayload,
    Setup,
    Upsert,
)
from langchain_tiered_memory.stores.search import search_pages
from langchain_tiered_memory.stores.search_walk import FullScan, check_full_scan_points
from langchain_tiered_memory.stores.sparse import bm25_document
from langchain_tiered_memory.types import ensure_aware, utcnow, validate_namespace

__all__ = ["RETRIEVAL_MODES", "Planner", "RetrievalMode", "check_namespace"]

RetrievalMode = Literal["hybrid", "dense", "lexical"]
"""How a query is matched: dense + BM25 fused by RRF, dense only, or BM25 only."""
RETRIEVAL_MODES: tuple[str, ...] = ("hybrid", "dense", "lexical")

_UPSERT_CHUNK = 1024
_FACET_LIMIT = 1_000_000


_path_tokens = functools.lru_cache(maxsize=1024)(tokenize_path)


def _texts_at(value: dict[str, Any], path: str) -> list[str]:
    """The non-empty texts at ``path`` (``get_text_at_path``; a string field looked up directly)."""
    if not path or path == "$":  # the whole value
        return [t for t in get_text_at_path(value, path) if t]
    tokens = _path_tokens(path)
    if len(tokens) == 1 and tokens[0] != "*" and not tokens[0].startswith(("[", "{")):
        found = value.get(tokens[0])
        if type(found) is str:
            return [found] if found else []
    return [t for t in get_text_at_path(value, list(tokens)) if t]


def check_namespace(namespace: Any, *, allow_empty: bool = False) -> tuple[str, ...]:
    """Validate a namespace (non-empty string labels, no ``.``, no NUL).

    Raises:
        NamespaceError: Say which label is wrong and how to fix it.
    """
    if type(namespace) is tuple and namespace and all(type(label) is str for label in namespace):
        return _checked(namespace, False)  # a batch repeats a few namespaces
    return _checked.__wrapped__(namespace, allow_empty)  # unhashable ones are not cached


@functools.lru_cache(maxsize=4096)  # errors are raised, never cached
def _checked(namespace: Any, allow_empty: bool) -> tuple[str, ...]:
    ns = validate_namespace(namespace, allow_empty=allow_empty)
    for i, label in enumerate(ns):
        if "." in label or "\x00" in label:
            raise NamespaceError(
                f"namespace label {i} {label!r} contains '.' or NUL, which LangGraph reserves: "
                "use another separator such as '-' or ':'"
            )
    return ns


def check_retrieval(mode: str) -> RetrievalMode:
    """Validate a retrieval mode name."""
    if mode not in RETRIEVAL_MODES:
        raise ConfigurationError(
            f"unknown retrieval mode {mode!r}: use one of {', '.join(RETRIEVAL_MODES)}"
        )
    return cast(RetrievalMode, mode)


class PreparedPut(NamedTuple):
    """A validated put: its point id, value layout, TTL, embedded texts and BM25 text."""

    pid: str
    namespace: tuple[str, ...]
    key: str
    layout: ValueLayout
    ttl: float | None
    texts: list[str]
    lexical: str


@dataclass
class _Prepared:
    gets: list[tuple[int, GetOp, str]] = field(default_factory=list)
    searches: list[tuple[int, SearchOp, filters.Where, str]] = field(default_factory=list)
    lists: list[tuple[int, ListNamespacesOp]] = field(default_factory=list)
    upserts: list[PreparedPut] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)


class Planner:
    """Compiles store operations into engine-neutral plans.

    Args:
        collection: Collection (or shard directory) name.
        index: LangGraph ``IndexConfig`` (``dims``, ``embed``, ``fields``) or None.
        retrieval: Default retrieval mode for queries.
        ttl: LangGraph ``TTLConfig`` or None.
        clock: Returns the current aware time (injectable for tests).
        fusion: How hybrid search fuses its dense and BM25 candidates.
        lexical_fields: Value paths whose text is BM25-indexed, each with a repeat
            weight (see :func:`check_lexical_fields`); None indexes the embedded text.
        lexical_idf: Which points BM25's document frequencies count: ``"namespace"``
            (under the searched prefix) or ``"global"`` (the whole collection).
        full_scan_points: Dense searches whose filter keeps at most this many
            points scan them exactly (see :mod:`.search_walk`).
        estimate: The engine answers :class:`~.requests.Estimate` cheaply, so
            filtered dense searches are sized first to choose their walk.
    """

    def __init__(
        self,
        *,
        collection: str,
        index: IndexConfig | None,
        retrieval: str,
        ttl: TTLConfig | None = None,
        clock: Callable[[], datetime] = utcnow,
        fusion: FusionConfig = DEFAULT_FUSION,
        lexical_fields: Sequence[str] | Mapping[str, int] | None = None,
        lexical_idf: LexicalIdf = "namespace",
        full_scan_points: FullScan = "auto",
        estimate: bool = False,
    ) -> None:
        self.retrieval = check_retrieval(retrieval)
        self.estimate = estimate
        self.lexical_idf = check_lexical_idf(lexical_idf)
        self.fusion = check_fusion(fusion)
        self.lexical_fields = check_lexical_fields(lexical_fields)
        self.ttl = ttl
        self.clock = clock
        self.embeddings: Embeddings | None = None
        self.fields: list[str] = []
        dims: int | None = None
        if index is not None:
            dims = index.get("dims")
            if not isinstance(dims, int) or isinstance(dims, bool) or dims <= 0:
                raise ConfigurationError(
                    f"index['dims'] must be a positive int, got {dims!r}: pass e.g. 384"
                )
            if index.get("embed") is None:
                raise ConfigurationError("index['embed'] is missing: pass an Embeddings instance")
            self.embeddings = ensure_embeddings(index["embed"])
            fields = index.get("fields") or ["$"]
            self.fields = [fields] if isinstance(fields, str) else list(fields)
        self.collection = Collection(name=collection, dims=dims)
        self.full_scan_points = check_full_scan_points(full_scan_points, dims)
        self._last_us = 0
        self._last_sweep_us = 0
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ helpers
    def _now_us(self) -> int:
        return micros(ensure_aware(self.clock()))

    def prepare_put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Any,
        index: Literal[False] | list[str] | None,
        ttl: Any = None,
    ) -> PreparedPut:
        """Validate a put (``index`` and ``ttl`` as in ``PutOp``) and find what it writes.

        Raises:
            InvalidInputError: The value or the TTL is not valid.
        """
        layout = layout_value(value)
        value = layout.value
        texts: list[str] = []  # embedded: the index fields (or ``index``), none without embeddings
        if self.embeddings is not None and index is not False:
            paths = self.fields if index is None else index
            texts = [t for path in paths for t in _texts_at(value, path)]
        lexical = "\n".join(texts)  # BM25: the lexical fields' text if any is present
        if texts and self.lexical_fields:
            parts = [
                t for p, w in self.lexical_fields for t in _texts_at(value, p) for _ in range(w)
            ]
            lexical = "\n".join(parts or texts)
        pid = point_id_in(namespace_fields(namespace)[2], key)
        return PreparedPut(pid, namespace, key, layout, _ttl(ttl), texts, lexical)

    def point(
        self, put: PreparedPut, payload: dict[str, Any], vectors: Mapping[str, list[float]]
    ) -> PointData:
        """The point of a prepared put with ``payload``, its texts' ``vectors`` and BM25."""
        if not put.texts:
            return PointData(put.pid, payload)
        dense = [vectors[t] for t in put.texts]
        return PointData(put.pid, payload, dense, bm25_document(put.lexical) or None)

    def embed_plan(
        self, texts: Iterable[str], request: type[EmbedDocuments | EmbedQueries] = EmbedDocuments
    ) -> Plan[dict[str, list[float]]]:
        """Embed the distinct ``texts`` in one request and check the vectors' size."""
        distinct = sorted(set(texts))
        if not distinct:
            return {}
        vectors = yield request(distinct)
        dims = self.collection.dims
        if len(vectors) != len(distinct):
            raise ConfigurationError(
                f"the embedding model returned {len(vectors)} vectors for {len(distinct)} texts"
            )
        for vector in vectors:
            if len(vector) != dims:
                raise ConfigurationError(
                    f"the embedding model returned a {len(vector)}-d vector but the store "
                    f"index has dims={dims}: set index['dims'] to the model's size"
                )
            if not math.isfinite(sum(vector)):  # NaN and inf propagate through the sum
                raise ConfigurationError("the embedding model returned NaN or infinite values")
        return dict(
            zip(distinct, (v if type(v) is list else list(v) for v in vectors), strict=True)
        )

    def _mode(self, op: SearchOp, override: str | None) -> str:
        if not op.query or self.embeddings is None:
            return "recent"
        return check_retrieval(override) if override is not None else self.retrieval

    # --------------------------------------------------------------- validation
    def _prepare(self, ops: Sequence[Op], modes: Mapping[int, str], now_us: int) -> _Prepared:
        prepared = _Prepared()
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for idx, op in enumerate(ops):
            if isinstance(op, GetOp):
                ns = check_namespace(op.namespace)
                prepared.gets.append((idx, op, point_id(ns, check_key(op.key))))
            elif isinstance(op, SearchOp):
                check_namespace(op.namespace_prefix, allow_empty=True)
                if op.limit < 0 or op.offset < 0:
                    raise InvalidInputError(
                        f"limit and offset must be >= 0, got limit={op.limit}, offset={op.offset}"
                    )
                if op.query is not None and not isinstance(op.query, str):
                    raise InvalidInputError(
                        f"query must be a string, got {type(op.query).__name__}"
                    )
                flt = filters.search_filter(op.namespace_prefix, op.filter, now_us=now_us)
                prepared.searches.append((idx, op, flt, self._mode(op, modes.get(idx))))
            elif isinstance(op, ListNamespacesOp):
                for condition in op.match_conditions or ():
                    if condition.match_type not in ("prefix", "suffix"):
                        raise InvalidInputError(f"unknown match type {condition.match_type!r}")
                    check_namespace(condition.path, allow_empty=True)
                if op.limit < 0 or op.offset < 0:
                    raise InvalidInputError("limit and offset must be >= 0")
                prepared.lists.append((idx, op))
            elif isinstance(op, PutOp):
                ns = check_namespace(op.namespace)
                puts[(ns, check_key(op.key))] = op
            else:
                raise InvalidInputError(f"unknown store operation {type(op).__name__}")
        for (ns, key), op in puts.items():
            if op.value is None:
                prepared.deletes.append(point_id_in(namespace_fields(ns)[2], key))
            else:
                prepared.upserts.append(self.prepare_put(ns, key, op.value, op.index, op.ttl))
        return prepared

    # -------------------------------------------------------------------- plans
    def setup_plan(self) -> Plan[None]:
        """Create or check the collection and its payload indexes."""
        yield Setup(self.collection)

    def sweep_plan(self) -> Plan[int]:
        """Delete every expired item; the result is how many there were."""
        expired = filters.expired_filter(self._now_us())
        count: int = yield Count(expired)
        if count:
            yield DeleteWhere(expired)
        return count

    def batch_plan(
        self, ops: Iterable[Op], modes: Mapping[int, str] | None = None
    ) -> Plan[list[Result]]:
        """The plan of one ``batch`` call; ``modes`` overrides retrieval per op index."""
        ops = list(ops)
        now_us = self._now_us()
        prepared = self._prepare(ops, modes or {}, now_us)
        results: list[Result] = [None] * len(ops)
        refresh: dict[str, float] = {}
        if prepared.gets:
            yield from self._gets_plan(prepared.gets, results, refresh, now_us)
        if prepared.searches:
            yield from self._searches_plan(prepared.searches, results, refresh)
        for idx, op in prepared.lists:
            results[idx] = yield from self._list_plan(op, now_us)
        points = (
            (yield from self._points_plan(prepared.upserts, now_us)) if prepared.upserts else []
        )
        for ttl in sorted(set(refresh.values())):
            ids = [pid for pid, minutes in refresh.items() if minutes == ttl]
            yield SetPayload(ids, {"expires_us": now_us + int(ttl * 60_000_000)})
        if prepared.deletes:
            yield Delete(prepared.deletes)
        yield from upsert_plan(points)
        if self._sweep_due(now_us):
            yield DeleteWhere(filters.expired_filter(now_us))
        return results

    def _sweep_due(self, now_us: int) -> bool:
        minutes = (self.ttl or {}).get("sweep_interval_minutes")
        if not minutes:
            return False
        with self._lock:
            if now_us - self._last_sweep_us < int(minutes * 60_000_000):
                return False
            self._last_sweep_us = now_us
            return True

    def _gets_plan(
        self,
        gets: list[tuple[int, GetOp, str]],
        results: list[Result],
        refresh: dict[str, float],
        now_us: int,
    ) -> Plan[None]:
        payloads: dict[str, dict[str, Any]] = yield Retrieve(
            [pid for _, _, pid in gets], ITEM_FIELDS
        )
        for idx, op, pid in gets:
            payload = payloads.get(pid)
            expires = payload.get("expires_us") if payload else None
            if payload is None or (expires is not None and expires <= now_us):
                continue
            results[idx], ttl = read_item(payload)
            if op.refresh_ttl and ttl is not None:
                refresh[pid] = ttl

    def _searches_plan(
        self,
        searches: list[tuple[int, SearchOp, filters.Where, str]],
        results: list[Result],
        refresh: dict[str, float],
    ) -> Plan[None]:
        vectors = yield from self.embed_plan(
            (op.query for _, op, _, mode in searches if op.query and mode in ("dense", "hybrid")),
            EmbedQueries,
        )
        pages = yield from search_pages(
            [(op, flt, mode) for _, op, flt, mode in searches],
            vectors,
            self.fusion,
            self.lexical_idf,
            estimate=self.estimate,
            full_scan_points=self.full_scan_points,
        )
        for (idx, op, _, _), page in zip(searches, pages, strict=False):
            found = []
            for hit, score in page:
                item, ttl = read_item(hit.payload)
                found.append(_search_item(item, score))
                if op.refresh_ttl and ttl is not None:
                    refresh[hit.id] = ttl
            results[idx] = found

    def _list_plan(self, op: ListNamespacesOp, now_us: int) -> Plan[list[tuple[str, ...]]]:
        conditions = list(op.match_conditions or ())
        flt = filters.list_namespaces_filter(conditions, now_us=now_us)
        hits: list[tuple[str, int]] = yield Facet("ns_path", flt, _FACET_LIMIT)
        found: set[tuple[str, ...]] = set()
        for path, count in hits:
            if count <= 0:
                continue
            namespace = tuple(json.loads(path))
            if all(filters.namespace_matches(namespace, c) for c in conditions):
                found.add(namespace[: op.max_depth] if op.max_depth is not None else namespace)
        return sorted(found)[op.offset : op.offset + op.limit]

    def _points_plan(self, upserts: list[PreparedPut], now_us: int) -> Plan[list[PointData]]:
        existing: dict[str, dict[str, Any]] = yield Retrieve(
            [u.pid for u in upserts], CREATED_FIELDS
        )
        vectors = yield from self.embed_plan(t for u in upserts for t in u.texts)
        points = []
        with self._lock:  # increasing write stamps, none before now_us
            order_us = max(now_us, self._last_us + 1)
            self._last_us = order_us + len(upserts) - 1
        for u in upserts:
            found = existing.get(u.pid)
            created = created_of(found) if found else None
            payload = item_payload(
                u.namespace,
                u.key,
                u.layout,
                created=order_us if created is None else created,
                order_us=order_us,
                ttl_minutes=u.ttl,
            )
            order_us += 1
            points.append(self.point(u, payload, vectors))
        return points


def upsert_plan(points: Sequence[PointData]) -> Plan[None]:
    """Write ``points`` in chunks of at most 1,024."""
    for start in range(0, len(points), _UPSERT_CHUNK):
        yield Upsert(list(points[start : start + _UPSERT_CHUNK]))


def check_lexical_idf(idf: Any) -> LexicalIdf:
    """Validate a store's ``lexical_idf`` setting.

    Examples:
        >>> check_lexical_idf("global")
        'global'
    """
    if idf not in ("namespace", "global"):
        raise ConfigurationError(
            f"lexical_idf must be 'namespace' or 'global', got {idf!r}: 'namespace' counts "
            "document frequencies over the points under the searched namespace prefix, "
            "'global' over the whole collection"
        )
    return cast(LexicalIdf, idf)


def check_fusion(fusion: Any) -> FusionConfig:
    """Validate a store's hybrid fusion setting (a :class:`FusionConfig`)."""
    if not isinstance(fusion, FusionConfig):
        raise ConfigurationError(
            f"fusion must be a retrieval.FusionConfig, got {type(fusion).__name__}: pass e.g. "
            "FusionConfig(method='rrf') or stores.fusion.DEFAULT_FUSION"
        )
    if fusion.method not in ("score", "rrf"):
        raise ConfigurationError(f"unknown fusion method {fusion.method!r}: use 'score' or 'rrf'")
    unknown = set(fusion.weights or {}) - {"dense", "lexical"}
    if unknown:
        raise ConfigurationError(
            f"fusion weights name {sorted(unknown)}: a store fuses 'dense' and 'lexical' only"
        )
    return fusion


def check_lexical_fields(
    fields: Sequence[str] | Mapping[str, int] | None,
) -> list[tuple[str, int]]:
    """Validate ``lexical_fields``: paths, or path -> repeat weight (a positive int).

    Examples:
        >>> check_lexical_fields({"text": 2, "context": 1})
        [('text', 2), ('context', 1)]
    """
    if fields is None:
        return []
    if isinstance(fields, str):
        fields = [fields]
    pairs = list(fields.items()) if isinstance(fields, Mapping) else [(f, 1) for f in fields]
    for path, weight in pairs:
        if not isinstance(path, str) or not path:
            raise ConfigurationError(
                f"lexical_fields paths must be non-empty strings, got {path!r}"
            )
        if isinstance(weight, bool) or not isinstance(weight, int) or not 1 <= weight <= 10:
            raise ConfigurationError(
                f"lexical_fields weight of {path!r} must be an int from 1 to 10 (times the "
                f"field's text is repeated in the BM25 document), got {weight!r}"
            )
    return pairs


def check_key(key: Any) -> str:
    """Validate an item key (a string).

    Raises:
        InvalidInputError: The key is not a string.
    """
    if not isinstance(key, str):
        raise InvalidInputError(f"item key must be a string, got {type(key).__name__} {key!r}")
    return key


def _ttl(ttl: Any) -> float | None:
    if ttl is None:
        return None
    if (
        isinstance(ttl, bool)
        or not isinstance(ttl, (int, float))
        or not math.isfinite(ttl)
        or ttl <= 0
    ):
        raise InvalidInputError(f"ttl must be a positive number of minutes or None, got {ttl!r}")
    return float(ttl)


def _search_item(item: Item, score: float | None) -> SearchItem:
    return SearchItem(
        namespace=item.namespace,
        key=item.key,
        value=item.value,
        created_at=item.created_at,
        updated_at=item.updated_at,
        score=score,
    )
