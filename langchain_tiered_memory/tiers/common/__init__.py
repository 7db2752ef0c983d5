"""Machinery shared by the tiers: scopes, arguments, plans, ranking, access counts."""

from __future__ import annotations

from langchain_tiered_memory.tiers.common.ranking import RankingConfig, ScoreBreakdown
from langchain_tiered_memory.tiers.common.scope import MemoryScope, normalize_id

__all__ = ["MemoryScope", "RankingConfig", "ScoreBreakdown", "normalize_id"]
