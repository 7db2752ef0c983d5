"""Checks that an embedded shard's files are complete before it is opened.

Qdrant Edge opens a shard whose files were lost or damaged without a word (a
deleted segment folder opens empty; a WAL is read up to its first bad entry), so
the engine checks first and refuses with a
:class:`~langchain_tiered_memory.errors.StoreDamagedError`: the WAL's chained
CRC-32C entries (a torn tail is not damage), the WAL reaching the operation the
segments were flushed at, and the segments the manifest recorded at the last
clean close. ``docs/reliability.md`` ("How damage is detected") has the rules.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> container = Path(tempfile.mkdtemp())
    >>> read_manifest(container) is None
    True
    >>> write_manifest(container, {"clean": True, "generation": ".", "segments": []})
    >>> read_manifest(container)["clean"]
    True
"""

from __future__ import annotations

import json
import mmap
import os
import struct
from pathlib import Path
from typing import Any

import crc32c

from langchain_tiered_memory.errors import StoreDamagedError

__all__ = [
    "MANIFEST",
    "check_shard",
    "memory_dir",
    "read_manifest",
    "replace_file",
    "segment_names",
    "wal_last_index",
    "write_manifest",
]

MANIFEST = "tiered_memory.manifest.json"
"""The live generation, its segments and point count at the last clean close."""
_HEADER = 8
_CRC = 4
_MASK = 0xFFFFFFFF
_CHUNK = 1 << 20
_REPAIR = (
    "restore the store directory from a backup, or run `tiered-memory verify --path {root}` "
    "to list every problem"
)


def memory_dir(container: Path) -> Path:
    """The directory to name in commands: the memory directory (``<dir>/store/<collection>``)."""
    store = container.parent
    return store.parent if store.name == "store" else store


def _fix(container: Path) -> str:
    return _REPAIR.format(root=memory_dir(container))


def read_manifest(container: Path) -> dict[str, Any] | None:
    """The manifest of ``container`` (None when there is none).

    Raises:
        StoreDamagedError: The manifest exists but is not readable JSON.
    """
    path = container / MANIFEST
    try:
        data = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise StoreDamagedError(
            f"{path} is damaged ({exc}): {_fix(container)}; deleting only this file is safe "
            "when the store was closed cleanly"
        ) from exc
    if not isinstance(data, dict):
        raise StoreDamagedError(f"{path} is not a store manifest: {_fix(container)}")
    return data


