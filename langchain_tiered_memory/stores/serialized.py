"""One-at-a-time access to stores that are not safe to use from several threads.

LangGraph's ``InMemoryStore`` iterates plain dictionaries with no lock, so a
search running while another thread writes can fail with ``RuntimeError:
dictionary changed size during iteration``. This library writes from threads
of its own (the durable writer applies queued writes on a thread; the
context assembler asks the tiers from a thread pool), which makes that race
real: without the lock, a context built on ``InMemoryStore`` while episodes
are written can lose its experiences section that way. :func:`thread_safe`
gives such a store one lock that every tier sharing it goes through; stores
that handle concurrency themselves (``QdrantMemoryStore``, ``PostgresStore``,
...) are returned as they are. The
wrapper has exactly the optional abilities of the store it wraps
(:mod:`~langchain_tiered_memory.stores.abilities`), each run under its lock.

Examples:
    >>> from langgraph.store.memory import InMemoryStore
    >>> raw = InMemoryStore()
    >>> store = thread_safe(raw)
    >>> store is thread_safe(raw) is thread_safe(store)
    True
    >>> store.put(("notes",), "n1", {"text": "hello"})
    >>> store.get(("notes",), "n1").value
    {'text': 'hello'}
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Hashable, Iterable
from typing import TYPE_CHECKING, Any, cast

from langgraph.store.base import BaseStore, Op, Result
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory.stores.abilities import (
    Closable,
    NamespaceVersioned,
    Purging,
    QueryPrefetching,
    Restoring,
)

if TYPE_CHECKING:
    from langchain_tiered_memory.stores.restore import RestoreOp

__all__ = ["SerializedStore", "thread_safe", "unwrap"]

_UNSAFE: tuple[type[BaseStore], ...] = (InMemoryStore,)
"""Store classes known to break under concurrent use."""

_WRAPPERS: weakref.WeakValueDictionary[int, SerializedStore] = weakref.WeakValueDictionary()
"""Live wrappers by ``id`` of the store they wrap: a wrapper keeps its store alive, so
the id cannot be reused while the entry exists (InMemoryStore has no ``__dict__`` to
keep its wrapper on)."""
_WRAPPERS_LOCK = threading.Lock()


class SerializedStore(BaseStore):
    """A ``BaseStore`` that runs the operations of another one at a time.

    Every ``batch``/``abatch`` (and so every ``get``, ``put``, ``search``, ...)
    holds one re-entrant lock. Attributes it does not define (``index_config``,
    ``embeddings``, ``supports_ttl`` ...) are read from the wrapped store. Build
    it with :func:`thread_safe`, so that all users of one store share one lock.

    Args:
        inner: The store to serialise.
    """

    concurrent_reads = False
    """Reads never overlap (the assembler then asks the tiers in turn)."""

    def __init__(self, inner: BaseStore) -> None:
        self.inner = inner
        self.lock = threading.RLock()

    @property
    def supports_ttl(self) -> bool:  # type: ignore[override]
        """Whether the wrapped store supports TTL."""
        return bool(getattr(self.inner, "supports_ttl", False))

    def __getattr__(self, name: str) -> Any:
        if name in ("inner", "lock"):  # not set yet: during unpickling or a failed init
            raise AttributeError(name)
        return getattr(self.inner, name)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` on the wrapped store while no other thread uses it."""
        with self.lock:
            return self.inner.batch(ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async twin of :meth:`batch`."""
        # Re-entrant: coroutines of one event loop (one thread) may nest; a store
        # such as InMemoryStore iterates its dictionaries without awaiting, so
        # they cannot interleave there.
        with self.lock:
            return await self.inner.abatch(ops)

    def __repr__(self) -> str:
        return f"SerializedStore({self.inner!r})"


class _Purging(SerializedStore):
    def purge_deleted(self, timeout: float | None = None) -> object:
        """Purge the wrapped store's deleted records while no other thread uses it."""
        with self.lock:
            return cast(Purging, self.inner).purge_deleted(timeout)

    async def apurge_deleted(self, timeout: float | None = None) -> object:
        """Async twin of :meth:`purge_deleted`."""
        with self.lock:
            return await cast(Purging, self.inner).apurge_deleted(timeout)


class _Restoring(SerializedStore):
    def restore_items(self, ops: Iterable[RestoreOp]) -> int:
        """Restore ``ops`` into the wrapped store while no other thread uses it."""
        with self.lock:
            return cast(Restoring, self.inner).restore_items(ops)

    async def arestore_items(self, ops: Iterable[RestoreOp]) -> int:
        """Async twin of :meth:`restore_items`."""
        with self.lock:
            return await cast(Restoring, self.inner).arestore_items(ops)


class _NamespaceVersioned(SerializedStore):
    def namespace_version(self, namespace_prefix: tuple[str, ...]) -> Hashable | None:
        """The wrapped store's version of ``namespace_prefix``."""
        with self.lock:
            return cast(NamespaceVersioned, self.inner).namespace_version(namespace_prefix)


class _QueryPrefetching(SerializedStore):
    def prefetch_query(self, query: str) -> bool:
        """Ask the wrapped store to start embedding ``query``."""
        with self.lock:
            return cast(QueryPrefetching, self.inner).prefetch_query(query)


class _Closable(SerializedStore):
    def close(self) -> None:
        """Close the wrapped store."""
        with self.lock:
            cast(Closable, self.inner).close()

    async def aclose(self) -> None:
        """Async twin of :meth:`close`."""
        with self.lock:
            await cast(Closable, self.inner).aclose()


_FORWARDED: tuple[tuple[type, type[SerializedStore]], ...] = (
    (Purging, _Purging),
    (Restoring, _Restoring),
    (NamespaceVersioned, _NamespaceVersioned),
    (QueryPrefetching, _QueryPrefetching),
    (Closable, _Closable),
)
"""Each optional ability, and the part of a wrapper that runs it under the lock."""


@functools.cache
def _wrapper_class(parts: tuple[type[SerializedStore], ...]) -> type[SerializedStore]:
    """``SerializedStore`` with the methods of the abilities in ``parts``."""
    if not parts:
        return SerializedStore
    return type("SerializedStore", parts, {"__doc__": SerializedStore.__doc__})


def thread_safe(store: BaseStore) -> BaseStore:
    """``store`` made safe to share between threads: the same wrapper for the same store."""
    if isinstance(store, SerializedStore) or not isinstance(store, _UNSAFE):
        return store
    with _WRAPPERS_LOCK:
        wrapper = _WRAPPERS.get(id(store))
        if wrapper is None:
            parts = tuple(part for ability, part in _FORWARDED if isinstance(store, ability))
            wrapper = _WRAPPERS[id(store)] = _wrapper_class(parts)(store)
        return wrapper


def unwrap(store: BaseStore) -> BaseStore:
    """The store a :class:`SerializedStore` wraps, or ``store`` itself."""
    return store.inner if isinstance(store, SerializedStore) else store
