"""The per-user erasure fence: no write that began before ``forget_user`` lands after it.

Every call that may write a user's records takes the *erasure generation* when
it starts (:func:`call_started`); each batch of writes under a user's prefix
passes that user's fence (:func:`writing`). ``forget_user`` raises the
generation and holds the fence while it erases (:func:`erasing`): a batch of a
call started before is refused with
:class:`~langchain_tiered_memory.errors.UserErasedError`, one started after
waits and lands in the emptied user. Deletes pass freely; threads block, tasks
wait suspended. The fence is per store object and per process (see
docs/reliability.md, "Writes racing a forget").

Examples:
    >>> from langchain_tiered_memory.errors import UserErasedError
    >>> store, ns = object(), ("tiered_memory", "alice", "_", "semantic", "facts")
    >>> with call_started():  # a call starts ...
    ...     with erasing(store, ("tiered_memory", "alice")):  # ... alice is forgotten ...
    ...         pass
    ...     try:  # ... and its write comes late
    ...         with writing(store, [ns]):
    ...             pass
    ...     except UserErasedError:
    ...         print("refused")
    refused
    >>> with writing(store, [ns]):  # a call that starts afterwards writes
    ...     print("written")
    written
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any

from langgraph.store.base import BaseStore

from langchain_tiered_memory.errors import ConfigurationError, UserErasedError
from langchain_tiered_memory.tiers.common.scope import ROOT_LABEL, label_to_id
from langchain_tiered_memory.tiers.common.slot_lock import Waiter, wake

__all__ = [
    "aerasing",
    "awriting",
    "call_started",
    "erasing",
    "generation",
    "put_namespaces",
    "started_at",
    "writing",
]

Prefix = tuple[str, str]
"""``(ROOT_LABEL, user label)``: everything of one user."""

_MUTEX = threading.Lock()
_generation = 0
"""Raised by one at every erasure; a call keeps the value it saw when it started."""
_STARTED: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "tiered_memory_erasure_generation", default=None
)


@dataclass(eq=False)
class _Fence:
    """The fence of one user of one store (guarded by ``_MUTEX``)."""

    erased_at: int = 0
    erasing: bool = False
    eraser_loop: asyncio.AbstractEventLoop | None = None
    writing: int = 0
    writer_loops: list[asyncio.AbstractEventLoop | None] = field(default_factory=list)
    waiters: list[Waiter] = field(default_factory=list)


_FENCES: dict[tuple[int, Prefix], _Fence] = {}


def generation() -> int:
    """The current erasure generation (how many erasures this process has started)."""
    return _generation


@contextmanager
def call_started() -> Iterator[int]:
    """Mark the start of a call: its writes are fenced with the generation of now.

    Nested calls keep the outermost start (a tier method called by another).
    """
    start = _STARTED.get()
    if start is not None:
        yield start
        return
    with started_at(_generation):
        yield _generation


@contextmanager
def started_at(start: int) -> Iterator[None]:
    """Run a call as if it had started at generation ``start`` (a queued write's submit)."""
    token = _STARTED.set(start)
    try:
        yield
    finally:
        _STARTED.reset(token)


def put_namespaces(ops: Iterable[Any]) -> list[tuple[str, ...]]:
    """The namespaces ``ops`` write values to (``PutOp``/``RestoreOp`` with a value)."""
    return [
        tuple(op.namespace)
        for op in ops
        if getattr(op, "value", None) is not None and hasattr(op, "namespace")
    ]


def _prefixes(namespaces: Iterable[tuple[str, ...] | None]) -> list[Prefix]:
    found = {(ns[0], ns[1]) for ns in namespaces if ns and len(ns) >= 2 and ns[0] == ROOT_LABEL}
    return sorted(found)


def _store_id(store: object) -> int:
    """One id for a store and its thread-safe wrapper (they are one store)."""
    from langchain_tiered_memory.stores.serialized import unwrap

    return id(unwrap(store)) if isinstance(store, BaseStore) else id(store)


def _fence(store: object, prefix: Prefix) -> _Fence:
    return _FENCES.setdefault((_store_id(store), prefix), _Fence())


def _wake_all(fence: _Fence) -> None:
    waiters, fence.waiters = fence.waiters, []
    for waiter in waiters:
        wake(waiter)  # False when its event loop is closed: nobody waits any more


def _refused(prefix: Prefix) -> UserErasedError:
    return UserErasedError(
        f"a write for user {label_to_id(prefix[1])!r} was refused: it started before "
        "forget_user erased that user, so it may carry erased data back; make the write "
        "again if it should be stored for the user from now on"
    )


def _leave(store: object, prefixes: list[Prefix], loop: asyncio.AbstractEventLoop | None) -> None:
    with _MUTEX:
        for prefix in prefixes:
            fence = _fence(store, prefix)
            fence.writing -= 1
            fence.writer_loops.remove(loop)
            if not fence.writing:
                _wake_all(fence)
            if not (fence.erased_at or fence.erasing or fence.writing or fence.waiters):
                _FENCES.pop((_store_id(store), prefix), None)  # idle, records no erasure


def _blocking_wait_check(fence: _Fence, what: str) -> None:
    """Refuse to block the thread of an event loop on a fence that loop must free."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # no event loop on this thread: nothing to deadlock
        return
    if fence.eraser_loop is loop or loop in fence.writer_loops:
        raise ConfigurationError(
            f"a synchronous {what} was called inside a running event loop while an async "
            "call of that loop holds the same user's erasure fence; it would wait forever: "
            "await the async twin instead (e.g. aforget_user, astore_fact)"
        )


def _waits(
    step: Callable[[], _Fence | None], loop: asyncio.AbstractEventLoop | None, what: str
) -> Iterator[Waiter]:
    """Run ``step`` under ``_MUTEX`` until it passes, yielding a waiter on each fence it names."""
    while True:
        with _MUTEX:
            blocker = step()
            if blocker is None:
                return
            if loop is None:
                _blocking_wait_check(blocker, what)
            waiter = threading.Event() if loop is None else loop.create_future()
            blocker.waiters.append(waiter)
        yield waiter


def _wait(waits: Iterator[Waiter]) -> None:
    for waiter in waits:
        assert isinstance(waiter, threading.Event)
        waiter.wait()


async def _await(waits: Iterator[Waiter]) -> None:
    for waiter in waits:
        assert isinstance(waiter, asyncio.Future)
        await waiter


def _enter(
    store: object, prefixes: list[Prefix], loop: asyncio.AbstractEventLoop | None
) -> Callable[[], _Fence | None]:
    """The step that passes the fences of ``prefixes`` for a call's batch.

    Under ``_MUTEX``, the step passes every fence (``None``) or returns the fence
    to wait for; it raises if a fence refuses the call.
    """
    start = _STARTED.get()

    def step() -> _Fence | None:
        nonlocal start
        if start is None:  # a call that waits keeps the generation it first saw
            start = _generation
        fences = [_fence(store, p) for p in prefixes]
        for prefix, fence in zip(prefixes, fences, strict=True):
            if fence.erased_at > start:
                raise _refused(prefix)
        for fence in fences:
            if fence.erasing:
                return fence
        for fence in fences:
            fence.writing += 1
            fence.writer_loops.append(loop)
        return None

    return step


@contextmanager
def writing(store: object, namespaces: Iterable[tuple[str, ...] | None]) -> Iterator[None]:
    """Pass the erasure fence of every user ``namespaces`` belong to, for one batch.

    Raises:
        UserErasedError: A user was erased after the current call started.
        ConfigurationError: Called on an event loop's thread that would wait for
            an erasure run by that loop.
    """
    prefixes = _prefixes(namespaces)
    if not prefixes:
        yield
        return
    _wait(_waits(_enter(store, prefixes, None), None, "memory write"))
    try:
        yield
    finally:
        _leave(store, prefixes, None)


@asynccontextmanager
async def awriting(
    store: object, namespaces: Iterable[tuple[str, ...] | None]
) -> AsyncIterator[None]:
    """Async twin of :func:`writing`: waits suspended, never blocking the event loop."""
    prefixes = _prefixes(namespaces)
    if not prefixes:
        yield
        return
    loop = asyncio.get_running_loop()
    await _await(_waits(_enter(store, prefixes, loop), loop, "memory write"))
    try:
        yield
    finally:
        _leave(store, prefixes, loop)


def _begin(store: object, prefix: Prefix, loop: asyncio.AbstractEventLoop | None) -> _Fence | None:
    """Under ``_MUTEX``: take the fence (``None``), or return the one to wait for."""
    global _generation
    fence = _fence(store, prefix)
    if fence.erasing:
        return fence  # another erasure of this user: one at a time
    _generation += 1
    fence.erased_at = _generation
    fence.erasing = True
    fence.eraser_loop = loop
    return None


def _end(store: object, prefix: Prefix) -> None:
    with _MUTEX:
        fence = _fence(store, prefix)
        fence.erasing = False
        fence.eraser_loop = None
        _wake_all(fence)


def _writers(store: object, prefix: Prefix) -> _Fence | None:
    """Under ``_MUTEX``: the user's fence while batches are past it, else ``None``."""
    fence = _fence(store, prefix)
    return fence if fence.writing else None


@contextmanager
def erasing(store: object, user_prefix: tuple[str, ...]) -> Iterator[None]:
    """Hold the fence of one user while erasing it (blocking; see the module docstring).

    Raises the generation, then waits for the batches of that user already past
    the fence. Writes of calls started before stay refused after the block ends.
    """
    prefix = _prefixes([tuple(user_prefix)])[0]
    _wait(_waits(lambda: _begin(store, prefix, None), None, "forget_user"))
    try:
        _wait(_waits(lambda: _writers(store, prefix), None, "forget_user"))
        yield
    finally:
        _end(store, prefix)


@asynccontextmanager
async def aerasing(store: object, user_prefix: tuple[str, ...]) -> AsyncIterator[None]:
    """Async twin of :func:`erasing`: waits suspended, never blocking the event loop."""
    prefix = _prefixes([tuple(user_prefix)])[0]
    loop = asyncio.get_running_loop()
    await _await(_waits(lambda: _begin(store, prefix, loop), loop, "forget_user"))
    try:
        await _await(_waits(lambda: _writers(store, prefix), loop, "forget_user"))
        yield
    finally:
        _end(store, prefix)
