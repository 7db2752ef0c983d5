"""langchain-tiered-memory: memory that lasts across sessions for LangChain and LangGraph agents.

Working, episodic, semantic and procedural memory on an embedded Qdrant store,
offline by default (bundled tokenizer and embedding model, no LLM required).

Example:
    >>> from langchain_tiered_memory import TokenCounter
    >>> TokenCounter().count("hello world")
    2
"""

from __future__ import annotations

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
from langchain_tiered_memory.tokens import (
    TokenBudget,
    TokenCounter,
    get_encoding,
    seed_tiktoken_cache,
)

__version__ = "0.1.0"

__all__ = [
    "BackendError",
    "ConfigurationError",
    "ExtractionError",
    "InvalidInputError",
    "NamespaceError",
    "StoreLockedError",
    "TieredMemoryError",
    "TokenBudget",
    "TokenBudgetError",
    "TokenCounter",
    "WriteBackError",
    "__version__",
    "get_encoding",
    "seed_tiktoken_cache",
]
