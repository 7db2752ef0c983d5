"""Crash safety of HNSW optimisation: SIGKILL ``QdrantMemoryStore.optimize()`` with writes going on.

The parent fills an embedded store and deletes part of it (so the optimiser
has segments to vacuum and rebuild). A child process opens the store, starts
a thread that keeps writing (printing ``ack <i>`` after each put returned) and
calls ``optimize()``; the parent SIGKILLs it while the optimisation runs.
After every kill the store opens cleanly, every acknowledged write is there
with its value, nothing deleted came back, and search still works.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import PutOp
from reliability_helpers import CHILD, REPO, WordEmbeddings, make_store

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX-only")

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
]


def _store(path: Path) -> Any:
    return make_store("embedded", path, WordEmbeddings(), dims=32)


def fill(path: Path, start: int, count: int, delete_every: int) -> tuple[set[str], set[str]]:
    """Write ``count`` base items, delete every ``delete_every``-th; return (kept, deleted)."""
    rng = random.Random(start)
    kept, deleted = set(), set()
    with _store(path) as store:
        keys = [f"b{i}" for i in range(start, start + count)]
        for s in range(0, count, 250):
            store.batch(
                [
                    PutOp(("opt", "base"), k, {"text": " ".join(rng.choices(WORDS, k=6)) + f" {k}"})
                    for k in keys[s : s + 250]
                ]
            )
        doomed = keys[::delete_every]
        store.batch([PutOp(("opt", "base"), k, None) for k in doomed])
        kept.update(set(keys) - set(doomed))
        deleted.update(doomed)
    return kept, deleted


def run_child(path: Path, start: int, kill_delay: float | None) -> tuple[set[int], bool]:
    """One child; returns (acknowledged write numbers, whether optimize() finished)."""
    child = subprocess.Popen(
        [sys.executable, str(CHILD), "optimize", str(path), str(start)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    acked: set[int] = set()
    finished = False
    timer: threading.Timer | None = None
    watchdog = threading.Timer(300, child.kill)
    watchdog.start()
    try:
        assert child.stdout is not None
        for raw in child.stdout:
            line = raw.strip()
            if line.startswith("ack "):
                acked.add(int(line.split()[1]))
            elif line == "optimizing" and kill_delay is not None:
                timer = threading.Timer(kill_delay, child.send_signal, (signal.SIGKILL,))
                timer.start()
            elif line.startswith("optimized"):
                finished = True
        _, err = child.communicate()
        if kill_delay is None:
            assert child.returncode == 0, err
    finally:
        watchdog.cancel()
        if timer is not None:
            timer.cancel()
        if child.poll() is None:
            child.kill()
            child.wait()
    return acked, finished


def verify(path: Path, kept: set[str], deleted: set[str], acked: set[int]) -> None:
    with _store(path) as store:
        base = {i.key for i in store.search(("opt", "base"), limit=100_000)}
        assert base == kept, (len(base - kept), len(kept - base))
        assert not base & deleted
        live = {i.key: i.value["text"] for i in store.search(("opt", "live"), limit=100_000)}
        missing = {f"w{i}" for i in acked} - live.keys()
        assert not missing, f"{len(missing)} acknowledged writes lost: {sorted(missing)[:5]}"
        for key, text in live.items():
            assert text == f"written during optimize {key[1:]}"
        assert store.search(("opt",), query="alpha beta", limit=5)


def crash_optimize(workdir: Path, rounds: int, per_round: int, seed: int) -> dict[str, int]:
    """``rounds`` SIGKILLs that land inside ``optimize()``, then one run that finishes.

    Each attempt adds ``per_round`` fresh items (so the optimiser has work)
    and kills the child a random delay after it printed ``optimizing``. An
    optimisation quicker than the drawn delay (a fast host) is not a landed
    kill: the attempt still verifies the store, and the next one draws from a
    range half as long, so the test does not depend on the host's speed.
    """
    rng = random.Random(seed)
    path = workdir / "store"
    kept: set[str] = set()
    deleted: set[str] = set()
    acked: set[int] = set()
    mid_optimize_kills = 0
    next_write = 0
    longest = 0.3
    attempt = 0
    while True:
        k, d = fill(path, attempt * per_round, per_round, delete_every=2)
        kept |= k
        deleted |= d
        last = mid_optimize_kills == rounds or attempt == 3 * rounds + 2
        delay = None if last else rng.uniform(0.02, longest)
        new_acks, finished = run_child(path, next_write, delay)
        acked |= new_acks
        next_write = max(acked, default=next_write) + 1_000
        verify(path, kept, deleted, acked)
        attempt += 1
        if last:
            break
        if finished:
            longest = max(0.03, longest / 2)  # the optimisation beat the kill: aim earlier
        else:
            mid_optimize_kills += 1
    assert mid_optimize_kills == rounds, "kills did not land during optimize()"
    return {
        "rounds": rounds,
        "attempts": attempt,
        "mid_optimize_kills": mid_optimize_kills,
        "acked": len(acked),
    }


def test_sigkill_during_optimize_with_concurrent_writes_loses_nothing(workdir: Path) -> None:
    started = time.monotonic()
    print(crash_optimize(workdir, rounds=1, per_round=1500, seed=5), time.monotonic() - started)


@pytest.mark.slow
def test_repeated_sigkills_during_optimize(workdir: Path) -> None:
    print(crash_optimize(workdir, rounds=6, per_round=1500, seed=8))
