"""Damaged or missing store files are refused on open, never deleted or opened empty.

Each test damages one kind of file of a memory directory the way a careless
operator, a bad copy or a failing disk would, then opens it again. The outcome
must be a :class:`StoreDamagedError` naming the file and the repair, with
nothing deleted, or an open with every acknowledged record. The intact stores
(closed cleanly, and left by a process that ended without closing) must still
open with every record.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import struct
import subprocess
import sys
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest
from langgraph.store.memory import InMemoryStore
from reliability_helpers import make_store

from langchain_tiered_memory.cli.commands import main
from langchain_tiered_memory.errors import OutboxDamagedError, StoreDamagedError, WriteBackError
from langchain_tiered_memory.stores.edge.files import copy_tree
from langchain_tiered_memory.writeback.ops import WriteOp
from langchain_tiered_memory.writeback.outbox import OUTBOX_FILENAME
from langchain_tiered_memory.writeback.writer import DurableMemoryWriter

CHILD = Path(__file__).with_name("_child_disk.py")
NAMESPACE = ("disk", "items")
ITEMS = 120


def _child(*args: str) -> None:
    subprocess.run([sys.executable, str(CHILD), *args], check=True, timeout=300)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two stores of ``ITEMS`` items: one closed cleanly, one left without closing."""
    root = tmp_path_factory.mktemp("pristine")
    stores = {}
    for how in ("clean", "kill"):
        _child("store", str(root / how), str(ITEMS), how)
        stores[how] = root / how
    return stores


def _copy(src: Path, dst: Path) -> Path:
    """A sparse copy of the store directory ``src`` (its 32 MiB WAL files stay holes)."""
    dst.mkdir()
    copy_tree(src / "memories", dst / "memories", skip=lambda name: False)
    return dst


def _live(store: Path) -> Path:
    container = store / "memories"
    pointer = container / "tiered_memory.current"
    return container / pointer.read_text().strip() if pointer.exists() else container


def _count(path: Path) -> int:
    st = make_store("embedded", path)
    try:
        return len(st.search(NAMESPACE, limit=10_000))
    finally:
        st.close()


def _refused(path: Path, names: str) -> StoreDamagedError:
    with pytest.raises(StoreDamagedError) as info:
        make_store("embedded", path)
    text = str(info.value)
    assert names in text, text
    assert "restore" in text.lower(), text
    return info.value


def _garble(path: Path, at: int, size: int = 64) -> None:
    with open(path, "r+b") as fh:
        fh.seek(at)
        fh.write(os.urandom(size))


@pytest.mark.parametrize("how", ["clean", "kill"])
def test_an_intact_store_opens_with_every_record(
    pristine: dict[str, Path], tmp_path: Path, how: str
) -> None:
    """Clean close and unclean stop: no false alarm, every record is there, twice in a row."""
    store = _copy(pristine[how], tmp_path / "s")
    assert main(["verify", "--path", str(store)]) == 0
    assert _count(store) == ITEMS
    assert _count(store) == ITEMS


def test_an_entry_torn_by_a_crash_while_appended_is_no_false_alarm(
    pristine: dict[str, Path], tmp_path: Path
) -> None:
    """A process killed inside an append leaves an entry without its checksum: not damage."""
    store = _copy(pristine["kill"], tmp_path / "s")
    wal = _live(store) / "wal" / "open-1"
    data = wal.read_bytes()
    offset = 8
    while (length := struct.unpack_from("<Q", data, offset)[0]) != 0:
        offset += 8 + length + (-(length + 4)) % 8 + 4
    with open(wal, "r+b") as fh:  # the length and data of an entry, its checksum not yet
        fh.seek(offset)
        fh.write(struct.pack("<Q", 60) + b"x" * 60)
    assert _count(store) == ITEMS


