"""langchain-tiered-memory: memory that lasts across sessions for LangChain and LangGraph agents.

Working, episodic, semantic and procedural memory on an embedded Qdrant store,
offline by default (bundled tokenizer and embedding model, no LLM required).

Example:
    >>> from langchain_tiered_memory import TokenCounter
    >>> TokenCounter().count("hello world")
    2
"""

from __future__ import annotations

from langchain_tiered_memory.assembly import MemoryContext, MemoryItem
from langchain_tiered_memory.errors import (
    BackendError,
    ConfigurationError,
    ExtractionError,
    InvalidInputError,
    NamespaceError,
    StoreLockedError,
    TieredMemoryError,
    TokenBudgetError,
    WriteBackError,
)
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.tiers.episodic_models import Episode, Outcome, TrajectoryStep
from langchain_tiered_memory.tiers.procedural_models import Strategy, ToolUsageRecord
from langchain_tiered_memory.tokens import (
    TokenBudget,
    TokenCounter,
    get_encoding,
    seed_tiktoken_cache,
)
from langchain_tiered_memory.user_memory import UserMemory

__version__ = "0.1.0"

__all__ = [
    "BackendError",
    "ConfigurationError",
    "Episode",
    "ExtractionError",
    "InvalidInputError",
    "MemoryContext",
    "MemoryItem",
    "NamespaceError",
    "Outcome",
    "StoreLockedError",
    "Strategy",
    "TieredMemory",
    "TieredMemoryError",
    "TokenBudget",
    "TokenBudgetError",
    "TokenCounter",
    "ToolUsageRecord",
    "TrajectoryStep",
    "UserMemory",
    "WriteBackError",
    "__version__",
    "get_encoding",
    "seed_tiktoken_cache",
]
