"""LangGraph ``BaseStore`` implementations on Qdrant.

``QdrantMemoryStore`` runs on the embedded Qdrant Edge engine (a directory on
disk, the default) or on a qdrant-client client (server, cloud, local mode),
with one engine-neutral query compiler in front of both.

Examples:
    >>> from langchain_tiered_memory.stores import QdrantMemoryStore, RetrievalMode
    >>> QdrantMemoryStore.supports_ttl
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_tiered_memory.lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_tiered_memory.stores.edge.build import EdgeOptimizers
    from langchain_tiered_memory.stores.edge.optimizer import (
        OptimizationReport,
        OptimizationStatus,
    )
    from langchain_tiered_memory.stores.payload import MAX_VALUE_BYTES
    from langchain_tiered_memory.stores.plan import RetrievalMode
    from langchain_tiered_memory.stores.qdrant_store import QdrantMemoryStore
    from langchain_tiered_memory.stores.restore import RestoreOp

__all__ = [
    "MAX_VALUE_BYTES",
    "EdgeOptimizers",
    "OptimizationReport",
    "OptimizationStatus",
    "QdrantMemoryStore",
    "RestoreOp",
    "RetrievalMode",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "MAX_VALUE_BYTES": "langchain_tiered_memory.stores.payload",
        "EdgeOptimizers": "langchain_tiered_memory.stores.edge.build",
        "OptimizationReport": "langchain_tiered_memory.stores.edge.optimizer",
        "OptimizationStatus": "langchain_tiered_memory.stores.edge.optimizer",
        "QdrantMemoryStore": "langchain_tiered_memory.stores.qdrant_store",
        "RestoreOp": "langchain_tiered_memory.stores.restore",
        "RetrievalMode": "langchain_tiered_memory.stores.plan",
    },
)
