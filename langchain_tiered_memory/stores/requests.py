"""Engine-neutral requests: what the store's plans (:mod:`.plan`) ask an engine to do.

:func:`~langchain_tiered_memory.plans.run_plan` and :func:`~langchain_tiered_memory.plans.arun_plan`
execute them; engines only translate them (:mod:`.edge.engine`, :mod:`.engine_client`).

Examples:
    >>> from langchain_tiered_memory.plans import run_plan
    >>> def plan():
    ...     hits = yield Count(Where())
    ...     return hits * 2
    >>> run_plan(plan(), lambda request: 21)
    42
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, TypeAlias

from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.plans import Plan
from langchain_tiered_memory.stores.filters import Where, range_fields
from langchain_tiered_memory.stores.sparse import SparseVec

__all__ = [
    "Collection",
    "Count",
    "Delete",
    "DeleteWhere",
    "EmbedDocuments",
    "EmbedQueries",
    "Estimate",
    "Facet",
    "Hit",
    "LexicalIdf",
    "Optimize",
    "Plan",
    "PointData",
    "Query",
    "QueryBatch",
    "Retrieve",
    "SetPayload",
    "Setup",
    "Upsert",
    "check_dims",
    "check_format",
    "fields_to_index",
]

DENSE = "dense"
"""Name of the dense (multi)vector: one sub-vector per embedded text, MaxSim."""
SPARSE = "bm25"
"""Name of the BM25 sparse vector (IDF modifier)."""

LexicalIdf: TypeAlias = Literal["namespace", "global"]
"""Which points BM25's document frequencies count: those under the searched
namespace prefix, or the whole collection (see :class:`Query`)."""

KEYWORD_INDEXES = ("ns_prefixes", "ns_path", "value_marks")
INTEGER_INDEXES = ("updated_us", "expires_us")
LINKED_INDEXES = frozenset({"ns_prefixes"})
"""Payload indexes with HNSW links of their own: see
:data:`~langchain_tiered_memory.stores.edge.build.LINKED_INDEXES`."""
TENANT_INDEX = "ns_path"
"""The keyword index segments are laid out by: see
:data:`~langchain_tiered_memory.stores.edge.build.TENANT_INDEX`."""


PAYLOAD_FORMAT = 4
"""Payload layout version (:mod:`.payload`); stores of formats 2 and 3 are upgraded in place."""
READABLE_FORMATS = frozenset({2, 3, 4})
"""Formats whose points this version reads (see :mod:`.payload`)."""


def check_format(found: object, holder: str, fix: str) -> None:
    """Refuse a store whose payload format this version cannot read.

    Raises:
        ConfigurationError: ``found`` is not in :data:`READABLE_FORMATS`; the
            message names ``holder`` and ends with ``fix``.
    """
    if found not in READABLE_FORMATS:
        raise ConfigurationError(
            f"{holder} holds payload format {found!r}, but this version reads formats "
            f"{sorted(READABLE_FORMATS)} (its value filters need markers the old format "
            f"lacks): {fix}"
        )


def check_dims(stored: int | None, wanted: int | None, holder: str, fix: str) -> None:
    """Refuse an index whose ``dims`` differ from the vectors ``holder`` stores.

    Raises:
        ConfigurationError: ``wanted`` is set and is not ``stored``; the message
            names ``holder`` and ends with ``fix``.
    """
    if wanted is not None and stored != wanted:
        have = "no dense vectors" if stored is None else f"{stored}-d vectors"
        raise ConfigurationError(f"{holder} holds {have} but index['dims'] is {wanted}: {fix}")


@dataclass(frozen=True)
class Collection:
    """A collection (or shard directory) and its dense vector size (None: no dense vectors)."""

    name: str
    dims: int | None


@dataclass(frozen=True)
class PointData:
    """One point to write."""

    id: str
    payload: dict[str, Any]
    dense: list[list[float]] | None = None
    sparse: SparseVec | None = None

    def vectors(self, sparse: Callable[[SparseVec], Any]) -> dict[str, Any]:
        """The point's named vectors; ``sparse`` builds the engine's sparse vector."""
        vectors: dict[str, Any] = {}
        if self.dense:
            vectors[DENSE] = self.dense
        if self.sparse:
            vectors[SPARSE] = sparse(self.sparse)
        return vectors


class Hit(NamedTuple):
    """One point read back; ``score`` is 0.0 for unscored reads (a tuple: built per candidate)."""

    id: str
    score: float
    payload: dict[str, Any]


@dataclass(frozen=True)
class Query:
    """One ranked read of at most ``limit`` hits.

    ``mode`` is ``"recent"`` (newest ``updated_us`` first), ``"dense"`` (cosine
    MaxSim over the item's text vectors) or ``"lexical"`` (BM25, whose document
    frequencies count the points matching ``idf_corpus``, or the whole collection
    when it is None). ``acorn`` (Qdrant's ACORN-1 on the graph path) and ``exact``
    (scan the filtered points) are set by :mod:`.search_walk`.
    """

    mode: Literal["recent", "dense", "lexical"]
    filter: Where
    limit: int
    fields: list[str]
    dense: list[float] | None = None
    sparse: SparseVec | None = None
    exact: bool = False
    idf_corpus: Where | None = None
    acorn: bool = False


@dataclass(frozen=True)
class Setup:
    """Create the collection (or check it) and its payload indexes."""

    collection: Collection


@dataclass(frozen=True)
class Upsert:
    """Insert or replace points."""

    points: list[PointData]


@dataclass(frozen=True)
class Delete:
    """Delete points by id (missing ids are ignored)."""

    ids: list[str]


@dataclass(frozen=True)
class DeleteWhere:
    """Delete every point matching a filter."""

    filter: Where


@dataclass(frozen=True)
class SetPayload:
    """Set payload fields on existing points."""

    ids: list[str]
    payload: dict[str, Any]


@dataclass(frozen=True)
class Retrieve:
    """Payloads by point id; the result maps id -> payload (missing ids absent)."""

    ids: list[str]
    fields: list[str]


@dataclass(frozen=True)
class QueryBatch:
    """Several queries at once; the result is one ``list[Hit]`` per query."""

    queries: list[Query]


@dataclass(frozen=True)
class Facet:
    """Distinct values of a keyword field with counts: ``list[tuple[str, int]]``."""

    key: str
    filter: Where
    limit: int


@dataclass(frozen=True)
class Count:
    """Number of points matching a filter (exact)."""

    filter: Where


@dataclass(frozen=True)
class Estimate:
    """The engine's estimates (from payload indexes) of how many points match each filter."""

    filters: list[Where]


@dataclass(frozen=True)
class Optimize:
    """Build HNSW graphs and merge segments; the result is True if anything changed."""


@dataclass(frozen=True)
class EmbedDocuments:
    """Embed texts for storage (executed by the store, not the engine)."""

    texts: list[str]


@dataclass(frozen=True)
class EmbedQueries:
    """Embed search queries (executed by the store, not the engine)."""

    texts: list[str]


def fields_to_index(request: object) -> set[str]:
    """The ``value.<path>`` fields the filters of ``request`` range over (to float-index once)."""
    if isinstance(request, (Count, Facet, DeleteWhere)):
        wheres = [request.filter]
    elif isinstance(request, Estimate):
        wheres = request.filters
    elif isinstance(request, QueryBatch):
        wheres = [q.filter for q in request.queries]
    else:
        return set()
    return set().union(*(range_fields(w) for w in wheres))
