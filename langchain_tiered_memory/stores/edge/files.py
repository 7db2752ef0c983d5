"""On-disk layout of an embedded collection: shard generations, the commit pointer, recovery.

A collection lives in one directory, ``<path>/<collection>`` (the *container*).
The live Qdrant Edge shard is the container itself (every store starts so), or
a generation directory ``shard-NNNNNN`` inside it named by the pointer file
``tiered_memory.current``. A background optimisation builds the next generation
and commits it by rewriting the pointer (temporary file, fsync, rename, fsync of
the directory).

Recovery rule (:func:`recover`, with the collection lock held): the pointer names
the live shard (no pointer: the container); every other ``shard-*`` entry and a
leftover temporary pointer are deleted, and so are the container's own shard files
when the pointer names a generation. Nothing is deleted when the pointer names a
missing directory, when the pointer is missing but generations exist or the
manifest names one (:class:`~langchain_tiered_memory.errors.StoreDamagedError`
naming the generation to restore), or when the live shard's files fail their
checks (:mod:`.integrity`). A crash before the commit reopens the old shard, which
received every acknowledged write; a crash after it reopens the new one.

Examples:
    >>> import tempfile
    >>> from pathlib import Path
    >>> container = Path(tempfile.mkdtemp())
    >>> recover(container) == container
    True
    >>> target = next_generation(container)
    >>> target.name
    'shard-000001'
"""

from __future__ import annotations

import errno
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from langchain_tiered_memory.errors import BackendError, StoreDamagedError
from langchain_tiered_memory.stores.edge.integrity import (
    MANIFEST,
    check_shard,
    memory_dir,
    read_manifest,
    replace_file,
)

__all__ = [
    "META",
    "commit",
    "copy_tree",
    "create_generation",
    "fsync_tree",
    "has_shard",
    "is_own_entry",
    "next_generation",
    "recover",
    "remove_shard",
    "repair_pointer",
    "verify",
]

META = "tiered_memory_store.json"
"""Payload format and vector size of the collection (kept in the container)."""
CURRENT = "tiered_memory.current"
"""Pointer file: the name of the live generation directory."""
LOCK = "tiered_memory.lock"
"""The collection lock (see :mod:`.lock`)."""
HOLDER = "tiered_memory.holder.json"
"""Who holds the collection lock (see :mod:`.lock`)."""
_OWN_FILES = frozenset(
    {META, CURRENT, LOCK, HOLDER, MANIFEST}
    | {f"{name}.tmp" for name in (META, CURRENT, HOLDER, MANIFEST)}
)
_GENERATION = re.compile(r"^shard-(\d{6})(\..+)?$")
_CHUNK = 1 << 20
_SYNC_THREADS = 8
logger = logging.getLogger(__name__)


def is_own_entry(name: str) -> bool:
    """True for the entries of a container that are ours, not Qdrant Edge's."""
    return name in _OWN_FILES or _GENERATION.match(name) is not None


def has_shard(directory: Path) -> bool:
    """True if ``directory`` holds a Qdrant Edge shard (its config or segments)."""
    return (directory / "edge_config.json").exists() or (directory / "segments").is_dir()


def _pointer(container: Path) -> str | None:
    try:
        name = (container / CURRENT).read_text("utf-8").strip()
    except FileNotFoundError:
        return None
    if not _GENERATION.match(name) or "." in name:
        raise BackendError(
            f"{container / CURRENT} names {name!r}, which is not a shard generation: "
            "restore the store directory from a backup"
        )
    return name


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def recover(container: Path) -> Path:
    """Apply the recovery rule (module docstring); returns the live shard directory.

    Call it only while holding the collection lock.

    Raises:
        BackendError: The pointer names a missing or invalid directory.
    """
    container.mkdir(parents=True, exist_ok=True)
    live = _checked_live(container)
    current = None if live == container else live.name
    for entry in container.iterdir():
        if _GENERATION.match(entry.name) and entry.name != current:
            _remove(entry)  # an unfinished or superseded build
        elif entry.name == CURRENT + ".tmp":
            entry.unlink()
    if current:
        remove_shard(container, container)  # the superseded shard kept in the container itself
    return live


def _checked_live(container: Path) -> Path:
    """The live shard directory, once the checks of the recovery rule passed (nothing changes)."""
    current = _pointer(container)
    live = container / current if current else container
    if current and not has_shard(live):
        raise StoreDamagedError(
            f"the store at {container} names {current} as its live shard, but that directory "
            "holds no shard: restore the store directory from a backup"
        )
    if current is None:
        _check_missing_pointer(container)
    check_shard(container, live)
    return live


def _check_missing_pointer(container: Path) -> None:
    """Refuse to treat generations as unfinished builds when the pointer may be lost.

    Raises:
        StoreDamagedError: The container holds no shard of its own, but generations
            exist or the manifest names one.
    """
    if has_shard(container):
        return
    generations = sorted(e.name for e in container.iterdir() if _GENERATION.match(e.name))
    named = (read_manifest(container) or {}).get("generation")
    if not generations and named in (None, "."):
        return
    last = f"; the last clean close recorded {named}" if named not in (None, ".") else ""
    raise StoreDamagedError(
        f"the pointer file {container / CURRENT} is missing, and the store keeps its data in "
        f"generation folder(s) {', '.join(generations) or '(none left)'}{last}: nothing was "
        f"deleted. Restore {CURRENT} from a backup, or write the live generation's name into "
        f"it (`tiered-memory repair --path {memory_dir(container)}` writes the one the "
        "manifest names)"
    )


