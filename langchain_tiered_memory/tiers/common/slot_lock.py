"""One writer per fact slot at a time, across threads and asyncio tasks of a process.

Writing a single-valued slot (``lives_in`` of one entity) is read-decide-write; two
interleaved writers would both write a current value. Every write to a slot holds
the lock of ``(store, namespace, entity, slot)`` from the read to the write;
procedural memory holds the same kind of lock for a tool's statistics record or a
strategy's counts. Locks are process-wide per store object, served first come first
served to threads (:meth:`SlotLock.acquire`) and tasks (:meth:`SlotLock.aacquire`,
which suspends the task, not the loop); a cancelled waiting task leaves the queue.

Across processes: the embedded store admits one process per directory; on a shared
Qdrant server the next write to a slot ends any extra current values it finds.
A blocking :meth:`SlotLock.acquire` on an event loop's thread while a task of that
loop holds or awaits the lock raises :class:`ConfigurationError` instead of hanging.

Examples:
    >>> store, other_store = object(), object()
    >>> with slot_lock(store, ("ns",), "alice", "lives_in"):
    ...     held = slot_lock(store, ("ns",), "alice", "lives_in").locked()
    ...     free = slot_lock(other_store, ("ns",), "alice", "lives_in").locked()
    >>> held, free
    (True, False)
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections import deque
from typing import Any

from langchain_tiered_memory.errors import ConfigurationError

__all__ = ["SlotLock", "slot_lock"]


Waiter = threading.Event | asyncio.Future[None]
"""A thread (its event) or a task (its future) waiting for a slot lock or an erasure fence."""


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def wake(waiter: Waiter) -> bool:
    """Wake a waiting thread or task; False if the task's event loop is closed (it never runs)."""
    if isinstance(waiter, threading.Event):
        waiter.set()
        return True
    try:
        waiter.get_loop().call_soon_threadsafe(_resolve, waiter)
    except RuntimeError:
        return False
    return True


class SlotLock:
    """A first-come first-served mutex for threads and asyncio tasks alike.

    Not re-entrant. Use ``with lock:`` in a thread and ``async with lock:`` in a
    task; get one with :func:`slot_lock`.
    """

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._held = False
        self._owner_loop: asyncio.AbstractEventLoop | None = None
        self._waiters: deque[Waiter] = deque()

    def locked(self) -> bool:
        """Whether a thread or task holds the lock."""
        return self._held

    def _take(self, loop: asyncio.AbstractEventLoop | None) -> None:
        self._held = True
        self._owner_loop = loop

    def acquire(self) -> None:
        """Wait (blocking this thread) until the lock is this thread's.

        Raises:
            ConfigurationError: Called on a thread running an event loop while a
                task of that loop holds or waits for this lock.
        """
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        with self._mutex:
            if not self._held:
                self._take(None)
                return
            waiting = (w.get_loop() for w in self._waiters if isinstance(w, asyncio.Future))
            if loop is not None and (self._owner_loop is loop or loop in waiting):
                raise ConfigurationError(
                    "a synchronous memory write was called inside a running event loop while "
                    "an async write of that loop is updating the same fact slot or statistics "
                    "record; it would wait forever: await the async twin instead (e.g. "
                    "astore_fact, aremember, arecord_tool_use)"
                )
            event = threading.Event()
            self._waiters.append(event)
        event.wait()

    async def aacquire(self) -> None:
        """Wait (suspending this task, not the event loop) until the lock is this task's."""
        loop = asyncio.get_running_loop()
        with self._mutex:
            if not self._held:
                self._take(loop)
                return
            future: asyncio.Future[None] = loop.create_future()
            self._waiters.append(future)
        try:
            await future
        except BaseException:
            with self._mutex:
                granted = future not in self._waiters  # release() popped it: the lock is ours
                if not granted:
                    self._waiters.remove(future)
            if granted:  # handed the lock while being cancelled: pass it on
                self.release()
            raise

    def release(self) -> None:
        """Hand the lock to the longest waiting thread or task, or free it."""
        with self._mutex:
            while self._waiters:
                waiter = self._waiters.popleft()
                if wake(waiter):  # else its event loop is closed: the task will never run
                    self._take(waiter.get_loop() if isinstance(waiter, asyncio.Future) else None)
                    return
            self._held = False
            self._owner_loop = None

    def __enter__(self) -> SlotLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    async def __aenter__(self) -> SlotLock:
        await self.aacquire()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release()


_LOCKS: weakref.WeakValueDictionary[tuple[Any, ...], SlotLock] = weakref.WeakValueDictionary()
"""Live locks by slot; a lock disappears once no thread or task holds or awaits it."""
_LOCKS_MUTEX = threading.Lock()


def slot_lock(store: object, namespace: tuple[str, ...], entity_id: str, slot: str) -> SlotLock:
    """The process-wide lock of one slot of one entity in ``namespace`` of ``store``.

    Args:
        store: The store object (unwrapped: a thread-safe wrapper and the store it
            wraps are one store).
        namespace: The facts namespace (it holds the user and agent scope).
        entity_id: The entity's normalised id.
        slot: The fact's slot key.
    """
    with _LOCKS_MUTEX:
        return _LOCKS.setdefault((id(store), namespace, entity_id, slot), SlotLock())