@pytest.mark.parametrize("how", ["clean", "kill"])
def test_a_segment_left_half_deleted_by_a_crash_is_no_false_alarm(
    pristine: dict[str, Path], tmp_path: Path, how: str
) -> None:
    """A process killed while the engine removed a merged segment leaves ``<id>.deleted``."""
    store = _copy(pristine[how], tmp_path / "s")
    leftover = _live(store) / "segments" / "6f1c2a3e-0000-4000-8000-000000000000.deleted"
    (leftover / "payload_index").mkdir(parents=True)  # no segment.json: half removed
    (leftover / "payload_index" / "config.json").write_text("{}")
    assert main(["verify", "--path", str(store)]) == 0
    assert _count(store) == ITEMS
    assert _count(store) == ITEMS


def test_a_missing_pointer_is_refused_and_the_live_shard_is_kept(
    pristine: dict[str, Path], tmp_path: Path
) -> None:
    store = _copy(pristine["clean"], tmp_path / "s")
    pointer = store / "memories" / "tiered_memory.current"
    if not pointer.exists():
        pytest.skip("the store was built in place (its disk is tmpfs): it has no pointer file")
    live = _live(store)
    pointer.unlink()
    _refused(store, "tiered_memory.current")
    assert (live / "segments").is_dir(), "the live shard was deleted"
    assert main(["verify", "--path", str(store)]) == 1
    # The repair the message names restores the pointer; every record is back.
    assert main(["repair", "--path", str(store)]) == 0
    assert pointer.read_text().strip() == live.name
    assert _count(store) == ITEMS


def test_a_pointer_naming_a_missing_generation_is_refused(
    pristine: dict[str, Path], tmp_path: Path
) -> None:
    store = _copy(pristine["clean"], tmp_path / "s")
    (store / "memories" / "tiered_memory.current").write_text("shard-000099\n")
    _refused(store, "shard-000099")


def test_a_deleted_segment_folder_is_refused(pristine: dict[str, Path], tmp_path: Path) -> None:
    store = _copy(pristine["clean"], tmp_path / "s")
    segment = next((_live(store) / "segments").iterdir())
    shutil.rmtree(segment)
    _refused(store, segment.name)
    assert main(["verify", "--path", str(store)]) == 1
    assert main(["repair", "--path", str(store)]) == 1  # nothing it can restore


@pytest.mark.parametrize("how", ["clean", "kill"])
def test_a_deleted_wal_folder_is_refused(
    pristine: dict[str, Path], tmp_path: Path, how: str
) -> None:
    store = _copy(pristine[how], tmp_path / "s")
    shutil.rmtree(_live(store) / "wal")
    _refused(store, "wal")


@pytest.mark.parametrize("how", ["clean", "kill"])
def test_a_garbled_wal_is_refused(pristine: dict[str, Path], tmp_path: Path, how: str) -> None:
    store = _copy(pristine[how], tmp_path / "s")
    _garble(_live(store) / "wal" / "open-1", at=20_000)
    _refused(store, "open-1")


def test_a_wal_file_cut_short_is_refused(pristine: dict[str, Path], tmp_path: Path) -> None:
    store = _copy(pristine["kill"], tmp_path / "s")
    wal = _live(store) / "wal" / "open-1"
    with open(wal, "r+b") as fh:
        fh.truncate(40_000)
    _refused(store, "open-1")


def test_a_deleted_wal_file_is_refused(pristine: dict[str, Path], tmp_path: Path) -> None:
    store = _copy(pristine["clean"], tmp_path / "s")
    (_live(store) / "wal" / "open-1").unlink()
    _refused(store, "wal")


def test_a_garbled_manifest_is_refused(pristine: dict[str, Path], tmp_path: Path) -> None:
    store = _copy(pristine["clean"], tmp_path / "s")
    (store / "memories" / "tiered_memory.manifest.json").write_text("{not json")
    _refused(store, "tiered_memory.manifest.json")


# ----------------------------------------------------------------------------- outbox


def _garble_pages(file: Path) -> None:
    """Overwrite the page headers of every page but the first (SQLite's 4 KiB pages)."""
    for at in range(4096, file.stat().st_size, 4096):
        _garble(file, at=at, size=32)


