"""One-at-a-time access to stores that are not safe to use from several threads.

LangGraph's ``InMemoryStore`` iterates plain dictionaries with no lock, so a search
running while another thread writes can fail with ``RuntimeError: dictionary changed
size during iteration``; this library writes from threads of its own (the durable
writer, the context assembler's pool). :func:`thread_safe` gives such a store one
lock that every tier sharing it goes through; stores that handle concurrency
themselves (``QdrantMemoryStore``, ``PostgresStore``, ...) are returned as they are.
The wrapper has exactly the optional abilities of the store it wraps
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
import inspect
import threading
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from langgraph.store.base import BaseStore, Op, Result
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory.stores.abilities import (
    Closable,
    NamespaceVersioned,
    Purging,
    QueryPrefetching,
    Restoring,
)

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


_FORWARDED: tuple[tuple[type, tuple[str, ...]], ...] = (
    (Purging, ("purge_deleted", "apurge_deleted")),
    (Restoring, ("restore_items", "arestore_items")),
    (NamespaceVersioned, ("namespace_version",)),
    (QueryPrefetching, ("prefetch_query",)),
    (Closable, ("close", "aclose")),
)
"""Each optional ability, and the methods a wrapper runs under its lock for it."""


def _locked(ability: type, name: str) -> Callable[..., Any]:
    """Method ``name`` of the wrapped store, run while the wrapper's lock is held."""

    def call(self: SerializedStore, *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            return getattr(self.inner, name)(*args, **kwargs)

    async def acall(self: SerializedStore, *args: Any, **kwargs: Any) -> Any:
        with self.lock:  # re-entrant, as in abatch
            return await getattr(self.inner, name)(*args, **kwargs)

    method: Callable[..., Any] = (
        acall if inspect.iscoroutinefunction(getattr(ability, name)) else call
    )
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``{name}`` of the wrapped store, while no other thread uses it."
    return method


@functools.cache
def _wrapper_class(abilities: tuple[type, ...]) -> type[SerializedStore]:
    """``SerializedStore`` with the locked methods of ``abilities``."""
    if not abilities:
        return SerializedStore
    names = dict(_FORWARDED)
    methods = {name: _locked(a, name) for a in abilities for name in names[a]}
    return type(
        "SerializedStore", (SerializedStore,), {"__doc__": SerializedStore.__doc__, **methods}
    )


def thread_safe(store: BaseStore) -> BaseStore:
    """``store`` made safe to share between threads: the same wrapper for the same store."""
    if isinstance(store, SerializedStore) or not isinstance(store, _UNSAFE):
        return store
    with _WRAPPERS_LOCK:
        wrapper = _WRAPPERS.get(id(store))
        if wrapper is None:
            abilities = tuple(ability for ability, _ in _FORWARDED if isinstance(store, ability))
            wrapper = _WRAPPERS[id(store)] = _wrapper_class(abilities)(store)
        return wrapper


def unwrap(store: BaseStore) -> BaseStore:
    """The store a :class:`SerializedStore` wraps, or ``store`` itself."""
    return store.inner if isinstance(store, SerializedStore) else store
