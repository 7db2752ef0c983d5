"""Consolidation and forgetting: policy (what to forget) and mechanism (trash, audit, purge)."""

from langchain_tiered_memory.consolidation.policy import ForgettingPolicy, RetentionCandidate
from langchain_tiered_memory.consolidation.trash import AuditRecord, MemoryTrash

__all__ = ["AuditRecord", "ForgettingPolicy", "MemoryTrash", "RetentionCandidate"]
