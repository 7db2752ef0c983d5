"""Machinery shared by the tiers: scopes, arguments, plans, ranking, access counts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_tiered_memory.lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_tiered_memory.tiers.common.ranking import RankingConfig, ScoreBreakdown
    from langchain_tiered_memory.tiers.common.scope import MemoryScope, normalize_id

__all__ = [
    "MemoryScope",
    "RankingConfig",
    "ScoreBreakdown",
    "normalize_id",
]

__getattr__, __dir__ = lazy_exports(__name__)