def _pending_outbox(path: Path, n: int = 40, size: int = 200) -> None:
    """An outbox with ``n`` acknowledged writes still pending, closed cleanly."""
    writer = DurableMemoryWriter(InMemoryStore(), path, start=False)
    text = "x" * size
    writer.submit_many([WriteOp.put(NAMESPACE, f"q{i}", {"text": f"{i} {text}"}) for i in range(n)])
    writer.close()


def _open_writer(path: Path) -> DurableMemoryWriter:
    return DurableMemoryWriter(InMemoryStore(), path, start=False)


def _outbox_refused(path: Path, names: str) -> None:
    with pytest.raises(StoreDamagedError) as info:
        _open_writer(path)
    assert names in str(info.value), str(info.value)


def test_an_intact_outbox_reopens_with_its_pending_writes(tmp_path: Path) -> None:
    _pending_outbox(tmp_path)
    writer = _open_writer(tmp_path)
    try:
        assert writer.stats().pending == 40
    finally:
        writer.close()


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda f: _garble_pages(f), id="garbled"),
        pytest.param(lambda f: os.truncate(f, f.stat().st_size // 2), id="half-truncated"),
        pytest.param(lambda f: f.write_bytes(os.urandom(4096)), id="overwritten"),
    ],
)
def test_a_damaged_outbox_is_refused_on_open(
    tmp_path: Path, damage: Callable[[Path], None]
) -> None:
    _pending_outbox(tmp_path)
    damage(tmp_path / OUTBOX_FILENAME)
    _outbox_refused(tmp_path, OUTBOX_FILENAME)


def test_an_outbox_damaged_while_open_acknowledges_nothing(tmp_path: Path) -> None:
    """Once SQLite reads a damaged page, no later write is acknowledged.

    The outbox (4 MB) is larger than SQLite's page cache, so reading it all
    reaches pages damaged after the open.
    """
    _pending_outbox(tmp_path, n=1000, size=4000)
    writer = _open_writer(tmp_path)
    try:
        _garble_pages(tmp_path / OUTBOX_FILENAME)
        with pytest.raises(StoreDamagedError):
            writer.stats()
        with pytest.raises(StoreDamagedError):
            writer.submit_put(NAMESPACE, "late", {"text": "must not be acknowledged"})
    finally:
        writer.close()


def test_a_deleted_outbox_with_pending_writes_is_refused(tmp_path: Path) -> None:
    _pending_outbox(tmp_path)
    (tmp_path / OUTBOX_FILENAME).unlink()
    _outbox_refused(tmp_path, "40 pending")
    (tmp_path / "store" / "memories").mkdir(parents=True)  # an empty store beside it
    assert main(["verify", "--path", str(tmp_path)]) == 1


def test_a_deleted_empty_outbox_is_recreated(tmp_path: Path) -> None:
    """Closed cleanly with nothing pending: nothing acknowledged can be lost, so it opens."""
    DurableMemoryWriter(InMemoryStore(), tmp_path).close()
    (tmp_path / OUTBOX_FILENAME).unlink()
    _open_writer(tmp_path).close()


def test_a_deleted_outbox_wal_after_an_unclean_stop_is_refused(tmp_path: Path) -> None:
    _child("outbox", str(tmp_path), "30")
    wal = tmp_path / (OUTBOX_FILENAME + "-wal")
    assert wal.exists()
    wal.unlink()
    _outbox_refused(tmp_path, "-wal")


def test_a_deleted_outbox_after_an_unclean_stop_is_refused(tmp_path: Path) -> None:
    _child("outbox", str(tmp_path), "30")
    for name in (OUTBOX_FILENAME, OUTBOX_FILENAME + "-wal", OUTBOX_FILENAME + "-shm"):
        (tmp_path / name).unlink(missing_ok=True)
    _outbox_refused(tmp_path, "unclean stop")


