"""Reading a shard's files into the operating system's page cache.

Qdrant Edge maps its segment files into memory; when the page cache does not hold
them, every first touch is a random disk read (a search with cold payloads took
12 ms against 1.7 ms warm). Reading the files front to back first costs about 3 s
per GB. ``docs/benchmarks.md`` ("Reopen") has the figures.

Examples:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "segments").mkdir(), (d / "segments" / "a.dat").write_bytes(b"x" * 10)
    >>> read_files(d)
    10
    >>> vectors = d / "segments" / "vectors"
    >>> _ = vectors.mkdir(), (vectors / "chunk_0.mmap").write_bytes(b"v" * 5)
    >>> read_files(d), read_files(d, lazy=False)  # an open reads no original vector
    (15, 10)
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["read_files"]

_CHUNK = 1 << 20
_SKIP = frozenset({"wal"})
"""Directories reads never touch (the write-ahead log is replayed on open only)."""
_LAZY = (
    ("vectors", "chunk_"),  # original dense vectors: read only to rescore a search's candidates
    ("payload_storage", "page_"),  # payloads: read only for a search's hits
    ("store", "page_"),  # sparse (BM25) vectors: read only by lexical searches
)
"""(directory, file prefix) of the segment files an open does not read."""


def _lazy(root: str, name: str) -> bool:
    parent = os.path.basename(root)
    return any(parent == d and name.startswith(prefix) for d, prefix in _LAZY)


def read_files(directory: Path, *, lazy: bool = True) -> int:
    """Read every file under ``directory`` once, sequentially; returns the bytes read.

    ``lazy=False`` reads only what Qdrant Edge reads when it opens the shard (page by
    page otherwise: it drops them from the page cache as it closes them), leaving out
    the files searches read piecemeal (:data:`_LAZY`). Files that disappear meanwhile
    (a background optimisation swapped the shard) are skipped.
    """
    total = 0
    buffer = bytearray(_CHUNK)
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP)
        for name in sorted(files):
            if not lazy and _lazy(root, name):
                continue
            try:
                with open(os.path.join(root, name), "rb", buffering=0) as fh:
                    while n := fh.readinto(buffer):
                        total += n
            except FileNotFoundError:
                continue
    return total
