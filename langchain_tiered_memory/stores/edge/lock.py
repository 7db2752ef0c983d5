"""The collection lock of the embedded engine, and who holds it.

An exclusive ``flock`` on ``tiered_memory.lock`` in the collection directory, held
from open to close across shard generations (the kernel releases it when the
process dies, so a crash never leaves a stale lock). Once the shard is open,
``tiered_memory.holder.json`` (pid, host, time) names the holder, so a second
opener's :class:`~langchain_tiered_memory.errors.StoreLockedError` can name the
process to close; a stale holder file never blocks. Without ``fcntl`` (Windows)
only the write-ahead-log lock protects the directory.

Examples:
    >>> import tempfile
    >>> from pathlib import Path
    >>> lock = CollectionLock(Path(tempfile.mkdtemp()))
    >>> lock.acquire()
    >>> lock.publish()
    >>> lock.holder()["pid"] == os.getpid()
    True
    >>> lock.release()
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

from langchain_tiered_memory.errors import StoreLockedError
from langchain_tiered_memory.stores.edge.files import HOLDER, LOCK
from langchain_tiered_memory.stores.edge.integrity import replace_file
from langchain_tiered_memory.types import utcnow

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["CollectionLock", "locked_error"]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by another user
        return True
    return True


def describe_holder(info: dict[str, Any] | None) -> str:
    """Who holds a store, in words, from its holder file (``None`` if there is none)."""
    if not info or not isinstance(info.get("pid"), int):
        return "another process or store handle"
    pid, host, since = info["pid"], str(info.get("host", "?")), str(info.get("since", "?"))
    if host == socket.gethostname():
        if pid == os.getpid():
            return f"this process (pid {pid}, another store object on this path, since {since})"
        if not _pid_alive(pid):
            return (
                f"a process started from process {pid} on host {host} (since {since}; "
                f"process {pid} is no longer running, a child it forked may hold the lock)"
            )
    return f"process {pid} on host {host} (since {since})"


def locked_error(directory: Path, info: dict[str, Any] | None) -> StoreLockedError:
    """The error for a store that another process or handle has open."""
    return StoreLockedError(
        f"the store at {directory} is already open in {describe_holder(info)}: close that "
        "store (store.close() or memory.close()) or use a different path"
    )


class CollectionLock:
    """An exclusive lock on one collection directory, with a record of its holder.

    Args:
        container: The collection directory (created if missing).
    """

    def __init__(self, container: Path) -> None:
        self.container = container
        self._fd: int | None = None
        self._published = False

    def holder(self) -> dict[str, Any] | None:
        """The holder record on disk (possibly stale), or None."""
        try:
            data = json.loads((self.container / HOLDER).read_text("utf-8"))
        except (FileNotFoundError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def acquire(self) -> None:
        """Take the lock.

        Raises:
            StoreLockedError: Another process or store object holds it.
        """
        self.container.mkdir(parents=True, exist_ok=True)
        if fcntl is None:  # pragma: no cover - Windows: the WAL lock protects the shard
            return
        fd = os.open(self.container / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise locked_error(self.container, self.holder()) from None
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def publish(self) -> None:
        """Record this process as the holder (call once the shard is open)."""
        record = {"pid": os.getpid(), "host": socket.gethostname(), "since": utcnow().isoformat()}
        replace_file(self.container / HOLDER, json.dumps(record))
        self._published = True

    def release(self) -> None:
        """Remove the holder record and release the lock; safe to repeat."""
        if self._published:
            self._published = False
            (self.container / HOLDER).unlink(missing_ok=True)
        fd, self._fd = self._fd, None
        if fd is not None:
            try:  # an fd is only taken where fcntl exists
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
