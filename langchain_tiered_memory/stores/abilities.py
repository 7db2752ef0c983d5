"""What a store can do beyond LangGraph's ``BaseStore``: one runtime-checkable Protocol each.

The tiers and the facade work on any ``BaseStore`` and use an ability only when
the store has it, tested with ``isinstance(store, Purging)`` and so on.
:class:`~langchain_tiered_memory.stores.QdrantMemoryStore` has every one of them;
a store of your own gains one by defining its methods (no base class needed).
:func:`~langchain_tiered_memory.stores.serialized.thread_safe` keeps the
abilities of the store it wraps, each run under the wrapper's lock.

Examples:
    >>> from langgraph.store.memory import InMemoryStore
    >>> isinstance(InMemoryStore(), Restoring)
    False
    >>> class Versioned(InMemoryStore):
    ...     def namespace_version(self, namespace_prefix):
    ...         return 0
    >>> isinstance(Versioned(), NamespaceVersioned)
    True
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from langchain_tiered_memory.stores.restore import RestoreOp

__all__ = [
    "Closable",
    "NamespaceVersioned",
    "Purging",
    "QueryPrefetching",
    "ReadConcurrency",
    "Restoring",
]


@runtime_checkable
class Purging(Protocol):
    """Removes deleted records from the store's files (``TieredMemory.forget_user`` calls it)."""

    def purge_deleted(self, timeout: float | None = None) -> object:
        """Rewrite the store without its deleted records; wait at most ``timeout`` s."""

    async def apurge_deleted(self, timeout: float | None = None) -> object:
        """Async twin of :meth:`purge_deleted`."""


@runtime_checkable
class Restoring(Protocol):
    """Writes records with the ``created_at``/``updated_at`` they were exported with (import)."""

    def restore_items(self, ops: Iterable[RestoreOp]) -> int:
        """Write ``ops`` with their own timestamps; returns how many were written."""

    async def arestore_items(self, ops: Iterable[RestoreOp]) -> int:
        """Async twin of :meth:`restore_items`."""


@runtime_checkable
class NamespaceVersioned(Protocol):
    """Tells when anything under a namespace prefix changed, for caching derived results."""

    def namespace_version(self, namespace_prefix: tuple[str, ...]) -> Hashable | None:
        """A value that changes whenever an item under ``namespace_prefix`` changes.

        ``None`` when the store cannot tell now (do not cache).
        """


@runtime_checkable
class QueryPrefetching(Protocol):
    """Starts embedding a query ahead of the searches that will use it."""

    def prefetch_query(self, query: str) -> bool:
        """Start embedding ``query`` in the background; returns whether it did."""


@runtime_checkable
class ReadConcurrency(Protocol):
    """Says whether reads from several threads overlap (a store without it: they do)."""

    @property
    def concurrent_reads(self) -> bool:
        """True when searches in several threads run at the same time."""


@runtime_checkable
class Closable(Protocol):
    """Holds resources (files, locks, clients) released by closing it."""

    def close(self) -> None:
        """Release the store's resources."""

    async def aclose(self) -> None:
        """Async twin of :meth:`close`."""
