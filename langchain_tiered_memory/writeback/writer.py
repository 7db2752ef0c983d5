"""Durable write-back: memory writes that survive a crash, applied with retries.

:class:`DurableMemoryWriter` commits each write to an on-disk outbox
(:mod:`langchain_tiered_memory.writeback.outbox`) before acknowledging it and
applies it in the background; see the class and docs/concepts/writeback.md.
**Handlers must be idempotent**: a write is marked applied only after its
handler returned, so a crash in between applies it again on restart. Only
serialisable :class:`WriteOp` writes are durable; a callable is refused.

Examples:
    >>> import tempfile
    >>> from langgraph.store.memory import InMemoryStore
    >>> store = InMemoryStore()
    >>> with DurableMemoryWriter(store, tempfile.mkdtemp()) as writer:
    ...     receipt = writer.submit_put(("memories", "alice"), "diet", {"text": "vegetarian"})
    ...     writer.flush()
    ...     writer.stats().applied
    1
    >>> store.get(("memories", "alice"), "diet").value
    {'text': 'vegetarian'}
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal, TypeAlias

from langgraph.store.base import BaseStore, PutOp

from langchain_tiered_memory.erasure_fence import (
    call_started,
    generation,
    put_namespaces,
    started_at,
    writing,
)
from langchain_tiered_memory.errors import (
    ConfigurationError,
    DiskFullError,
    InvalidInputError,
    UserErasedError,
    WriteBackError,
    WriteBackTimeoutError,
)
from langchain_tiered_memory.types import JSONValue, validate_namespace
from langchain_tiered_memory.writeback.ops import (
    BUILTIN_OPS,
    DELETE,
    PUT,
    DeadLetter,
    RetryPolicy,
    WriteBackStats,
    WriteOp,
    WriteReceipt,
)
from langchain_tiered_memory.writeback.outbox import OUTBOX_FILENAME, Failure, Outbox, OutboxRow

__all__ = [
    "DurableMemoryWriter",
    "Handler",
    "WriteBackTimeoutError",
]

logger = logging.getLogger(__name__)

Handler: TypeAlias = Callable[[dict[str, JSONValue], BaseStore], None]
"""Applies a named operation: receives the JSON payload and the store. Must be idempotent."""

_PRUNE_INTERVAL = 60.0
_IDLE_WAIT = 1.0
_DISK_WAIT = 2.0
"""Longest wait between two tries of a write refused for lack of disk space (seconds)."""


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _builtin_op(row: OutboxRow) -> PutOp:
    payload = row.payload
    namespace = tuple(payload["namespace"])
    if row.op == PUT:
        return PutOp(namespace, payload["key"], payload["value"], payload.get("index"))
    return PutOp(namespace, payload["key"], None)


class DurableMemoryWriter:
    """Queue memory writes durably on disk and apply them to a store in the background.

    Writes are acknowledged only once committed to ``<path>/outbox.sqlite3``;
    they are applied in submission order by a worker thread, retried per
    ``retry``, and kept as dead letters when every attempt fails. Reopening the
    same path after a crash replays the writes that were not applied.

    Args:
        store: The LangGraph store the writes are applied to.
        path: The memory directory; created when missing.
        retry: Retry policy (a ``langgraph.types.RetryPolicy`` is accepted too).
        handlers: Named operations to register before the worker starts.
        fsync: ``True`` makes every acknowledged write survive power loss;
            ``False`` only a process crash, for higher submit throughput.
        batch_size: Most writes applied between two outbox commits.
        applied_retention: How long applied writes are kept to de-duplicate
            resubmissions; ``None`` keeps them forever.
        start: Start the worker now. Pass ``False`` when handlers are registered
            later, then call :meth:`start`, so replayed writes find their handler.
        clock: Wall-clock seconds since the epoch (injectable for tests).

    Raises:
        StoreLockedError: Another writer or process has this outbox open.

    Examples:
        >>> import tempfile
        >>> from langgraph.store.memory import InMemoryStore
        >>> store = InMemoryStore()
        >>> def store_fact(payload, store):  # idempotent: the key comes from the payload
        ...     store.put(("facts",), payload["id"], {"text": payload["text"]})
        >>> writer = DurableMemoryWriter(store, tempfile.mkdtemp(),
        ...                              handlers={"semantic.store_fact": store_fact})
        >>> _ = writer.submit(WriteOp("semantic.store_fact", {"id": "f1", "text": "likes tea"}))
        >>> writer.close()  # flushes first
        >>> store.get(("facts",), "f1").value
        {'text': 'likes tea'}
    """

    def __init__(
        self,
        store: BaseStore,
        path: str | os.PathLike[str],
        *,
        retry: RetryPolicy | Any | None = None,
        handlers: Mapping[str, Handler] | None = None,
        fsync: bool = True,
        batch_size: int = 64,
        applied_retention: timedelta | None = timedelta(days=7),
        start: bool = True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigurationError(f"batch_size must be an int >= 1, got {batch_size!r}")
        if retry is None:
            retry = RetryPolicy()
        elif not isinstance(retry, RetryPolicy):
            retry = RetryPolicy.from_langgraph(retry)
        self.store = store
        self.retry: RetryPolicy = retry
        self.batch_size = batch_size
        self.applied_retention = applied_retention
        self._clock = clock
        self._rng = random.Random()
        self._handlers: dict[str, Handler] = {}
        for name, handler in (handlers or {}).items():
            self.register(name, handler)
        self.path = Path(path)
        self._outbox = Outbox(self.path / OUTBOX_FILENAME, fsync=fsync, clock=clock)
        self._cond = threading.Condition()
        self._generation = 0
        self._closed = False
        self._thread: threading.Thread | None = None
        self._worker_error: str | None = None
        self._last_prune = 0.0
        self._opened_at = generation()
        """Erasure generation of writes found in the outbox (submitted before this writer)."""
        self._submitted_at: dict[int, int] = {}
        """Erasure generation at each submit of this writer, by seq, until applied."""
        self._recovered_through = self._outbox.last_seq()
        """Writes up to this seq were submitted before this writer opened."""
        self._submitting = 0
        """Submits between their commit and noting their generation in ``_submitted_at``."""
        self._erased = 0
        if start:
            self.start()

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Start the worker thread (no-op when running); replays pending writes first."""
        self._check_open()
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name=f"DurableMemoryWriter({self.path})", daemon=True
            )
            self._thread.start()

    def register(self, name: str, handler: Handler, *, replace: bool = False) -> None:
        """Register the handler that applies operation ``name``.

        The handler is called as ``handler(payload, store)`` on the worker thread
        and must be idempotent: after a crash it can run twice for one write.

        Raises:
            ConfigurationError: Built-in or already registered name, or not a sync callable.
        """
        if name in BUILTIN_OPS:
            raise ConfigurationError(f"{name!r} is built in: register a different name")
        if not isinstance(name, str) or not name.strip():
            raise ConfigurationError(f"handler name must be a non-empty string, got {name!r}")
        if not callable(handler) or inspect.iscoroutinefunction(handler):
            raise ConfigurationError(
                f"handler for {name!r} must be a plain (sync) callable(payload, store); it runs "
                "on the writer's thread: register the sync twin of an async function"
            )
        if name in self._handlers and not replace:
            raise ConfigurationError(
                f"a handler for {name!r} is already registered: pass replace=True to swap it"
            )
        self._handlers[name] = handler

    def close(self, timeout: float | None = None) -> None:
        """Flush, stop the worker and close the outbox; safe to call twice.

        Raises:
            WriteBackTimeoutError: Writes were still pending after ``timeout``; the
                writer is closed anyway and they are replayed on the next open.
        """
        if self._closed:
            return
        try:
            if self._thread is not None:
                self.flush(timeout)
        finally:
            self._shutdown(timeout)

    async def aclose(self, timeout: float | None = None) -> None:
        """Async twin of :meth:`close`."""
        if self._closed:
            return
        try:
            if self._thread is not None:
                await self.aflush(timeout)
        finally:
            await asyncio.to_thread(self._shutdown, timeout)

    def _shutdown(self, timeout: float | None) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(None if timeout is None else max(timeout, 1.0))
            if thread.is_alive():
                logger.warning(
                    "write-back worker on %s is still inside a handler; closing the outbox "
                    "anyway: that write stays pending and is replayed on the next open",
                    self.path,
                )
        self._outbox.close()

    def __enter__(self) -> DurableMemoryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> DurableMemoryWriter:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ submit
    def _check_open(self) -> None:
        if self._closed:
            raise WriteBackError(f"writer on {self.path} is closed: open a new DurableMemoryWriter")

    def _prepare(self, ops: Sequence[WriteOp]) -> Sequence[WriteOp]:
        self._check_open()
        for op in ops:
            if not isinstance(op, WriteOp):
                raise InvalidInputError(
                    f"expected a WriteOp, got {type(op).__name__}: build one with WriteOp.put, "
                    "WriteOp.delete or WriteOp(name, payload); callables cannot be queued durably"
                )
            if op.name not in BUILTIN_OPS and op.name not in self._handlers:
                raise InvalidInputError(
                    f"no handler registered for operation {op.name!r}: call "
                    f"writer.register({op.name!r}, handler) first (registered: "
                    f"{sorted(self._handlers) or 'none'})"
                )
        return ops

    def _wait_for_progress(self, generation: int, timeout: float) -> None:
        """Block until someone calls :meth:`_wake` after ``generation``, a stop, or ``timeout``."""
        with self._cond:
            self._cond.wait_for(lambda: self._closed or self._generation != generation, timeout)

    def _wake(self) -> None:
        with self._cond:
            self._generation += 1
            self._cond.notify_all()

    def submit_many(self, ops: Sequence[WriteOp]) -> list[WriteReceipt]:
        """Queue ``ops`` durably in one commit; returns once they are on disk.

        A write of a user whom ``TieredMemory.forget_user`` erases is fenced
        (:mod:`~langchain_tiered_memory.erasure_fence`): a submit that started
        before the erasure is refused once it began; one that starts during it
        waits for it. A write submitted before an erasure and applied after it
        is dropped from the outbox, logged and counted in :meth:`stats`
        (``erased``), never applied.

        Raises:
            InvalidInputError: An op is not a :class:`WriteOp` or has no handler;
                nothing was stored.
            WriteBackError: The outbox could not commit; nothing was stored.
            UserErasedError: The user of an op was erased after this call began;
                nothing was stored.
        """
        prepared = self._prepare(list(ops))
        written = [op.namespace for op in prepared if op.name != DELETE]  # deletes pass the fence
        with call_started() as start, writing(self.store, written):
            with self._cond:
                self._submitting += 1
            try:
                receipts = self._outbox.enqueue(prepared)
                with self._cond:
                    for receipt in receipts:
                        self._submitted_at.setdefault(receipt.seq, start)
            finally:
                with self._cond:
                    self._submitting -= 1
                    self._cond.notify_all()
        self._wake()
        return receipts

    async def asubmit_many(self, ops: Sequence[WriteOp]) -> list[WriteReceipt]:
        """Async twin of :meth:`submit_many`."""
        return await asyncio.to_thread(self.submit_many, ops)

    def submit(self, op: WriteOp) -> WriteReceipt:
        """Queue one write durably; returns once it is on disk (see :meth:`submit_many`)."""
        return self.submit_many([op])[0]

    async def asubmit(self, op: WriteOp) -> WriteReceipt:
        """Async twin of :meth:`submit`."""
        return (await self.asubmit_many([op]))[0]

    def submit_put(
        self,
        namespace: Sequence[str],
        key: str,
        value: Mapping[str, JSONValue],
        *,
        index: Literal[False] | list[str] | None = None,
        idempotency_key: str | None = None,
    ) -> WriteReceipt:
        """Queue ``store.put(namespace, key, value, index)`` durably."""
        return self.submit(
            WriteOp.put(namespace, key, value, index=index, idempotency_key=idempotency_key)
        )

    async def asubmit_put(
        self,
        namespace: Sequence[str],
        key: str,
        value: Mapping[str, JSONValue],
        *,
        index: Literal[False] | list[str] | None = None,
        idempotency_key: str | None = None,
    ) -> WriteReceipt:
        """Async twin of :meth:`submit_put`."""
        return await self.asubmit(
            WriteOp.put(namespace, key, value, index=index, idempotency_key=idempotency_key)
        )

    def submit_delete(
        self, namespace: Sequence[str], key: str, *, idempotency_key: str | None = None
    ) -> WriteReceipt:
        """Queue ``store.delete(namespace, key)`` durably."""
        return self.submit(WriteOp.delete(namespace, key, idempotency_key=idempotency_key))

    async def asubmit_delete(
        self, namespace: Sequence[str], key: str, *, idempotency_key: str | None = None
    ) -> WriteReceipt:
        """Async twin of :meth:`submit_delete`."""
        return await self.asubmit(WriteOp.delete(namespace, key, idempotency_key=idempotency_key))

    # ------------------------------------------------------------------ flush
    def _flush_check(self, remaining: int, deadline: float | None, timeout: float | None) -> None:
        if self._thread is None:
            raise WriteBackError(
                f"{remaining} write(s) are pending but the worker is not started: call start()"
            )
        if self._closed and not self._thread.is_alive():
            raise WriteBackError(f"writer on {self.path} closed with {remaining} write(s) pending")
        if deadline is not None and time.monotonic() >= deadline:
            stats = self._outbox.stats()
            raise WriteBackTimeoutError(
                f"flush timed out after {timeout}s with {remaining} write(s) still pending "
                f"({stats.retrying} retrying; last error: {stats.last_error}); they stay "
                "queued: call flush() again, or check the store and dead_letters()"
            )

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every write submitted before this call is applied or dead-lettered.

        Raises:
            WriteBackTimeoutError: ``timeout`` seconds passed first (nothing is lost).
            WriteBackError: The worker is not running.
        """
        self._check_open()
        target = self._outbox.last_seq()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._cond:
                generation = self._generation
            remaining = self._outbox.pending_through(target)
            if remaining == 0:
                return
            self._flush_check(remaining, deadline, timeout)
            wait = _IDLE_WAIT if deadline is None else max(0.0, deadline - time.monotonic())
            self._wait_for_progress(generation, min(wait, _IDLE_WAIT))

    async def aflush(self, timeout: float | None = None) -> None:
        """Async twin of :meth:`flush`; polls without blocking the event loop."""
        self._check_open()
        target = await asyncio.to_thread(self._outbox.last_seq)
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = 0.001
        while remaining := await asyncio.to_thread(self._outbox.pending_through, target):
            self._flush_check(remaining, deadline, timeout)
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.05)

    # ------------------------------------------------------------------ inspection
    def dead_letters(self, limit: int | None = None) -> list[DeadLetter]:
        """Writes that failed on every attempt, oldest first, each with its last error."""
        return self._outbox.dead_letters(limit)

    async def adead_letters(self, limit: int | None = None) -> list[DeadLetter]:
        """Async twin of :meth:`dead_letters`."""
        return await asyncio.to_thread(self.dead_letters, limit)

    def retry_dead_letters(self, seqs: Sequence[int] | None = None) -> int:
        """Re-queue dead letters (all, or those in ``seqs``) at their original position.

        A dead put/delete whose item a later write already replaced is dropped as
        superseded rather than re-applied over newer data.

        Returns:
            How many writes were re-queued.
        """
        requeued, superseded = self._outbox.requeue_dead(seqs)
        if superseded:
            logger.info("dropped %d superseded dead letter(s): %s", len(superseded), superseded)
        self._wake()
        return len(requeued)

    async def aretry_dead_letters(self, seqs: Sequence[int] | None = None) -> int:
        """Async twin of :meth:`retry_dead_letters`."""
        return await asyncio.to_thread(self.retry_dead_letters, seqs)

    def stats(self) -> WriteBackStats:
        """Counts of pending, retrying, applied and dead writes, and failed attempts."""
        return dataclasses.replace(
            self._outbox.stats(), worker_error=self._worker_error, erased=self._erased
        )

    async def astats(self) -> WriteBackStats:
        """Async twin of :meth:`stats`."""
        return await asyncio.to_thread(self.stats)

    def purge(self, namespace_prefix: Sequence[str]) -> int:
        """Delete every queued, applied or dead write under ``namespace_prefix``.

        For the right to be forgotten: afterwards the outbox holds no payload of
        that namespace. Named ops are found only when submitted with ``namespace``.

        Returns:
            How many writes were deleted.
        """
        return self._outbox.purge(validate_namespace(namespace_prefix))

    async def apurge(self, namespace_prefix: Sequence[str]) -> int:
        """Async twin of :meth:`purge`."""
        return await asyncio.to_thread(self.purge, namespace_prefix)

    # ------------------------------------------------------------------ worker
    def _run(self) -> None:
        while True:
            with self._cond:
                if self._closed:
                    return
                generation = self._generation
            try:
                wait = self._step()
                self._worker_error = None
            except Exception as exc:  # the outbox itself failed: log, back off, carry on
                self._worker_error = _error_text(exc)
                logger.exception("write-back worker on %s failed; retrying", self.path)
                wait = min(self.retry.max_interval, 1.0)
            if wait:
                self._wait_for_progress(generation, wait)

    def _step(self) -> float:
        """Apply the next batch; return how long to wait before the next step (0: none)."""
        self._maybe_prune()
        rows = self._outbox.next_batch(self.batch_size)
        if not rows:
            return _IDLE_WAIT
        due_in = rows[0].next_attempt_at - self._clock()
        if due_in > 0:
            return min(due_in, _IDLE_WAIT)
        applied, failure, erased = self._apply(rows)
        self._outbox.settle(applied, failure)
        if erased:
            with self._cond:  # counted before the rows leave: a flush that sees them gone sees it
                self._erased += len(erased)
            self._outbox.discard(erased)
            logger.warning(
                "dropped %d queued write(s) %s: their user was erased after they were submitted",
                len(erased), erased,
            )  # fmt: skip
        with self._cond:
            for seq in (*applied, *erased):
                self._submitted_at.pop(seq, None)
        self._wake()  # flushers re-check
        return 0.0

    def _apply(self, rows: list[OutboxRow]) -> tuple[list[int], Failure | None, list[int]]:
        """Apply ``rows`` in order, stopping at the first failure; also the rows erased."""
        applied: list[int] = []
        erased: list[int] = []
        i = 0
        while i < len(rows):
            j = i
            while j < len(rows) and rows[j].op in BUILTIN_OPS:
                j += 1
            if j > i + 1:  # consecutive puts/deletes: one store.batch, else one by one
                try:
                    self._store_batch(rows[i:j])
                except Exception:
                    logger.debug("batched apply failed; applying one by one", exc_info=True)
                else:
                    applied.extend(row.seq for row in rows[i:j])
                    i = j
                    continue
            row = rows[i]
            try:
                self._apply_one(row)
            except UserErasedError:
                erased.append(row.seq)
            except Exception as exc:
                return applied, self._failure(row, exc), erased
            else:
                applied.append(row.seq)
            i += 1
        return applied, None, erased

    def _started(self, rows: list[OutboxRow]) -> int:
        """The erasure generation ``rows`` were submitted at (the earliest).

        A row committed by a submit that has not noted its generation yet is
        waited for (the submit notes it right after its commit).
        """

        def noted() -> bool:
            return self._submitting == 0 or all(
                row.seq <= self._recovered_through or row.seq in self._submitted_at for row in rows
            )

        with self._cond:
            self._cond.wait_for(noted)
            return min(self._submitted_at.get(row.seq, self._opened_at) for row in rows)

    def _store_batch(self, rows: list[OutboxRow]) -> None:
        ops = [_builtin_op(row) for row in rows]
        with started_at(self._started(rows)), writing(self.store, put_namespaces(ops)):
            self.store.batch(ops)

    def _apply_one(self, row: OutboxRow) -> None:
        if row.op in BUILTIN_OPS:
            self._store_batch([row])
            return
        handler = self._handlers.get(row.op)
        if handler is None:
            raise WriteBackError(
                f"no handler registered for operation {row.op!r}: register it (or pass "
                "handlers=... / start=False) before the worker starts, then retry_dead_letters()"
            )
        with started_at(self._started([row])):
            handler(row.payload, self.store)

    def _failure(self, row: OutboxRow, exc: Exception) -> Failure:
        attempts = row.attempts + 1
        error = _error_text(exc)
        disk_full = isinstance(exc, DiskFullError)  # not the write's fault: wait, never drop
        if disk_full or self.retry.should_retry(exc, attempts):
            delay = self.retry.delay(attempts, self._rng)
            delay = min(delay, _DISK_WAIT) if disk_full else delay
            logger.warning(
                "write %d (%s) failed on attempt %d (disk full: %s), retrying in %.3fs: %s",
                row.seq, row.op, attempts, disk_full, delay, error,
            )  # fmt: skip
            return Failure(row.seq, error, self._clock() + delay)
        logger.error(
            "write %d (%s, key %s) failed after %d attempt(s) and is now a dead letter: %s",
            row.seq, row.op, row.idempotency_key, attempts, error, exc_info=exc,
        )  # fmt: skip
        return Failure(row.seq, error, None)

    def _maybe_prune(self) -> None:
        if self.applied_retention is None:
            return
        now = self._clock()
        if now - self._last_prune >= _PRUNE_INTERVAL:
            self._last_prune = now
            self._outbox.prune_applied(now - self.applied_retention.total_seconds())
