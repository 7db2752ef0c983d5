"""Context assembly: tier-neutral items, conflict resolution, framing and budget packing."""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_tiered_memory.lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_tiered_memory.assembly.assembler import AssemblyConfig, ContextAssembler
    from langchain_tiered_memory.assembly.conflicts import MemoryConflictResolver
    from langchain_tiered_memory.assembly.items import DroppedItem, MemoryContext, MemoryItem
    from langchain_tiered_memory.assembly.packing import SECTION_ORDER, pack_items

__all__ = [
    "SECTION_ORDER",
    "AssemblyConfig",
    "ContextAssembler",
    "DroppedItem",
    "MemoryConflictResolver",
    "MemoryContext",
    "MemoryItem",
    "pack_items",
]

__getattr__, __dir__ = lazy_exports(__name__)
