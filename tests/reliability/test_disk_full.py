"""A full disk is an error the caller sees, never a crash, and nothing acknowledged is lost.

A memory directory is opened on a small tmpfs filesystem mounted for the test
(root only; the test is skipped with the reason elsewhere). The disk is then
filled until writes fail. Direct writes must be refused with a
:class:`DiskFullError` (a ``BackendError``), queued writes either acknowledged
or refused with a ``WriteBackError``, and the process must keep running.
Once space is freed, the writer applies every acknowledged queued write, and
the store holds every acknowledged write after a reopen.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import PutOp
from reliability_helpers import make_store

from langchain_tiered_memory.errors import DiskFullError
from langchain_tiered_memory.stores.edge.live import MIN_FREE_BYTES, check_free_space

CHILD = Path(__file__).with_name("_child_disk.py")
NAMESPACE = ("disk", "items")
SIZE = 256 << 20


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 MiB tmpfs mounted at a temporary directory, unmounted afterwards."""
    if sys.platform != "linux" or os.geteuid() != 0:
        pytest.skip("mounting a small filesystem needs root on Linux")
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _leave_free(mount: Path, free: int) -> Path:
    """Fill ``mount`` with one file so that about ``free`` bytes are left."""
    stats = os.statvfs(mount)
    available = stats.f_bavail * stats.f_frsize
    filler = mount / "filler"
    fd = os.open(filler, os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        os.posix_fallocate(fd, 0, max(0, available - free))
    finally:
        os.close(fd)
    return filler


def test_a_write_on_a_nearly_full_disk_raises_disk_full(small_disk: Path) -> None:
    _leave_free(small_disk, MIN_FREE_BYTES // 2)
    with pytest.raises(DiskFullError) as info:
        check_free_space(small_disk)
    assert str(small_disk) in str(info.value)
    assert "free space" in str(info.value)


def test_a_full_disk_refuses_writes_the_process_survives_and_nothing_is_lost(
    small_disk: Path,
) -> None:
    memory_dir = small_disk / "memory"
    child = subprocess.Popen(
        [sys.executable, str(CHILD), "fill", str(memory_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    filler = _leave_free(small_disk, MIN_FREE_BYTES + (1 << 20))
    child.stdin.write("go\n")
    child.stdin.flush()
    put = queued = 0
    refused = ""
    for line in child.stdout:
        word, _, rest = line.strip().partition(" ")
        if word == "put":
            put = int(rest)
        elif word == "queued":
            queued = int(rest)
        elif word == "refused":
            refused = rest
        elif word == "full":
            break
    assert child.poll() is None, f"the process died with code {child.returncode}"
    assert refused == "DiskFullError", "direct writes were never refused"
    assert put > 0 and queued > 0
    filler.unlink()  # space returns
    child.stdin.write("go\n")
    child.stdin.flush()
    rest_lines = child.stdout.read()
    assert child.wait(timeout=300) == 0, rest_lines
    assert "flushed" in rest_lines and "closed" in rest_lines

    store = make_store("embedded", memory_dir / "store")
    try:
        keys = {item.key for item in store.search(NAMESPACE, limit=1_000_000)}
    finally:
        store.close()
    missing_put = [f"p{i}" for i in range(put) if f"p{i}" not in keys]
    missing_queued = [f"q{i}" for i in range(queued) if f"q{i}" not in keys]
    assert not missing_put, f"{len(missing_put)} of {put} acknowledged writes lost"
    assert not missing_queued, f"{len(missing_queued)} of {queued} queued writes lost"


# -- optimisation --------------------------------------------------------------------------


@pytest.fixture
def store_on_a_tight_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Any, Path]]:
    """An embedded store with records whose filesystem reports room for writes, not a rebuild."""
    from langchain_tiered_memory.stores.edge import live

    store: Any = make_store("embedded", tmp_path / "store")
    try:
        store.batch([PutOp(NAMESPACE, f"k{i}", {"text": f"item {i}"}) for i in range(50)])
        shard_dir = store.engine._live().dir
        needed = live.build_bytes(shard_dir, copies=1)
        assert needed > MIN_FREE_BYTES
        monkeypatch.setattr(live, "_free_bytes", lambda directory: needed - 1)
        yield store, shard_dir
    finally:
        store.close()


def test_a_background_optimisation_without_room_fails_with_disk_full_in_its_status(
    store_on_a_tight_disk: tuple[Any, Path],
) -> None:
    store, shard_dir = store_on_a_tight_disk
    status = store.optimize()
    with pytest.raises(DiskFullError, match="KiB free") as refused:
        status.result(timeout=120)
    assert str(shard_dir) in str(refused.value) and "optimize again" in str(refused.value)
    assert status.done() and status.phase == "failed"
    assert store.engine.optimization is status  # kept for whoever looks next
    store.put(NAMESPACE, "after", {"text": "still writable"})  # writes keep room
    assert len(store.search(NAMESPACE, limit=100)) == 51
    assert not [p for p in shard_dir.parent.iterdir() if p.name.endswith(".src")]


async def test_an_optimisation_in_the_process_without_room_raises_disk_full(
    store_on_a_tight_disk: tuple[Any, Path],
) -> None:
    store, _ = store_on_a_tight_disk
    with pytest.raises(DiskFullError, match="the optimisation was refused"):
        store.optimize(background=False)
    with pytest.raises(DiskFullError):
        await store.aoptimize(background=False)
    with pytest.raises(DiskFullError):
        (await store.aoptimize()).result(timeout=120)
    assert len(await store.asearch(NAMESPACE, limit=100)) == 50