def replace_file(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically (``<name>.tmp``, fsync, rename)."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def write_manifest(container: Path, data: dict[str, Any]) -> None:
    """Replace the manifest atomically."""
    replace_file(container / MANIFEST, json.dumps(data, sort_keys=True))


def segment_names(live: Path) -> list[str]:
    """The segment folders of the shard in ``live``, sorted.

    A folder named ``*.deleted`` is a segment Qdrant Edge was removing (it renames a
    segment before deleting it, and removes what a crash left of it on open): not one.
    """
    segments = live / "segments"
    if not segments.is_dir():
        return []
    return sorted(
        entry.name
        for entry in segments.iterdir()
        if entry.is_dir() and not entry.name.endswith(".deleted")
    )


def _reflect(value: int) -> int:
    return int(f"{value:032b}"[::-1], 2)


def _scan_segment(path: Path) -> int:
    """Count the valid entries of one WAL segment file.

    Raises:
        StoreDamagedError: An entry fails its checksum and is not a torn tail.
    """
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size < _HEADER or fh.read(3) != b"wal":
            raise StoreDamagedError(f"the write-ahead-log file {path} has no valid header")
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            crc = struct.unpack_from("<I", data, 4)[0]
            offset, count = _HEADER, 0
            while offset + _HEADER + _CRC < size:
                (length,) = struct.unpack_from("<Q", data, offset)
                end = offset + _HEADER + length + (-(length + _CRC)) % 8
                if end + _CRC > size:
                    break
                stored = struct.unpack_from("<I", data, end)[0]
                if crc32c.crc32c(data[offset:end], _reflect(crc) ^ _MASK) != stored:
                    torn = stored == 0 and _all_zero(data, end + _CRC, size)
                    if length and not torn:
                        raise StoreDamagedError(
                            f"the write-ahead-log file {path} is damaged at byte {offset}: entry "
                            f"{count} fails its checksum and written entries follow it"
                        )
                    break
                crc, count, offset = stored, count + 1, end + _CRC
            return count


def _all_zero(data: mmap.mmap, start: int, end: int) -> bool:
    """Whether bytes ``start:end`` are all zero (never written: a torn tail, not damage)."""
    chunks = (data[at : min(at + _CHUNK, end)] for at in range(start, end, _CHUNK))
    return all(chunk.count(0) == len(chunk) for chunk in chunks)


def wal_last_index(wal: Path) -> int:
    """The number of the last operation in the WAL folder ``wal`` (-1 when empty).

    Segments are read in the order Qdrant Edge reads them: ``closed-<start>``
    by start, then ``open-<id>`` by id.

    Raises:
        StoreDamagedError: A WAL file is damaged or closed segments have a gap.
    """
    found: dict[str, list[tuple[int, Path]]] = {"closed": [], "open": []}
    for entry in wal.iterdir():
        kind, _, number = entry.name.partition("-")
        if kind in found and number.isdigit():
            found[kind].append((int(number), entry))
    closed, opened = sorted(found["closed"]), sorted(found["open"])
    position = closed[0][0] if closed else 0
    for start, path in closed:
        if start != position:
            raise StoreDamagedError(
                f"the write-ahead log {wal} is missing the segment with operations "
                f"{position} to {start - 1}"
            )
        position += _scan_segment(path)
    position += sum(_scan_segment(path) for _, path in opened)
    sizes = {path: path.stat().st_size for _, path in closed + opened}
    largest = max(sizes.values(), default=0)
    short = sorted(path.name for path, size in sizes.items() if size < largest)
    if short:
        raise StoreDamagedError(
            f"the write-ahead-log file(s) {', '.join(short)} in {wal} are shorter than the "
            f"{largest}-byte segments Qdrant Edge preallocates: they were cut short"
        )
    return position - 1


def _flushed_version(live: Path) -> int:
    """The highest operation number the segments were flushed at (-1 for none)."""
    version = -1
    for name in segment_names(live):
        path = live / "segments" / name / "segment.json"
        try:
            meta = json.loads(path.read_text("utf-8"))
        except FileNotFoundError:
            raise StoreDamagedError(
                f"the segment {path.parent} has no segment.json: the segment is incomplete"
            ) from None
        except ValueError as exc:
            raise StoreDamagedError(f"{path} is damaged ({exc})") from exc
        found = meta.get("version")
        if isinstance(found, int):
            version = max(version, found)
    return version


def _check(container: Path, live: Path, manifest: dict[str, Any] | None) -> None:
    wal = live / "wal"
    if not wal.is_dir():
        raise StoreDamagedError(f"the write-ahead-log folder {wal} is missing")
    flushed = _flushed_version(live)
    last = wal_last_index(wal)
    if last < flushed:
        raise StoreDamagedError(
            f"the write-ahead log {wal} ends at operation {last} but the segments were "
            f"flushed at operation {flushed}: WAL files were deleted or cut short"
        )
    if manifest and manifest.get("clean") and manifest.get("generation") == _label(container, live):
        missing = sorted(set(manifest.get("segments") or []) - set(segment_names(live)))
        if missing:
            raise StoreDamagedError(
                f"segment folder(s) {', '.join(missing)} of {live / 'segments'} are missing "
                f"(the store closed cleanly with {manifest.get('points')} points in them)"
            )


def _label(container: Path, live: Path) -> str:
    return "." if live == container else live.name


def check_shard(container: Path, live: Path) -> None:
    """Refuse a shard in ``live`` whose files are missing or damaged (module docstring).

    A directory without a shard yet (a new store) passes.

    Raises:
        StoreDamagedError: Naming the file and the repair.
    """
    if not (live / "edge_config.json").exists() and not (live / "segments").is_dir():
        return
    manifest = read_manifest(container)  # its errors name the repair already
    try:
        _check(container, live, manifest)
    except StoreDamagedError as exc:
        raise StoreDamagedError(f"{exc}: {_fix(container)}") from exc.__cause__


def mark_open(container: Path, live: Path) -> None:
    """Record that the store is open (an unclean stop from now on skips the segment list)."""
    manifest = read_manifest(container) or {}
    manifest.update(clean=False, generation=_label(container, live))
    write_manifest(container, manifest)


def mark_closed(container: Path, live: Path, points: int) -> None:
    """Record a clean close: the live generation, its segments and its point count."""
    write_manifest(
        container,
        {
            "clean": True,
            "generation": _label(container, live),
            "segments": segment_names(live),
            "points": points,
        },
    )
