"""Procedural memory: tool-use statistics, learned strategies, warnings."""

from __future__ import annotations

from langchain_tiered_memory.tiers.procedural.memory import ProceduralConfig, ProceduralMemory
from langchain_tiered_memory.tiers.procedural.models import (
    ScoredStrategy,
    Strategy,
    ToolGuidance,
    ToolUsageRecord,
)

__all__ = [
    "ProceduralConfig",
    "ProceduralMemory",
    "ScoredStrategy",
    "Strategy",
    "ToolGuidance",
    "ToolUsageRecord",
]
