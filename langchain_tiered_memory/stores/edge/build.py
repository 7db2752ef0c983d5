"""Shard configuration of the embedded engine, and the child process that builds a new shard.

Background optimisation (:mod:`.optimizer`) runs this file as a script on a copy
of the live shard, so the HNSW build (which holds the GIL) never stalls the store's
process: ``python edge/build.py '{"mode": ..., "source": ..., "target": ...}'``. It
imports only the standard library and ``qdrant_edge`` (the child starts in about
0.2 s). The spec also holds ``names``, ``dims``, ``optimizers`` (:class:`EdgeOptimizers`
fields, or null) and ``parent_pid``. Mode ``optimize`` loads the copy in place
(``source == target``) and optimizes it; ``rewrite`` writes every live point of
``source`` into a fresh shard at ``target`` (purging deleted payloads), then
optimizes it. Either first gives every payload index the params
:func:`index_schema` asks for. The child prints one JSON line, ``{"optimized": bool,
"points": int, "seconds": float}``; on failure it exits non-zero with the error on
stderr. On Linux it dies with its parent (``PR_SET_PDEATHSIG``).

Examples:
    >>> names = VectorNames(dense="dense", sparse="bm25")
    >>> config = edge_config(names, 64, EdgeOptimizers(indexing_threshold_kb=100))
    >>> sorted(config.vectors), sorted(config.sparse_vectors)
    (['dense'], ['bm25'])
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from dataclasses import dataclass
from typing import Any

import qdrant_edge as qe

__all__ = [
    "INDEX_MEMORY",
    "LINKED_INDEXES",
    "TENANT_INDEX",
    "EdgeOptimizers",
    "VectorNames",
    "build",
    "edge_config",
    "index_schema",
    "relink_operations",
    "tenant_layout",
]

_BATCH = 256
_HNSW_M = 16  # Qdrant's HNSW defaults, restated because HnswIndexConfig takes no partial config
_HNSW_EF_CONSTRUCT = 100
_HNSW_FULL_SCAN_KB = 10_000

LINKED_INDEXES = frozenset({"ns_prefixes"})
"""Payload indexes whose values get their own HNSW links: every search filters by a
namespace prefix; linking the others only slowed graph builds (``docs/store.md``,
"Index layout and search walks"). Mirrors
:data:`~langchain_tiered_memory.stores.requests.LINKED_INDEXES` (this file imports no
package module)."""

TENANT_INDEX = "ns_path"
"""The keyword index whose values Qdrant groups points by when it builds a segment (``is_tenant``).

