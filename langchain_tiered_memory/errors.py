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

from langgraph.store.base import InvalidNamespaceError

__all__ = [
    "BackendError",
    "ConfigurationError",
    "DiskFullError",
    "ExtractionError",
    "InvalidInputError",
    "MemoryClosedError",
    "MemoryPathError",
    "NamespaceError",
    "OutboxDamagedError",
    "StoreDamagedError",
    "StoreLockedError",
    "TieredMemoryError",
    "TokenBudgetError",
    "UserErasedError",
    "WriteBackError",
    "WriteBackTimeoutError",
]


class TieredMemoryError(Exception):
    """Root of every error raised by langchain-tiered-memory."""


class ConfigurationError(TieredMemoryError, ValueError):
    """The library was configured wrongly (bad option, missing extra, mismatched sizes)."""


class MemoryPathError(ConfigurationError):
    """The directory given to ``TieredMemory.open`` cannot hold a memory.

    The path is empty, is an existing file, or sits under a file; nothing was written.
    """


class MemoryClosedError(TieredMemoryError, RuntimeError):
    """A memory was used after ``close()``; open it again to keep using it."""


class InvalidInputError(TieredMemoryError, ValueError):
    """A value passed to a public method is invalid; nothing was stored."""


class NamespaceError(InvalidInputError, InvalidNamespaceError):
    """A namespace (tuple of labels) is empty, has empty labels, or non-string labels.

    It is also LangGraph's ``InvalidNamespaceError``, so code written for
    ``InMemoryStore`` or ``SqliteStore`` catches it unchanged.
    """


class TokenBudgetError(InvalidInputError):
    """A token budget is impossible to meet (negative, or smaller than a fixed part)."""


class BackendError(TieredMemoryError):
    """The storage backend failed; the original exception is chained as ``__cause__``."""


class StoreLockedError(BackendError):
    """An embedded store path is already open in another process or handle."""


class StoreDamagedError(BackendError):
    """A file of a memory directory is missing or damaged; nothing was deleted or opened empty.

    The message names the file and the repair (restore it from a backup, or the
    ``tiered-memory repair`` step that accepts a stated loss).
    """


class DiskFullError(BackendError):
    """The disk holding a store is (nearly) full; the write was refused and nothing is lost.

    Free space on that filesystem and retry: queued writes are kept and applied
    once there is room again.
    """


class UserErasedError(TieredMemoryError):
    """A write began before ``forget_user`` erased its user and reached the store after.

    It was refused (nothing was written), so that data read before the erasure
    cannot come back. Make the write again if it belongs to the user from now on.
    """


class ExtractionError(TieredMemoryError):
    """An LLM-backed extraction or reflection failed or returned malformed output."""


class WriteBackError(TieredMemoryError):
    """A durable memory write could not be queued or applied after all retries."""


class WriteBackTimeoutError(WriteBackError, TimeoutError):
    """``flush``/``close`` gave up waiting; the writes stay queued and will still be applied."""


class OutboxDamagedError(StoreDamagedError, WriteBackError):
    """The durable outbox is missing or damaged; no write is acknowledged until it is repaired."""
