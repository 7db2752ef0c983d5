"""The on-disk layout of embedded collections: recovery rule, sparse copy, collection lock."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from langchain_tiered_memory.errors import BackendError, StoreLockedError
from langchain_tiered_memory.stores import QdrantMemoryStore
from langchain_tiered_memory.stores.edge.files import (
    META,
    commit,
    copy_tree,
    next_generation,
    recover,
)
from langchain_tiered_memory.stores.edge.lock import CollectionLock, describe_holder
from langchain_tiered_memory.testing.fakes import HashingEmbeddings

OWN = ["tiered_memory.lock", "tiered_memory.holder.json", META]


def _shard(directory: Path) -> Path:
    """A directory that looks like a Qdrant Edge shard."""
    (directory / "segments").mkdir(parents=True)
    (directory / "wal").mkdir()
    (directory / "edge_config.json").write_text("{}")
    return directory


def _container(tmp_path: Path) -> Path:
    container = _shard(tmp_path / "memories")  # the shard every store starts in
    for name in OWN:
        (container / name).write_text("ours")
    return container


def test_without_a_pointer_the_container_is_live_and_every_generation_is_dropped(
    tmp_path: Path,
) -> None:
    container = _container(tmp_path)
    _shard(container / "shard-000001")  # a build that never committed
    _shard(container / "shard-000002.src")  # the copy a purge rewrites from
    assert recover(container) == container
    assert sorted(p.name for p in container.iterdir()) == sorted(
        [*OWN, "edge_config.json", "segments", "wal"]
    )


def test_the_pointer_names_the_live_generation_and_the_rest_is_dropped(tmp_path: Path) -> None:
    container = _container(tmp_path)
    live = _shard(container / "shard-000002")
    _shard(container / "shard-000001")  # superseded
    _shard(container / "shard-000003")  # unfinished
    commit(container, live)
    (container / "tiered_memory.current.tmp").write_text("shard-000003\n")  # torn commit
    assert recover(container) == live
    assert sorted(p.name for p in container.iterdir()) == sorted(
        [*OWN, "tiered_memory.current", "shard-000002"]
    )
    assert next_generation(container).name == "shard-000003"


def test_a_pointer_to_a_missing_generation_is_an_error_and_deletes_nothing(
    tmp_path: Path,
) -> None:
    container = _container(tmp_path)
    (container / "tiered_memory.current").write_text("shard-000007\n")
    before = sorted(p.name for p in container.iterdir())
    with pytest.raises(BackendError, match=r"shard-000007.*backup"):
        recover(container)
    assert sorted(p.name for p in container.iterdir()) == before


def test_copy_tree_keeps_holes_and_skips_our_own_entries(tmp_path: Path) -> None:
    src = _container(tmp_path)
    blob = src / "wal" / "open-1"
    with open(blob, "wb") as fh:
        fh.write(b"head")
        fh.seek(8 << 20)
        fh.write(bytes(1 << 20))  # an all-zero block written out
        fh.write(b"tail")
    _shard(src / "shard-000001")
    written = copy_tree(src, tmp_path / "copy")
    copy = tmp_path / "copy"
    assert sorted(p.name for p in copy.iterdir()) == ["edge_config.json", "segments", "wal"]
    assert (copy / "wal" / "open-1").read_bytes() == blob.read_bytes()
    assert written < 64 * 1024  # neither the hole nor the zero block was written
    if hasattr(os.stat_result, "st_blocks"):
        assert (copy / "wal" / "open-1").stat().st_blocks * 512 < 1 << 20


def test_an_interrupted_creation_is_completed_on_the_next_open(tmp_path: Path) -> None:
    index = {"dims": 16, "embed": HashingEmbeddings(size=16), "fields": ["text"]}
    with QdrantMemoryStore.embedded(tmp_path, index=index) as store:  # type: ignore[arg-type]
        store.put(("a",), "k", {"text": "kept"})
    (tmp_path / "memories" / META).unlink()  # as if the process died before writing it
    with QdrantMemoryStore.embedded(tmp_path, index=index) as store:  # type: ignore[arg-type]
        assert store.get(("a",), "k") is not None
        assert store.search(("a",), filter={"text": "kept"})
    assert json.loads((tmp_path / "memories" / META).read_text())["dims"] == 16


# ----------------------------------------------------------------- the lock


def test_the_holder_is_recorded_while_open_and_removed_on_close(tmp_path: Path) -> None:
    holder = tmp_path / "memories" / "tiered_memory.holder.json"
    with QdrantMemoryStore.embedded(tmp_path):
        info = json.loads(holder.read_text())
        assert info["pid"] == os.getpid() and info["host"] == socket.gethostname()
        with pytest.raises(StoreLockedError, match="this process") as err:
            QdrantMemoryStore.embedded(tmp_path)
        assert str(tmp_path) in str(err.value) and "close" in str(err.value)
    assert not holder.exists()


def _dead_pid() -> int:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(done.stdout)


def test_a_stale_holder_file_of_a_crashed_process_does_not_block_opening(tmp_path: Path) -> None:
    container = tmp_path / "memories"
    container.mkdir()
    dead = _dead_pid()
    stale = {"pid": dead, "host": socket.gethostname(), "since": "2020-01-01T00:00:00+00:00"}
    (container / "tiered_memory.holder.json").write_text(json.dumps(stale))
    with QdrantMemoryStore.embedded(tmp_path) as store:
        store.put(("a",), "k", {"v": 1})
        info = json.loads((container / "tiered_memory.holder.json").read_text())
        assert info["pid"] == os.getpid()
    text = describe_holder(stale)
    assert "no longer running" in text and not text.startswith(f"process {dead}")


def test_the_lock_is_exclusive_and_free_again_after_release(tmp_path: Path) -> None:
    first, second = CollectionLock(tmp_path), CollectionLock(tmp_path)
    first.acquire()
    first.publish()
    with pytest.raises(StoreLockedError, match=f"pid {os.getpid()}"):
        second.acquire()
    first.release()
    second.acquire()
    second.release()


def test_generations_on_disk_from_creation_through_an_optimisation(tmp_path: Path) -> None:
    index = {"dims": 16, "embed": HashingEmbeddings(size=16), "fields": ["text"]}
    container = tmp_path / "memories"
    with QdrantMemoryStore.embedded(tmp_path, index=index) as store:  # type: ignore[arg-type]
        first = store.engine.dir  # type: ignore[union-attr]
        store.put(("a",), "k", {"text": "kept through the swap"})
        assert store.start_optimize().result(timeout=240).outcome == "swapped"
        second = store.engine.dir  # type: ignore[union-attr]
        store.put(("a",), "k2", {"text": "written after the swap"})
    assert second != first and second.parent == container
    assert [p for p in container.iterdir() if p.is_dir()] == [second]
    assert (container / "tiered_memory.current").read_text().strip() == second.name
    with QdrantMemoryStore.embedded(tmp_path, index=index) as store:  # type: ignore[arg-type]
        assert {i.key for i in store.search(("a",))} == {"k", "k2"}