A namespace's points are then contiguous in an optimized segment, so a namespace-filtered
search reads them in order (``docs/store.md``, "Index layout and search walks"). A store
made before is rewritten by its next background optimisation (see :func:`tenant_layout`).
Mirrors :data:`~langchain_tiered_memory.stores.requests.TENANT_INDEX`."""


@dataclass(frozen=True)
class EdgeOptimizers:
    """Optimizer settings of an embedded store (``None`` keeps Qdrant Edge's default).

    Attributes:
        indexing_threshold_kb: Segments whose vectors exceed this size (KB) get an
            HNSW graph when optimized (Edge's default is 10,000 KB).
        deleted_threshold: Fraction of deleted points above which an optimisation
            vacuums (rewrites) a segment (Edge's default 0.2).
        vacuum_min_vectors: Segments with fewer vectors are never vacuumed
            (Edge's default 1,000).
        indexing_threads: Threads an HNSW build uses (Edge's default, ``None``,
            picks one fewer than the CPU count). More threads build faster but
            take cores from reads and writes; raise it for bulk loads.
        segments: Indexed segments an optimisation keeps before it merges the
            smallest ones, rebuilding their graph (Edge's default, ``None``: half the
            CPU count, at least 2).
        max_segment_kb: Segments are merged only up to this size of dense
            vectors (KB; Edge's default is 200,000 KB per indexing thread).

    Examples:
        >>> EdgeOptimizers(indexing_threshold_kb=1_000).deleted_threshold is None
        True
    """

    indexing_threshold_kb: int | None = None
    deleted_threshold: float | None = None
    vacuum_min_vectors: int | None = None
    indexing_threads: int | None = None
    segments: int | None = None
    max_segment_kb: int | None = None

    def to_edge(self) -> qe.EdgeOptimizersConfig:
        """The ``qdrant_edge`` optimizer config."""
        return qe.EdgeOptimizersConfig(
            deleted_threshold=self.deleted_threshold,
            vacuum_min_vector_number=self.vacuum_min_vectors,
            indexing_threshold=self.indexing_threshold_kb,
            default_segment_number=self.segments,
            max_segment_size=self.max_segment_kb,
        )

    def to_hnsw(self) -> qe.HnswIndexConfig | None:
        """The HNSW config that sets :attr:`indexing_threads` (Qdrant's defaults otherwise)."""
        if self.indexing_threads is None:
            return None
        return qe.HnswIndexConfig(
            m=_HNSW_M,
            ef_construct=_HNSW_EF_CONSTRUCT,
            full_scan_threshold=_HNSW_FULL_SCAN_KB,
            max_indexing_threads=self.indexing_threads,
        )


@dataclass(frozen=True)
class VectorNames:
    """Names of a store's dense and sparse vectors (:data:`.requests.DENSE`, ``SPARSE``)."""

    dense: str
    sparse: str


INDEX_MEMORY = qe.Memory.Cold
"""Where payload indexes live: on disk, memory-mapped (in RAM an optimised segment's index is
read whole into the heap on open; ``docs/benchmarks.md``, "Memory"). Appendable segments keep
theirs in RAM whatever this says."""


def edge_config(
    names: VectorNames, dims: int | None, optimizers: EdgeOptimizers | None = None
) -> qe.EdgeConfig:
    """The shard config of a store: a quantized MaxSim multivector of ``dims`` (if any) and BM25.

    The dense vectors stay on disk, memory-mapped; segments that get an HNSW graph also
    get int8 copies in RAM (clipped at the 0.99 quantile) that the graph is walked on,
    candidates then rescored on the originals.
    """
    vectors = {}
    if dims is not None:
        int8 = qe.ScalarQuantizationConfig(
            qe.ScalarType.Int8, quantile=0.99, memory=qe.Memory.Cached
        )
        vectors[names.dense] = qe.EdgeVectorParams(
            size=dims,
            distance=qe.Distance.Cosine,
            multivector_config=qe.MultiVectorConfig(qe.MultiVectorComparator.MaxSim),
            memory=qe.Memory.Cold,
            quantization_config=int8,
        )
    sparse = {names.sparse: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)}
    opt = optimizers.to_edge() if optimizers is not None else None
    hnsw = optimizers.to_hnsw() if optimizers is not None else None
    return qe.EdgeConfig(vectors=vectors, sparse_vectors=sparse, optimizers=opt, hnsw_config=hnsw)


def index_schema(
    name: str, kind: qe.PayloadSchemaType, tenant: bool | None = None
) -> qe.PayloadSchemaType | Any:
    """The index of payload field ``name`` holding ``kind``, kept on disk (:data:`INDEX_MEMORY`).

    ``tenant`` overrides whether a keyword index is the layout key (by default only
    :data:`TENANT_INDEX` is).

    Examples:
        >>> index_schema("updated_us", qe.PayloadSchemaType.Integer).enable_hnsw
        False
        >>> index_schema("ns_path", qe.PayloadSchemaType.Keyword).is_tenant
        True
        >>> index_schema("ns_path", qe.PayloadSchemaType.Keyword).memory == INDEX_MEMORY
        True
    """
    linked, memory = name in LINKED_INDEXES, INDEX_MEMORY
    if kind == qe.PayloadSchemaType.Keyword:
        if tenant is None:
            tenant = name == TENANT_INDEX
        return qe.KeywordIndexParams(enable_hnsw=linked, is_tenant=tenant or None, memory=memory)
    if kind == qe.PayloadSchemaType.Integer:
        return qe.IntegerIndexParams(lookup=True, range=True, enable_hnsw=linked, memory=memory)
    if kind == qe.PayloadSchemaType.Float:
        return qe.FloatIndexParams(enable_hnsw=linked, memory=memory)
    return kind


def _tenant(index: qe.PayloadIndexInfo) -> bool:
    return bool(getattr(index.params, "is_tenant", None))


def tenant_layout(shard: qe.EdgeShard) -> bool:
    """Whether ``shard`` lays its segments out by namespace (:data:`TENANT_INDEX`).

    False for a store made before the layout: the background optimiser rewrites it once.
    """
    index = shard.info().payload_schema.get(TENANT_INDEX)
    return index is not None and _tenant(index)


def relink_operations(shard: qe.EdgeShard) -> list[qe.UpdateOperation]:
    """The updates that give every payload index of ``shard`` the params :func:`index_schema` asks.

    Each index of an older store (linked, or kept in RAM) is dropped and recreated,
    keeping its ``is_tenant`` flag; empty when the shard is already current. An index
    without params has Qdrant's defaults: linked.
    """
    ops = []
    for name, index in shard.info().payload_schema.items():
        linked = index.params is None or getattr(index.params, "enable_hnsw", None) is not False
        on_disk = getattr(index.params, "memory", None) == INDEX_MEMORY
        if linked != (name in LINKED_INDEXES) or not on_disk:
            schema = index_schema(name, index.data_type, tenant=_tenant(index))
            ops.append(qe.UpdateOperation.delete_field_index(name))
            ops.append(qe.UpdateOperation.create_field_index(name, schema))
    return ops


def _optimizers(spec: dict[str, Any]) -> EdgeOptimizers | None:
    raw = spec.get("optimizers")
    if raw is not None:
        return EdgeOptimizers(**raw)
    if spec["mode"] != "rewrite":
        return None  # loading keeps the settings saved in the shard
    # A fresh shard: carry over the settings saved in the old one.
    try:
        with open(os.path.join(spec["source"], "edge_config.json"), encoding="utf-8") as fh:
            config = json.load(fh)
    except (OSError, ValueError):
        return None
    saved = config.get("optimizers") or {}
    return EdgeOptimizers(
        indexing_threshold_kb=saved.get("indexing_threshold"),
        deleted_threshold=saved.get("deleted_threshold"),
        vacuum_min_vectors=saved.get("vacuum_min_vector_number"),
        indexing_threads=(config.get("hnsw_config") or {}).get("max_indexing_threads") or None,
        segments=saved.get("default_segment_number") or None,
        max_segment_kb=saved.get("max_segment_size"),
    )


def _copy_points(source: qe.EdgeShard, target: qe.EdgeShard) -> None:
    for name, index in source.info().payload_schema.items():
        schema = index_schema(name, index.data_type)
        target.update(qe.UpdateOperation.create_field_index(name, schema))
    offset: Any = None
    while True:
        request = qe.ScrollRequest(offset=offset, limit=_BATCH, with_payload=True, with_vector=True)
        records, offset = source.scroll(request)
        if records:
            points = [qe.Point(r.id, r.vector or {}, r.payload or {}) for r in records]
            target.update(qe.UpdateOperation.upsert_points(points))
        if offset is None:
            return


def build(spec: dict[str, Any]) -> dict[str, Any]:
    """Build the shard described by ``spec`` (see the module docstring); returns the result."""
    started = time.perf_counter()
    config = edge_config(VectorNames(**spec["names"]), spec.get("dims"), _optimizers(spec))
    mode = spec["mode"]
    if mode == "optimize":
        shard = qe.EdgeShard.load(spec["target"], config)
        try:
            for op in relink_operations(shard):
                shard.update(op)
        except BaseException:
            shard.close()
            raise
    else:
        source = qe.EdgeShard.load(spec["source"])
        try:
            shard = qe.EdgeShard.create(spec["target"], config)
            _copy_points(source, shard)
        finally:
            source.close()
    try:
        optimized = bool(shard.optimize())
        points = int(shard.info().points_count)
        shard.flush()
    finally:
        shard.close()
    return {"optimized": optimized, "points": points, "seconds": time.perf_counter() - started}


def _die_with_parent(parent_pid: int | None) -> None:
    """On Linux, be killed when the parent dies (the build is useless without it)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_pdeathsig = 1
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)
    if parent_pid is not None and os.getppid() != parent_pid:
        sys.exit("the parent process exited before the build started")


if __name__ == "__main__":
    spec = json.loads(sys.argv[1])
    _die_with_parent(spec.get("parent_pid"))
    print(json.dumps(build(spec)), flush=True)
