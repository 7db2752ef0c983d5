"""The live shard of the embedded engine: its write lock, read gate and write journal.

Every write to the shard goes through :meth:`LiveShard.write` (serialised by
the write lock); every read runs inside :meth:`LiveShard.reading` (shared, any
number at once). A background optimisation (:mod:`.edge_optimizer`) uses the
rest:

* :meth:`LiveShard.start_journal` (under the write lock, right after the shard
  was flushed and copied) makes every later write also land in an in-memory
  journal, in order, to be replayed into the new shard;
* :meth:`LiveShard.swap` (under the write lock and the exclusive gate: no
  write and no read is running) replaces the shard and ends the journal.

Lock order: the write lock before the gate. A thread that holds the shared gate
never takes the write lock (reads never write), so a swap cannot deadlock.

Examples:
    >>> gate = ReadGate()
    >>> with gate.shared():
    ...     pass
    >>> with gate.exclusive():
    ...     pass
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import qdrant_edge as qe

from langchain_tiered_memory.errors import BackendError

__all__ = ["LiveShard", "ReadGate"]


class ReadGate:
    """A readers-writer gate: many readers at once, or one exclusive holder."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._exclusive = False

    @contextmanager
    def shared(self) -> Iterator[None]:
        """Enter as one of many readers (waits while an exclusive holder is inside)."""
        with self._cond:
            while self._exclusive:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Enter alone: new readers wait, running readers are waited for."""
        with self._cond:
            while self._exclusive:
                self._cond.wait()
            self._exclusive = True
            while self._readers:
                self._cond.wait()
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()


class LiveShard:
    """The open shard and directory of an engine, with its locks and journal.

    Args:
        shard: The open Qdrant Edge shard.
        directory: Its directory.
    """

    def __init__(self, shard: qe.EdgeShard, directory: Path) -> None:
        self._shard: qe.EdgeShard | None = shard
        self.dir = directory
        self.write_lock = threading.RLock()
        self.gate = ReadGate()
        self.journal: list[qe.UpdateOperation] | None = None

    @property
    def shard(self) -> qe.EdgeShard:
        """The open shard.

        Raises:
            BackendError: The shard was closed.
        """
        if self._shard is None:
            raise BackendError(f"the store at {self.dir} is closed: open a new store")
        return self._shard

    def write(self, op: qe.UpdateOperation) -> None:
        """Apply one update (and journal it while a background build runs)."""
        with self.write_lock:
            self.shard.update(op)
            if self.journal is not None:
                self.journal.append(op)

    @contextmanager
    def reading(self) -> Iterator[qe.EdgeShard]:
        """The shard, for reads; it is not swapped or closed until the block ends."""
        with self.gate.shared():
            yield self.shard

    def start_journal(self) -> list[qe.UpdateOperation]:
        """Start recording writes (call under the write lock); returns the journal."""
        self.journal = []
        return self.journal

    def stop_journal(self) -> None:
        """Stop recording writes (the build was abandoned)."""
        with self.write_lock:
            self.journal = None

    def swap(self, shard: qe.EdgeShard, directory: Path) -> tuple[qe.EdgeShard, Path]:
        """Make ``shard`` live (call under the write lock and the exclusive gate).

        Returns:
            The previous shard (still open: close it) and its directory.
        """
        old, old_dir = self.shard, self.dir
        self._shard, self.dir, self.journal = shard, directory, None
        return old, old_dir

    def close(self) -> None:
        """Flush and close the shard once no read or write is running; safe to repeat."""
        with self.write_lock, self.gate.exclusive():
            shard, self._shard = self._shard, None
            self.journal = None
        if shard is not None:
            try:
                shard.flush()
            finally:
                shard.close()
