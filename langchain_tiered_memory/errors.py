"""The exception tree of langchain-tiered-memory.

Every exception the library raises on purpose derives from
:class:`TieredMemoryError`. Subclasses that describe a caller's mistake also
derive from :class:`ValueError`, so ``except ValueError`` keeps working. Every
message says what was wrong and how to fix it. Backend exceptions (which differ
between Qdrant engines) are translated at the store boundary with the original
chained as ``__cause__``.

Examples:
    >>> from langchain_tiered_memory.errors import TieredMemoryError, NamespaceError
    >>> try:
    ...     raise NamespaceError("namespace label 0 is empty: use a non-empty string")
    ... except TieredMemoryError as exc:
    ...     print(type(exc).__name__)
    NamespaceError
"""

from __future__ import annotations

__all__ = [
    "BackendError",
    "ConfigurationError",
    "ExtractionError",
    "InvalidInputError",
    "NamespaceError",
    "StoreLockedError",
    "TieredMemoryError",
    "TokenBudgetError",
    "WriteBackError",
    "WriteBackTimeoutError",
]


class TieredMemoryError(Exception):
    """Root of every error raised by langchain-tiered-memory."""


class ConfigurationError(TieredMemoryError, ValueError):
    """The library was configured wrongly (bad option, missing extra, mismatched sizes)."""


class InvalidInputError(TieredMemoryError, ValueError):
    """A value passed to a public method is invalid; nothing was stored."""


class NamespaceError(InvalidInputError):
    """A namespace (tuple of labels) is empty, has empty labels, or non-string labels."""


class TokenBudgetError(InvalidInputError):
    """A token budget is impossible to meet (negative, or smaller than a fixed part)."""


class BackendError(TieredMemoryError):
    """The storage backend failed; the original exception is chained as ``__cause__``."""


class StoreLockedError(BackendError):
    """An embedded store path is already open in another process or handle."""


class ExtractionError(TieredMemoryError):
    """An LLM-backed extraction or reflection failed or returned malformed output."""


class WriteBackError(TieredMemoryError):
    """A durable memory write could not be queued or applied after all retries."""


class WriteBackTimeoutError(WriteBackError, TimeoutError):
    """``flush``/``close`` gave up waiting; the writes stay queued and will still be applied."""
