"""Crash safety of durable write-back: SIGKILL the writer process, restart, verify.

A child process (this file run as a script) submits writes through a
``DurableMemoryWriter`` and prints ``ack <i>`` once each ``submit`` returned.
Its handler applies a write to a durable target, an SQLite table with a unique
key (so a replay cannot duplicate the effect) plus a counter of how many times
each write was applied (so replays are visible). The parent kills the child at
random points, while writes are being submitted or while the backlog is being
applied, restarts it on the same outbox, and at the end checks that every
acknowledged write took effect exactly once and nothing is missing.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX-only")

OP = "crash.apply"
BATCH_SIZE = 32


# ---------------------------------------------------------------- the child process
def _target(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, timeout=30)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")  # survives SIGKILL; power loss is not tested
    conn.execute("CREATE TABLE IF NOT EXISTS effects (key TEXT PRIMARY KEY, value INTEGER)")
    conn.execute("CREATE TABLE IF NOT EXISTS applications (key TEXT PRIMARY KEY, n INTEGER)")
    return conn


def _child(memory_dir: str, target_path: str, start: int, end: int, delay: float) -> None:
    from langgraph.store.memory import InMemoryStore

    from langchain_tiered_memory.writeback.ops import RetryPolicy, WriteOp
    from langchain_tiered_memory.writeback.writer import DurableMemoryWriter

    local = threading.local()

    def apply(payload: dict[str, Any], store: object) -> None:
        """Idempotent: the effect is keyed; the counter only shows how often we ran."""
        conn = getattr(local, "conn", None) or _target(target_path)
        local.conn = conn
        if delay:
            time.sleep(delay)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "INSERT INTO effects (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
            (payload["id"], payload["value"]),
        )
        conn.execute(
            "INSERT INTO applications (key, n) VALUES (?, 1)"
            " ON CONFLICT (key) DO UPDATE SET n = n + 1",
            (payload["id"],),
        )
        conn.execute("COMMIT")

    writer = DurableMemoryWriter(
        InMemoryStore(),
        memory_dir,
        handlers={OP: apply},
        fsync=False,
        batch_size=BATCH_SIZE,
        retry=RetryPolicy(initial_interval=0.01, max_attempts=10),
    )
    print("ready", flush=True)
    for i in range(start, end):
        writer.submit(WriteOp(OP, {"id": f"w{i}", "value": i}, key=f"w{i}"))
        print(f"ack {i}", flush=True)
    print("submitted", flush=True)
    writer.close()
    print("flushed", flush=True)


# ---------------------------------------------------------------- the parent
@dataclass
class CrashRun:
    memory_dir: Path
    target_path: Path
    total: int
    delay: float
    rng: random.Random
    acked: set[int] = field(default_factory=set)
    kills: int = 0
    pending_at_kill: list[int] = field(default_factory=list)

    def _spawn(self, start: int) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [
                sys.executable,
                __file__,
                "child",
                str(self.memory_dir),
                str(self.target_path),
                str(start),
                str(self.total),
                str(self.delay),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parents[2],
        )

    def _read(self, line: str) -> None:
        if line.startswith("ack "):
            self.acked.add(int(line.split()[1]))

    def _next_start(self) -> int:
        start = 0
        while start in self.acked:
            start += 1
        return start

    def round(self, *, kill: bool) -> None:
        """Run one child; kill it at a random point unless ``kill`` is False."""
        start = self._next_start()
        child = self._spawn(start)
        watchdog = threading.Timer(120, child.kill)
        watchdog.start()
        try:
            assert child.stdout is not None
            remaining = self.total - start
            during_submit = remaining > 0 and self.rng.random() < 0.5
            kill_after_acks = self.rng.randint(1, remaining) if during_submit else None
            acks = 0
            for raw in child.stdout:
                line = raw.strip()
                self._read(line)
                acks += line.startswith("ack ")
                if not kill:
                    continue
                if kill_after_acks is not None and acks >= kill_after_acks:
                    break
                if kill_after_acks is None and line in ("ready", "submitted"):
                    if line == "ready" and remaining > 0:
                        continue
                    # Let the worker apply part of the backlog, then kill it mid-way.
                    time.sleep(self.rng.uniform(0.0, 0.25))
                    break
            if kill and child.poll() is None:
                child.send_signal(signal.SIGKILL)
                child.wait()
                if child.returncode == -signal.SIGKILL:
                    self.kills += 1
                    self.pending_at_kill.append(self._pending())
            out, err = child.communicate()
            for line in out.splitlines():  # acks printed before the kill
                self._read(line.strip())
            if not kill:
                assert child.returncode == 0, err
        finally:
            watchdog.cancel()
            if child.poll() is None:
                child.kill()
                child.wait()

    def _pending(self) -> int:
        path = self.memory_dir / "outbox.sqlite3"
        if not path.exists():
            return 0
        with sqlite3.connect(path) as conn:
            (count,) = conn.execute(
                "SELECT COUNT(*) FROM writes WHERE status = 'pending'"
            ).fetchone()
        return int(count)

    def verify(self) -> dict[str, int]:
        assert self.acked == set(range(self.total))
        with sqlite3.connect(self.target_path) as target:
            assert target.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            effects = dict(target.execute("SELECT key, value FROM effects"))
            applications = dict(target.execute("SELECT key, n FROM applications"))
        expected = {f"w{i}": i for i in range(self.total)}
        missing = expected.keys() - effects.keys()
        assert not missing, f"{len(missing)} acknowledged writes lost, e.g. {sorted(missing)[:5]}"
        assert effects == expected  # each effect present exactly once, nothing extra
        replays = sum(n - 1 for n in applications.values())
        # A kill can only re-apply the batch that was in flight (applied, not yet marked).
        assert replays <= self.kills * BATCH_SIZE
        with sqlite3.connect(self.memory_dir / "outbox.sqlite3") as outbox:
            assert outbox.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            statuses = dict(outbox.execute("SELECT status, COUNT(*) FROM writes GROUP BY status"))
        assert statuses == {"applied": self.total}, statuses
        return {"kills": self.kills, "replays": replays, "max_pending": max(self.pending_at_kill)}


def _run(tmp_path: Path, *, total: int, kills: int, delay: float, seed: int) -> dict[str, int]:
    run = CrashRun(
        tmp_path / "memory", tmp_path / "target.sqlite3", total, delay, random.Random(seed)
    )
    attempts = 0
    while run.kills < kills and attempts < kills * 3:
        attempts += 1
        run.round(kill=True)
    assert run.kills >= kills, f"only {run.kills} kills landed on a live writer"
    run.round(kill=False)
    result = run.verify()
    # The kills hit a writer with acknowledged writes still queued, not an idle one.
    assert sum(p > 0 for p in run.pending_at_kill) >= kills // 2, run.pending_at_kill
    return result


@pytest.mark.integration
def test_sigkill_while_applying_loses_nothing_and_applies_once(tmp_path: Path) -> None:
    result = _run(tmp_path, total=2_000, kills=4, delay=0.0005, seed=6)
    print(result)


@pytest.mark.integration
@pytest.mark.slow
def test_twenty_plus_sigkills_over_ten_thousand_writes(tmp_path: Path) -> None:
    result = _run(tmp_path, total=10_000, kills=22, delay=0.0003, seed=9)
    print(result)


if __name__ == "__main__" and sys.argv[1:2] == ["child"]:
    _memory, _target_db, _start, _end, _delay = sys.argv[2:7]
    sys.path.insert(0, os.getcwd())
    _child(_memory, _target_db, int(_start), int(_end), float(_delay))
