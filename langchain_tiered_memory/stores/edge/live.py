"""The live shard of the embedded engine: its write lock, read gate and write journal.

Every write goes through :meth:`LiveShard.write` (serialised by the write lock),
every read runs inside :meth:`LiveShard.reading` (shared). A background
optimisation (:mod:`.optimizer`) journals the writes made after its copy
(:meth:`LiveShard.start_journal`) and replaces the shard under the write lock and
the exclusive gate (:meth:`LiveShard.swap`). Lock order: the write lock before the
gate; readers never take the write lock, so a swap cannot deadlock.

Disk space: a write refused on a (nearly) full filesystem raises
:class:`~langchain_tiered_memory.errors.DiskFullError` before the shard is touched
(:data:`MIN_FREE_BYTES`), and so does an optimisation whose segments would not fit
(:func:`check_build_space`); see ``docs/reliability.md``, "Disk space".

Examples:
    >>> gate = ReadGate()
    >>> with gate.shared():
    ...     pass
    >>> with gate.exclusive():
    ...     pass
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from langchain_tiered_memory.errors import BackendError, DiskFullError
from langchain_tiered_memory.stores.edge.integrity import mark_closed, mark_open

__all__ = [
    "MIN_FREE_BYTES",
    "LiveShard",
    "ReadGate",
    "build_bytes",
    "check_build_space",
    "check_free_space",
    "release_freed_memory",
]

MIN_FREE_BYTES = 64 << 20
"""Free bytes a filesystem must keep for a write to be tried (64 MiB): what one write can
touch through Qdrant Edge's memory-mapped segment files."""
logger = logging.getLogger(__name__)
_NO_SPACE = ("No space left on device", "os error 28", "ENOSPC")


def _free_bytes(directory: Path) -> int:
    stats = os.statvfs(directory)
    return stats.f_bavail * stats.f_frsize


def build_bytes(directory: Path, copies: int) -> int:
    """Free bytes an optimisation needs: ``copies`` of the shard's size, plus the reserve.

    A background optimisation copies the shard and builds from the copy (2 copies).
    """
    used = 0
    for path in directory.rglob("*"):
        try:
            stat = path.lstat()
        except FileNotFoundError:  # removed meanwhile (an old WAL file, a merged segment)
            continue
        if path.is_file():
            used += min(stat.st_size, stat.st_blocks * 512)
    return copies * used + MIN_FREE_BYTES


def check_build_space(directory: Path, needed: int) -> None:
    """Refuse an optimisation of the shard in ``directory`` while ``needed`` bytes are not free.

    Raises:
        DiskFullError: Naming the directory, the bytes needed and free, and the fix.
    """
    free = _free_bytes(directory)
    if free < needed:
        raise DiskFullError(
            f"optimising the store at {directory} needs about {needed // 1024} KiB free on its "
            f"filesystem (new segments as large as the shard, plus the "
            f"{MIN_FREE_BYTES // 1024} KiB reserve), but {free // 1024} KiB are free: "
            "the optimisation was refused and the store is unchanged; free space on that "
            "filesystem (or move the memory directory to a larger one) and optimize again"
        )


def check_free_space(directory: Path) -> None:
    """Refuse a write to ``directory`` while its filesystem has less than the reserve free.

    Raises:
        DiskFullError: Naming the directory, the bytes free and the fix.
    """
    free = _free_bytes(directory)
    if free < MIN_FREE_BYTES:
        raise DiskFullError(
            f"the filesystem of {directory} has {free // 1024} KiB free, less than the "
            f"{MIN_FREE_BYTES // 1024} KiB a store write keeps in reserve: the write was "
            "refused and nothing was stored; free space on that filesystem and retry"
        )


try:  # the C library's malloc_trim (glibc); None where it has none (musl, macOS)
    _TRIM: Any = ctypes.CDLL(None).malloc_trim
    _TRIM.argtypes, _TRIM.restype = [ctypes.c_size_t], ctypes.c_int
except (OSError, AttributeError):
    _TRIM = None


def release_freed_memory() -> None:
    """Give the heap a closed shard freed back to the operating system (glibc only).

    glibc keeps freed pages mapped (``docs/benchmarks.md``, "Memory"); called after a
    shard is closed or replaced, and after an in-process optimisation.
    """
    if _TRIM is not None:
        _TRIM(0)


def _is_no_space(exc: BaseException) -> bool:
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return True
    return any(marker in str(exc) for marker in _NO_SPACE)


def _container(directory: Path) -> Path:
    """The collection directory of a live shard directory (a generation's parent)."""
    return directory.parent if directory.name.startswith("shard-") else directory


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
            self._cond.wait_for(lambda: not self._exclusive)
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
            self._cond.wait_for(lambda: not self._exclusive)
            self._exclusive = True
            self._cond.wait_for(lambda: not self._readers)
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
        try:  # until the clean close, the next open checks as after a crash
            mark_open(_container(directory), directory)
        except OSError as exc:
            logger.warning("could not record that %s is open: %r", directory, exc)

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
        """Apply one update (and journal it while a background build runs).

        Raises:
            DiskFullError: The shard's filesystem is (nearly) full; nothing was written.
            BackendError: The shard was closed.
        """
        with self.write_lock:
            shard = self.shard
            check_free_space(self.dir)
            try:
                shard.update(op)
            except Exception as exc:
                if _is_no_space(exc):
                    raise DiskFullError(
                        f"the filesystem of {self.dir} is full ({exc}): the write was refused; "
                        "free space on that filesystem and retry"
                    ) from exc
                raise
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
                points = shard.info().points_count
            finally:
                shard.close()
                release_freed_memory()
            try:
                mark_closed(_container(self.dir), self.dir, points)
            except OSError as exc:  # the shard is safe; only the next open checks less
                logger.warning("could not record the clean close of %s: %r", self.dir, exc)