def test_an_outbox_replaced_by_an_older_copy_is_refused(tmp_path: Path) -> None:
    _pending_outbox(tmp_path, n=10)
    old = (tmp_path / OUTBOX_FILENAME).read_bytes()
    writer = _open_writer(tmp_path)
    for i in range(10, 20):
        writer.submit_put(NAMESPACE, f"q{i}", {"text": f"queued {i}"})
    writer.close()
    (tmp_path / OUTBOX_FILENAME).write_bytes(old)
    _outbox_refused(tmp_path, "older copy")


def test_deleting_the_state_file_accepts_the_stated_loss(tmp_path: Path) -> None:
    """The repair the refusal names: the outbox opens with what it still holds."""
    _pending_outbox(tmp_path)
    (tmp_path / OUTBOX_FILENAME).unlink()
    _outbox_refused(tmp_path, "40 pending")
    (tmp_path / (OUTBOX_FILENAME + ".state")).unlink()
    writer = _open_writer(tmp_path)
    try:
        assert writer.stats().pending == 0
    finally:
        writer.close()


@pytest.mark.parametrize(
    "garbage",
    [
        pytest.param(b'{"clean": tr', id="cut-short"),
        pytest.param(b"\xff\xfe\x00garbled\x81", id="not-text"),
    ],
)
def test_a_damaged_outbox_state_file_is_refused_and_the_outbox_kept(
    tmp_path: Path, garbage: bytes
) -> None:
    """The refusal names the state file and its repair; the repair keeps every pending write."""
    _pending_outbox(tmp_path)
    state = tmp_path / (OUTBOX_FILENAME + ".state")
    state.write_bytes(garbage)
    with pytest.raises(OutboxDamagedError) as info:
        _open_writer(tmp_path)
    text = str(info.value)
    assert str(state) in text, text
    assert "delete it only if the outbox next to it is intact" in text, text
    assert state.read_bytes() == garbage  # nothing rewritten or deleted by the refusal
    assert (tmp_path / OUTBOX_FILENAME).is_file()
    (tmp_path / "store" / "memories").mkdir(parents=True)  # an empty store beside it
    assert main(["verify", "--path", str(tmp_path)]) == 1
    # The repair the message names: the outbox is intact, so the state file goes.
    state.unlink()
    writer = _open_writer(tmp_path)  # the refused open released the lock
    try:
        assert writer.stats().pending == 40
    finally:
        writer.close()
    assert main(["verify", "--path", str(tmp_path)]) == 0


def _outbox_rows(path: Path) -> tuple[int, int]:
    """The schema version and the number of writes of the outbox ``path``, read-only."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        [(version,)] = conn.execute("PRAGMA user_version").fetchall()
        [(rows,)] = conn.execute("SELECT COUNT(*) FROM writes").fetchall()
    conn.close()
    return int(version), int(rows)


def test_an_outbox_of_a_newer_schema_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    """An outbox written by a newer release: the open says to upgrade and changes nothing."""
    _pending_outbox(tmp_path)
    outbox = tmp_path / OUTBOX_FILENAME
    with closing(sqlite3.connect(outbox)) as conn:
        conn.execute("PRAGMA user_version = 2")
        conn.execute("PRAGMA journal_mode = DELETE")  # a newer release may journal otherwise
    state = tmp_path / (OUTBOX_FILENAME + ".state")
    recorded = state.read_text()
    for _ in range(2):  # refused each time: the refused open released the lock
        with pytest.raises(WriteBackError) as info:
            _open_writer(tmp_path)
        text = str(info.value)
        assert str(outbox) in text, text
        assert "schema version 2 is newer than this library's (1)" in text, text
        assert "upgrade langchain-tiered-memory" in text and "keep the file" in text, text
        assert "delete" not in text, text  # its pending writes must not be thrown away
    assert _outbox_rows(outbox) == (2, 40)
    with closing(sqlite3.connect(outbox)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert state.read_text() == recorded
