"""Semantic memory: entity-centric facts with confidence, provenance and time."""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_tiered_memory.lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_tiered_memory.tiers.semantic.extraction import (
        EntityFactExtractor,
        HeuristicFactExtractor,
    )
    from langchain_tiered_memory.tiers.semantic.memory import SemanticMemory
    from langchain_tiered_memory.tiers.semantic.models import (
        Entity,
        Fact,
        FactStatus,
        Relation,
        SemanticConfig,
    )
    from langchain_tiered_memory.tiers.semantic.results import (
        EntityContext,
        FactWriteResult,
        RememberResult,
        SemanticSearchHit,
    )

__all__ = [
    "Entity",
    "EntityContext",
    "EntityFactExtractor",
    "Fact",
    "FactStatus",
    "FactWriteResult",
    "HeuristicFactExtractor",
    "Relation",
    "RememberResult",
    "SemanticConfig",
    "SemanticMemory",
    "SemanticSearchHit",
]

__getattr__, __dir__ = lazy_exports(__name__)
