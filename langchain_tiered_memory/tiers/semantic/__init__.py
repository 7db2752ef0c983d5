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

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Entity": "langchain_tiered_memory.tiers.semantic.models",
        "EntityContext": "langchain_tiered_memory.tiers.semantic.results",
        "EntityFactExtractor": "langchain_tiered_memory.tiers.semantic.extraction",
        "Fact": "langchain_tiered_memory.tiers.semantic.models",
        "FactStatus": "langchain_tiered_memory.tiers.semantic.models",
        "FactWriteResult": "langchain_tiered_memory.tiers.semantic.results",
        "HeuristicFactExtractor": "langchain_tiered_memory.tiers.semantic.extraction",
        "Relation": "langchain_tiered_memory.tiers.semantic.models",
        "RememberResult": "langchain_tiered_memory.tiers.semantic.results",
        "SemanticConfig": "langchain_tiered_memory.tiers.semantic.models",
        "SemanticMemory": "langchain_tiered_memory.tiers.semantic.memory",
        "SemanticSearchHit": "langchain_tiered_memory.tiers.semantic.results",
    },
)
