"""SIGKILL with every write queued: the real memory, the real outbox, exactly once.

The promise: "kill the process (SIGKILL) while 10,000 writes are queued; after
restart every write is applied exactly once". A child process (this file run as
a script) opens ``TieredMemory.open(dir)``: the embedded Qdrant store, the
durable writer and the tiers' own write-back handlers. It queues a burst of
writes through the public API (``for_user(...).queue_episode``,
``queue_remember`` and ``queue_tool_use``, a third each, over several users)
from many threads at once, as a busy agent server would, and prints one line
once every write is acknowledged, i.e. committed to the outbox. The parent
SIGKILLs it on that line, while the worker is still far behind; reads the dead
child's outbox to check the backlog really was there; then reopens the memory
(the restart), flushes, and counts every episode, tool use and fact per user:
each write took effect once, none is missing, none is doubled, no dead letters.

Why threads: a single submitter waits for one outbox commit per write, and the
worker keeps pace with it. Concurrent submitters share commits (group commit),
so acknowledgement outruns application and a real backlog builds up.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX-only")

USERS = 5
THREADS = 32
KINDS = ("episode", "remember", "tool_use")


def _kind(i: int) -> str:
    return KINDS[i % len(KINDS)]


def _user(i: int) -> str:
    return f"user{i % USERS}"


def _episode_id(i: int) -> str:
    return f"ep-{i:05d}"


def _record_id(i: int) -> str:
    return f"tool-{i:05d}"


def _preference(i: int) -> str:
    return f"roast{i:05d}"


def _source(i: int) -> str:
    return f"chat-{i:05d}"


# ---------------------------------------------------------------- the child process
def _child(memory_dir: str, total: int) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from langchain_tiered_memory import TieredMemory
    from langchain_tiered_memory.testing.fakes import HashingEmbeddings
    from langchain_tiered_memory.tiers.episodic.models import Episode, Outcome
    from langchain_tiered_memory.tiers.procedural.models import ToolUsageRecord

    memory = TieredMemory.open(memory_dir, embeddings=HashingEmbeddings())
    print("ready", flush=True)

    def queue(i: int) -> Any:
        user = memory.for_user(_user(i))
        kind = _kind(i)
        if kind == "episode":  # idempotency key: the episode id
            episode = Episode(
                episode_id=_episode_id(i),
                task_description=f"queued task {i}",
                outcome=Outcome.SUCCESS,
            )
            return user.queue_episode(episode)
        if kind == "remember":  # key derived from the text; the source id makes replays no-ops
            return user.queue_remember(f"I prefer {_preference(i)}.", source_episode_id=_source(i))
        record = ToolUsageRecord(  # idempotency key: the record id
            record_id=_record_id(i), tool_name=f"tool{i % 7}", success=True, context=f"call {i}"
        )
        return user.queue_tool_use(record)

    started = time.monotonic()
    with ThreadPoolExecutor(THREADS) as pool:
        receipts = list(pool.map(queue, range(total)))
    line = {
        "acked": sum(r is not None for r in receipts),
        "distinct_keys": len({r.idempotency_key for r in receipts}),
        "duplicates": sum(r.duplicate for r in receipts),
        "seconds": round(time.monotonic() - started, 2),
    }
    print("acked " + json.dumps(line), flush=True)  # the parent kills us on this line
    threading.Event().wait(600)


# ---------------------------------------------------------------- the parent
def _kill_when_all_acked(memory_dir: Path, total: int) -> dict[str, Any]:
    child = subprocess.Popen(
        [sys.executable, __file__, "child", str(memory_dir), str(total)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    watchdog = threading.Timer(240, child.kill)
    watchdog.start()
    try:
        assert child.stdout is not None
        acked: dict[str, Any] | None = None
        for raw in child.stdout:
            if raw.startswith("acked "):
                child.send_signal(signal.SIGKILL)  # right away: the worker is far behind
                acked = json.loads(raw[len("acked ") :])
                break
        child.wait()
        _, err = child.communicate()
    finally:
        watchdog.cancel()
        if child.poll() is None:
            child.kill()
            child.wait()
    assert acked is not None, f"child ended without acknowledging: {err[-3000:]}"
    assert child.returncode == -signal.SIGKILL, (child.returncode, err[-3000:])
    return acked


def _outbox_statuses(memory_dir: Path) -> Counter[str]:
    """The dead child's outbox, read before anything reopens it."""
    with sqlite3.connect(memory_dir / "outbox.sqlite3") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        rows = conn.execute("SELECT status, COUNT(*) FROM writes GROUP BY status").fetchall()
    return Counter(dict(rows))


