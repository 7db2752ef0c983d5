"""Procedural memory: tool-use statistics, learned strategies, warnings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_tiered_memory.lazy import lazy_exports

if TYPE_CHECKING:
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

__getattr__, __dir__ = lazy_exports(__name__)
