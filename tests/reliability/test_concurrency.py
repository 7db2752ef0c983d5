"""Concurrency: many writers and readers on one memory; two processes on one path.

8 threads and 4 asyncio tasks (running at the same time) write episodes, facts
and tool uses for four shared users and assemble contexts in between. At the
end every count is exact and nothing raised. A second process opening an
embedded memory directory that is in use gets an immediate, clear
``StoreLockedError`` naming the path; the data of the holder is intact.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from reliability_helpers import CHILD, REPO, fast_dir, open_memory

from langchain_tiered_memory import (
    Episode,
    StoreLockedError,
    TieredMemory,
    ToolUsageRecord,
)
from langchain_tiered_memory.testing.fakes import HashingEmbeddings

THREADS, TASKS, ROUNDS, USERS = 8, 4, 5, 4


def _episode(worker: str, i: int) -> Episode:
    return Episode(
        episode_id=f"{worker}-{i}",
        task_description=f"{worker} task {i} about deployment",
        outcome="success" if i % 2 else "failure",
        session_id=worker,
    )


def _tool_use(worker: str, i: int) -> ToolUsageRecord:
    return ToolUsageRecord(
        tool_name=f"tool{i % 2}", success=i % 3 != 0, record_id=f"{worker}-{i}", context=worker
    )


def thread_worker(memory: TieredMemory, n: int, errors: list[BaseException]) -> None:
    worker = f"t{n}"
    user = memory.for_user(f"user{n % USERS}")
    try:
        for i in range(ROUNDS):
            user.episodic.record(_episode(worker, i))
            user.semantic.store_fact(f"{worker}-e{i}", f"{worker} fact {i}", entity_type="thing")
            user.procedural.record_tool_use(_tool_use(worker, i))
            ctx = user.build_memory_context(f"{worker} deployment {i}", 500)
            assert ctx.tokens <= 500 and not ctx.errors, ctx.errors
    except BaseException as exc:
        errors.append(exc)


async def task_worker(memory: TieredMemory, n: int) -> None:
    worker = f"a{n}"
    user = memory.for_user(f"user{n % USERS}")
    for i in range(ROUNDS):
        await user.episodic.arecord(_episode(worker, i))
        await user.semantic.astore_fact(f"{worker}-e{i}", f"{worker} fact {i}", entity_type="thing")
        await user.procedural.arecord_tool_use(_tool_use(worker, i))
        ctx = await user.abuild_memory_context(f"{worker} deployment {i}", 500)
        assert ctx.tokens <= 500 and not ctx.errors, ctx.errors


async def run_all(memory: TieredMemory) -> list[BaseException]:
    errors: list[BaseException] = []
    threads = [
        threading.Thread(target=thread_worker, args=(memory, n, errors)) for n in range(THREADS)
    ]
    for t in threads:
        t.start()
    results = await asyncio.gather(
        *(task_worker(memory, n) for n in range(TASKS)), return_exceptions=True
    )
    for t in threads:
        await asyncio.to_thread(t.join, 120)
    errors.extend(r for r in results if isinstance(r, BaseException))
    return errors


@pytest.mark.parametrize("engine", ["embedded", "client"])
async def test_threads_and_tasks_at_once_give_exact_counts(engine: str, workdir: Path) -> None:
    memory = open_memory(engine, workdir / "store")
    try:
        await check_exact_counts(memory)
    finally:
        memory.close()


async def check_exact_counts(memory: TieredMemory) -> None:
    errors = await run_all(memory)
    assert errors == []
    workers = [f"t{n}" for n in range(THREADS)] + [f"a{n}" for n in range(TASKS)]
    by_user: Counter[str] = Counter()
    for w in workers:
        by_user[f"user{int(w[1:]) % USERS}"] += 1
    for uid, n_workers in by_user.items():
        user = memory.for_user(uid)
        mine = [w for w in workers if f"user{int(w[1:]) % USERS}" == uid]
        episodes = [e for w in mine for e in user.episodic.get_session_episodes(w)]
        assert len(episodes) == n_workers * ROUNDS
        assert {e.episode_id for e in episodes} == {f"{w}-{i}" for w in mine for i in range(ROUNDS)}
        for tool in ("tool0", "tool1"):
            guidance = user.procedural.get_tool_guidance(tool)
            expected = [(w, i) for w in mine for i in range(ROUNDS) if i % 2 == int(tool[-1])]
            assert guidance.total_uses == len(expected)
            assert guidance.successes == sum(i % 3 != 0 for _, i in expected)
        things = user.semantic.list_entities(entity_type="thing", limit=1000)
        assert len(things) == n_workers * ROUNDS
        for w in mine:
            for i in range(ROUNDS):
                facts = user.semantic.get_facts(f"{w}-e{i}")
                assert [f.content for f in facts] == [f"{w} fact {i}"]
    assert memory.stats()["errors"] == {}


# ---------------------------------------------------------------- two processes


def _hold(path: Path) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, str(CHILD), "hold", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    assert child.stdout is not None
    line = child.stdout.readline().strip()
    if line != "ready":
        child.kill()
        raise AssertionError(f"holder did not start: {line!r} {child.stderr.read()}")  # type: ignore[union-attr]
    return child


@pytest.fixture(scope="module")
def holder():  # type: ignore[no-untyped-def]
    """One child process holding an embedded memory directory for the module's tests."""
    path = fast_dir()
    child = _hold(path / "mem")
    try:
        yield child, path / "mem"
    finally:
        child.kill()
        child.wait()
        shutil.rmtree(path, ignore_errors=True)


def _open(path: Path) -> TieredMemory:
    return TieredMemory.open(path, embeddings=HashingEmbeddings(size=64))


def test_second_process_gets_an_immediate_clear_error(holder) -> None:  # type: ignore[no-untyped-def]
    _, path = holder
    started = time.monotonic()
    with pytest.raises(StoreLockedError) as info:
        _open(path)
    assert time.monotonic() - started < 5.0
    assert str(path) in str(info.value)
    assert "close" in str(info.value)  # says how to fix it


def test_lock_error_names_the_holder_process(holder) -> None:  # type: ignore[no-untyped-def]
    child, path = holder
    with pytest.raises(StoreLockedError) as info:
        _open(path)
    message = str(info.value)
    assert f"process {child.pid} on host {socket.gethostname()}" in message
    assert "since" in message and "close" in message


def test_second_handle_in_the_same_process_gets_the_error_too(workdir: Path) -> None:
    with _open(workdir / "mem") as first:
        first.for_user("a").remember("I live in Oslo.")
        with pytest.raises(StoreLockedError):
            _open(workdir / "mem")
        assert first.for_user("a").search("Oslo")  # the first handle still works


def test_after_the_holder_is_killed_the_path_opens_intact(holder) -> None:  # type: ignore[no-untyped-def]
    child, path = holder  # runs last in this module: it kills the shared holder
    child.kill()
    child.wait()
    with _open(path) as memory:
        facts = memory.for_user("holder").semantic.get_facts("holder")
        assert [f.content for f in facts] == ["Holds the lock"]