def _records(memory: Any, namespace: tuple[str, ...]) -> list[Any]:
    items: list[Any] = []
    while True:
        page = memory.store.search(namespace, limit=1000, offset=len(items))
        items.extend(i for i in page if tuple(i.namespace) == tuple(namespace))
        if len(page) < 1000:
            return items


def _verify(memory: Any, total: int) -> dict[str, int]:
    """Every write took effect exactly once; returns how many were replayed harmlessly."""
    replayed = 0
    for u in range(USERS):
        mine = [i for i in range(total) if i % USERS == u]
        user = memory.for_user(f"user{u}")
        scope = user.scope

        episodes = _records(memory, scope.namespace("episodic", "episodes"))
        expected_eps = {_episode_id(i): f"queued task {i}" for i in mine if _kind(i) == "episode"}
        assert len(episodes) == len(expected_eps), (u, len(episodes), len(expected_eps))
        assert {e.key: e.value["task_description"] for e in episodes} == expected_eps

        uses = {g.tool_name: g.total_uses for g in user.procedural.get_all_tool_guidance()}
        expected_uses = Counter(f"tool{i % 7}" for i in mine if _kind(i) == "tool_use")
        assert uses == dict(expected_uses), (u, uses, expected_uses)

        facts = [f.value for f in _records(memory, scope.namespace("semantic", "facts"))]
        expected_facts = {_preference(i): _source(i) for i in mine if _kind(i) == "remember"}
        by_value = Counter(f["value"] for f in facts)
        doubled = {v: n for v, n in by_value.items() if n > 1}
        assert not doubled, f"user{u}: facts stored more than once: {list(doubled.items())[:5]}"
        missing = expected_facts.keys() - by_value.keys()
        assert not missing, f"user{u}: {len(missing)} remembered facts lost: {sorted(missing)[:5]}"
        assert len(facts) == len(expected_facts), (u, len(facts), len(expected_facts))
        for fact in facts:
            assert fact["status"] == "current", fact
            assert fact["source_episode_ids"] == [expected_facts[fact["value"]]], fact
            # A replay confirms the fact again from the same source: no extra confidence.
            assert fact["confidence"] == pytest.approx(0.9), fact
            replayed += fact["last_confirmed"] != fact["first_observed"]
    return {"replayed_remembers": replayed}


def _run(tmp_path: Path, total: int) -> dict[str, Any]:
    from langchain_tiered_memory import TieredMemory
    from langchain_tiered_memory.testing.fakes import HashingEmbeddings

    memory_dir = tmp_path / "memory"
    started = time.monotonic()
    acked = _kill_when_all_acked(memory_dir, total)
    assert acked["acked"] == total and acked["distinct_keys"] == total, acked
    assert acked["duplicates"] == 0, acked

    at_kill = _outbox_statuses(memory_dir)
    assert sum(at_kill.values()) == total, at_kill  # every acknowledged write is on disk
    # The kill hit a real backlog, not an idle writer: typically 60-80% of the
    # acknowledged writes were still unapplied; a quarter keeps a loaded CI safe.
    assert at_kill["pending"] >= total // 4, at_kill

    memory = TieredMemory.open(memory_dir, embeddings=HashingEmbeddings())  # the restart
    try:
        memory.flush(timeout=240)
        assert memory.writer is not None
        assert memory.writer.dead_letters() == []
        stats = memory.writer.stats()
        assert (stats.pending, stats.applied, stats.dead_letters) == (0, total, 0), stats
        assert stats.failed_attempts == 0, stats
        result = _verify(memory, total)
    finally:
        memory.close()
    # A kill can only replay writes applied but not yet marked: at most one batch.
    assert result["replayed_remembers"] <= memory.writer.batch_size
    return {
        "queued": total,
        "submit_seconds": acked["seconds"],
        "applied_at_kill": at_kill["applied"],
        "pending_at_kill": at_kill["pending"],
        **result,
        "seconds": round(time.monotonic() - started, 1),
    }


@pytest.mark.integration
def test_sigkill_with_ten_thousand_writes_queued_applies_each_once(tmp_path: Path) -> None:
    """About 20 s on two cores: 10,000 queued writes, in the default run."""
    print(_run(tmp_path, 10_000))


if __name__ == "__main__" and sys.argv[1:2] == ["child"]:
    sys.path.insert(0, os.getcwd())
    _child(sys.argv[2], int(sys.argv[3]))
