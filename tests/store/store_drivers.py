"""Drivers that let one case definition run through a store's sync or async API.

A conformance case is an ``async def case(store, ops)`` that only touches the
store through ``ops``. Two drivers implement ``ops``:

* :class:`AsyncOps` awaits ``store.aput`` / ``store.aget`` / ... on a real event loop.
* :class:`SyncOps` calls ``store.put`` / ``store.get`` / ... directly. Its methods are
  ``async def`` only so the case can ``await`` them; they never suspend, so
  :func:`run_sync` drives the case coroutine to completion with ``send(None)``
  and no event loop exists at all (the sync API is exercised exactly as a
  plain synchronous caller would use it).

The module also holds :func:`snapshot`, which reads a store's entire content
through the public API, used to prove that a rejected call changed nothing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from typing import Any

from langgraph.store.base import BaseStore, Item, Op, Result, SearchItem

Namespace = tuple[str, ...]


class Ops:
    """The operations a case may use; see :class:`SyncOps` and :class:`AsyncOps`."""

    mode: str = ""

    def __init__(self, store: BaseStore) -> None:
        self.store = store

    async def put(self, namespace: Namespace, key: str, value: Any, **kwargs: Any) -> None:
        raise NotImplementedError

    async def get(self, namespace: Namespace, key: str, **kwargs: Any) -> Item | None:
        raise NotImplementedError

    async def search(self, prefix: Namespace, /, **kwargs: Any) -> list[SearchItem]:
        raise NotImplementedError

    async def delete(self, namespace: Namespace, key: str) -> None:
        raise NotImplementedError

    async def list_namespaces(self, **kwargs: Any) -> list[Namespace]:
        raise NotImplementedError

    async def batch(self, ops: Iterable[Op]) -> list[Result]:
        raise NotImplementedError

    async def sleep(self, seconds: float) -> None:
        raise NotImplementedError

    async def gather(self, *calls: Awaitable[Any]) -> list[Any]:
        raise NotImplementedError


class SyncOps(Ops):
    """Runs every operation through the store's synchronous methods."""

    mode = "sync"

    async def put(self, namespace: Namespace, key: str, value: Any, **kwargs: Any) -> None:
        self.store.put(namespace, key, value, **kwargs)

    async def get(self, namespace: Namespace, key: str, **kwargs: Any) -> Item | None:
        return self.store.get(namespace, key, **kwargs)

    async def search(self, prefix: Namespace, /, **kwargs: Any) -> list[SearchItem]:
        return self.store.search(prefix, **kwargs)

    async def delete(self, namespace: Namespace, key: str) -> None:
        self.store.delete(namespace, key)

    async def list_namespaces(self, **kwargs: Any) -> list[Namespace]:
        return self.store.list_namespaces(**kwargs)

    async def batch(self, ops: Iterable[Op]) -> list[Result]:
        return self.store.batch(list(ops))

    async def sleep(self, seconds: float) -> None:
        time.sleep(seconds)  # noqa: ASYNC251 - the sync driver must block, like its caller

    async def gather(self, *calls: Awaitable[Any]) -> list[Any]:
        return [await call for call in calls]


class AsyncOps(Ops):
    """Runs every operation through the store's asynchronous methods."""

    mode = "async"

    async def put(self, namespace: Namespace, key: str, value: Any, **kwargs: Any) -> None:
        await self.store.aput(namespace, key, value, **kwargs)

    async def get(self, namespace: Namespace, key: str, **kwargs: Any) -> Item | None:
        return await self.store.aget(namespace, key, **kwargs)

    async def search(self, prefix: Namespace, /, **kwargs: Any) -> list[SearchItem]:
        return await self.store.asearch(prefix, **kwargs)

    async def delete(self, namespace: Namespace, key: str) -> None:
        await self.store.adelete(namespace, key)

    async def list_namespaces(self, **kwargs: Any) -> list[Namespace]:
        return await self.store.alist_namespaces(**kwargs)

    async def batch(self, ops: Iterable[Op]) -> list[Result]:
        return await self.store.abatch(list(ops))

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def gather(self, *calls: Awaitable[Any]) -> list[Any]:
        return list(await asyncio.gather(*calls))


def run_sync(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that never suspends (a case driven by :class:`SyncOps`)."""
    try:
        awaited = coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError(
        f"a case run with SyncOps awaited {awaited!r}: cases must only await `ops` methods"
    )


Case = Callable[[BaseStore, Ops], Coroutine[Any, Any, None]]


def item_view(item: Item) -> tuple[Namespace, str, Any, Any, Any]:
    """Everything a user can observe about an item, as a comparable tuple."""
    return (item.namespace, item.key, item.value, item.created_at, item.updated_at)


def snapshot(store: BaseStore, *, limit: int = 10_000) -> list[tuple[Any, ...]]:
    """Read the whole content of ``store`` through its public API, in a canonical order."""
    items: list[tuple[Any, ...]] = []
    for namespace in store.list_namespaces(limit=limit):
        found = store.search(namespace, limit=limit, refresh_ttl=False)
        items.extend(item_view(i) for i in found if i.namespace == namespace)
        for i in found:
            fetched = store.get(i.namespace, i.key, refresh_ttl=False)
            assert fetched is not None, f"search returned {i.key!r} but get() cannot find it"
            assert item_view(fetched) == item_view(i), "get() and search() disagree"
    return sorted(items, key=lambda row: (row[0], row[1]))


def keys_of(items: Sequence[Item]) -> list[str]:
    """The keys of ``items``, in order."""
    return [i.key for i in items]
