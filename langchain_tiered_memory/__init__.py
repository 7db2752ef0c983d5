"""langchain-tiered-memory: memory that lasts across sessions for LangChain and LangGraph agents.

Working, episodic, semantic and procedural memory on an embedded Qdrant store,
offline by default (bundled tokenizer and embedding model, no LLM required).

The top level holds what a user needs on day one: the memory
(:class:`TieredMemory`, :class:`UserMemory`), the records you build
(:class:`Episode`, :class:`TrajectoryStep`, :class:`Outcome`,
:class:`ToolUsageRecord`) and read (:class:`Fact`, :class:`MemoryContext`), the
agent integrations, the store, the embeddings, the model loader, and the errors
you catch. Everything else is importable from its subpackage:
``langchain_tiered_memory.tiers.<tier>``, ``.assembly``, ``.consolidation``,
``.writeback``, ``.integrations``, ``.integrations.nodes``, ``.stores``,
``.tokens``, ``.errors`` and ``.testing``.

Examples:
    >>> from langgraph.store.memory import InMemoryStore
    >>> from langchain_tiered_memory import TieredMemory
    >>> memory = TieredMemory(InMemoryStore())
    >>> alice = memory.for_user("alice")
    >>> _ = alice.remember("I'm allergic to shellfish.")
    >>> "shellfish" in alice.build_memory_context("Dinner ideas?").text
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_tiered_memory.assembly.assembler import AssemblyConfig
from langchain_tiered_memory.assembly.items import MemoryContext
from langchain_tiered_memory.chat_models import load_chat_model
from langchain_tiered_memory.embeddings import LocalEmbeddings
from langchain_tiered_memory.errors import (
    BackendError,
    ConfigurationError,
    InvalidInputError,
    MemoryClosedError,
    MemoryPathError,
    StoreLockedError,
    TieredMemoryError,
    WriteBackError,
)
from langchain_tiered_memory.integrations.agent import create_memory_agent
from langchain_tiered_memory.lazy import lazy_exports
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.stores.qdrant_store import QdrantMemoryStore
from langchain_tiered_memory.tiers.episodic.models import Episode, Outcome, TrajectoryStep
from langchain_tiered_memory.tiers.procedural.models import ToolUsageRecord
from langchain_tiered_memory.tiers.semantic.models import Fact
from langchain_tiered_memory.user_memory import UserMemory

if TYPE_CHECKING:  # imported on first use (needs ``langchain``, the ``agents`` extra)
    from langchain_tiered_memory.integrations.middleware import TieredMemoryMiddleware

__version__ = "0.1.0"

__all__ = [
    "AssemblyConfig",
    "BackendError",
    "ConfigurationError",
    "Episode",
    "Fact",
    "InvalidInputError",
    "LocalEmbeddings",
    "MemoryClosedError",
    "MemoryContext",
    "MemoryPathError",
    "Outcome",
    "QdrantMemoryStore",
    "StoreLockedError",
    "TieredMemory",
    "TieredMemoryError",
    "TieredMemoryMiddleware",
    "ToolUsageRecord",
    "TrajectoryStep",
    "UserMemory",
    "WriteBackError",
    "__version__",
    "create_memory_agent",
    "load_chat_model",
]

__getattr__, __dir__ = lazy_exports(__name__)
