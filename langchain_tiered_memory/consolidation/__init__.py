"""Consolidation and forgetting: policy, mechanism (trash, audit, purge) and passes."""

from langchain_tiered_memory.consolidation.consolidator import (
    ConsolidationReport,
    MemoryConsolidator,
    ProgressCallback,
)
from langchain_tiered_memory.consolidation.policy import ForgettingPolicy, RetentionCandidate
from langchain_tiered_memory.consolidation.trash import AuditRecord, MemoryTrash

__all__ = [
    "AuditRecord",
    "ConsolidationReport",
    "ForgettingPolicy",
    "MemoryConsolidator",
    "MemoryTrash",
    "ProgressCallback",
    "RetentionCandidate",
]