def verify(container: Path) -> list[str]:
    """Every problem :func:`recover` would refuse ``container`` for, without changing a file."""
    try:
        _checked_live(container)
    except BackendError as exc:  # StoreDamagedError included
        return [str(exc)]
    return []


def repair_pointer(container: Path) -> str | None:
    """Rewrite a missing pointer file from the manifest; returns the generation named, or None.

    Only the generation the manifest recorded at the last clean close is
    restored, and only if it still holds a shard.
    """
    if (container / CURRENT).exists() or has_shard(container):
        return None
    named = (read_manifest(container) or {}).get("generation")
    if not isinstance(named, str) or not _GENERATION.match(named) or "." in named:
        return None
    if not has_shard(container / named):
        return None
    commit(container, container / named)
    return named


def next_generation(container: Path) -> Path:
    """The directory for the next shard generation (not created)."""
    matches = (_GENERATION.match(entry.name) for entry in container.iterdir())
    last = max((int(match.group(1)) for match in matches if match), default=0)
    return container / f"shard-{last + 1:06d}"


def _fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable where the platform allows it."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms that cannot open directories
        return
    try:
        os.fsync(fd)
    except OSError as exc:  # pragma: no cover - the rename happened; only its durability is weaker
        logger.warning("could not fsync directory %s after a rename: %r", directory, exc)
    finally:
        os.close(fd)


def commit(container: Path, generation: Path) -> None:
    """Make ``generation`` the live shard: atomically rewrite the pointer file."""
    replace_file(container / CURRENT, generation.name + "\n")
    _fsync_dir(container)


def remove_shard(container: Path, shard: Path) -> None:
    """Delete a superseded shard: a generation directory, or the Edge files of the container."""
    if shard == container:
        for entry in container.iterdir():
            if not is_own_entry(entry.name):
                _remove(entry)
    elif shard.parent == container and _GENERATION.match(shard.name):
        _remove(shard)
    else:
        raise ValueError(f"{shard} is not a shard of {container}")


def _copy_file(src: Path, dst: Path) -> int:
    """Copy one file, leaving holes for its unwritten and all-zero blocks; returns bytes written.

    Qdrant Edge preallocates sparse files: copied naively they would fill the disk.
    """
    written = 0
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        fd_in, fd_out = fin.fileno(), fout.fileno()
        size = os.fstat(fd_in).st_size
        for start, end in _extents(fd_in, size):
            offset = start
            while offset < end:
                data = os.pread(fd_in, min(_CHUNK, end - offset), offset)
                if not data:
                    raise OSError(errno.EIO, f"{src} shrank while it was copied")
                if data.count(0) != len(data):
                    os.pwrite(fd_out, data, offset)
                    written += len(data)
                offset += len(data)
        fout.truncate(size)
    return written


def _extents(fd: int, size: int) -> Iterator[tuple[int, int]]:
    """The (start, end) ranges of a file that hold data (all of it without SEEK_DATA)."""
    if not hasattr(os, "SEEK_DATA"):  # pragma: no cover - not Linux or macOS
        yield 0, size
        return
    position = 0
    while position < size:
        try:
            start = os.lseek(fd, position, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # only a hole is left
                return
            raise
        end = min(os.lseek(fd, start, os.SEEK_HOLE), size)
        yield start, end
        position = end


def _fsync_file(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(directory: Path) -> None:
    """Sync every file and directory under ``directory`` (and itself) to disk, in a few threads.

    The filesystem commits concurrent syncs together (about 3x faster for a new shard).
    """
    walk = list(os.walk(directory))
    files = [os.path.join(root, name) for root, _, names in walk for name in names]
    with ThreadPoolExecutor(_SYNC_THREADS) as pool:
        list(pool.map(_fsync_file, files))
        list(pool.map(_fsync_dir, [Path(root) for root, _, _ in walk]))


def create_generation(container: Path, make: Callable[[Path], None]) -> Path | None:
    """Build a new shard on tmpfs with ``make(path)``, copy it in durably, commit it.

    One fsync per file instead of Qdrant Edge's hundred-odd syncs of a new shard.
    Returns the committed generation directory, or None where there is no tmpfs or
    the store is on it (build in place then).
    """
    scratch = Path("/dev/shm")
    if not (scratch.is_dir() and os.access(scratch, os.W_OK)):
        return None
    if os.stat(scratch).st_dev == os.stat(container).st_dev:
        return None
    target = next_generation(container)
    try:
        with tempfile.TemporaryDirectory(prefix="ltm-new-shard-", dir=scratch) as tmp:
            template = Path(tmp) / "shard"
            make(template)
            copy_tree(template, target, skip=lambda name: False)
        fsync_tree(target)
        commit(container, target)
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise
    return target


def copy_tree(src: Path, dst: Path, skip: Callable[[str], bool] = is_own_entry) -> int:
    """Copy the shard files of ``src`` into a new directory ``dst``; returns bytes written.

    Top-level entries for which ``skip(name)`` is true are left out. Holes and
    all-zero blocks are not written (the copy is sparse).
    """
    dst.mkdir()
    copied = 0
    for entry in sorted(src.iterdir()):
        if skip(entry.name):
            continue
        if entry.is_dir():
            copied += copy_tree(entry, dst / entry.name, skip=lambda name: False)
        else:
            copied += _copy_file(entry, dst / entry.name)
    return copied
