"""Crash safety of background optimisation: SIGKILL the store's process at every phase.

The parent fills an embedded store (and deletes part of it). A child process
(``_child_optimize.py``) opens it, keeps writing and deleting in a thread
(printing an ``ack``/``del`` line after each call returned) and runs
``store.start_optimize()``; it SIGKILLs itself when a chosen phase begins
(copying, building, loading, replaying, swapping, cleaning), or the parent
kills it after a random delay. After every kill: the build process died with
its parent, the store reopens cleanly (the recovery rule of
``stores/edge/files.py`` deletes the unfinished or superseded generation), every
acknowledged write is there with its value, nothing deleted came back, exactly
one shard generation is left, and search works.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
from contextlib import ExitStack
from pathlib import Path

import pytest
from _child_optimize import open_store
from langgraph.store.base import PutOp
from reliability_helpers import REPO

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX-only")

CHILD = Path(__file__).with_name("_child_optimize.py")
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]
PHASES = ("copying", "building", "loading", "replaying", "swapping", "cleaning")


class Ledger:
    """What the store must hold: base items kept/deleted, and the child's acknowledged writes."""

    def __init__(self) -> None:
        self.kept: set[str] = set()
        self.deleted: set[str] = set()
        self.acked: set[int] = set()
        self.acked_deletes: set[int] = set()
        self.next_write = 0

    def fill(self, path: Path, start: int, count: int) -> None:
        rng = random.Random(start)
        keys = [f"b{i}" for i in range(start, start + count)]
        with open_store(str(path)) as store:
            for s in range(0, count, 250):
                store.batch(
                    [
                        PutOp(("opt", "base"), k, {"text": " ".join(rng.choices(WORDS, k=6))})
                        for k in keys[s : s + 250]
                    ]
                )
            doomed = keys[::3]
            store.batch([PutOp(("opt", "base"), k, None) for k in doomed])
        self.kept |= set(keys) - set(doomed)
        self.deleted |= set(doomed)

    def verify(self, path: Path) -> None:
        with open_store(str(path)) as store:
            base = {i.key for i in store.search(("opt", "base"), limit=100_000)}
            assert base == self.kept, (len(base - self.kept), len(self.kept - base))
            live = {i.key: i.value["text"] for i in store.search(("opt", "live"), limit=100_000)}
            maybe_deleted = {i - 3 for i in self.acked if i % 7 == 6}
            missing = {f"w{i}" for i in self.acked - maybe_deleted} - live.keys()
            assert not missing, f"{len(missing)} acknowledged writes lost: {sorted(missing)[:5]}"
            back = {f"w{i}" for i in self.acked_deletes} & live.keys()
            assert not back, f"acknowledged deletes came back: {sorted(back)[:5]}"
            for key, text in live.items():
                assert text == f"written during optimize {key[1:]}"
            assert store.search(("opt",), query="alpha beta", limit=5)
        container = path / "memories"
        shards = [p.name for p in container.iterdir() if p.name.startswith("shard-")]
        assert len(shards) <= 1, shards  # the next open already cleaned up
        assert not (container / "tiered_memory.holder.json").exists()


def build_processes(path: Path) -> list[int]:
    """Pids of build processes (edge/build.py) working on ``path``."""
    pids = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (proc / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if "edge/build.py" in cmdline and str(path) in cmdline:
            pids.append(int(proc.name))
    return pids


def _reap(child: subprocess.Popen[str]) -> None:
    if child.poll() is None:
        child.kill()
        child.wait()


def run_child(path: Path, ledger: Ledger, kill_phase: str, kill_delay: float | None) -> list[str]:
    """One child; returns the phases it began. Updates the ledger with its acknowledgements."""
    child = subprocess.Popen(
        [sys.executable, str(CHILD), str(path), str(ledger.next_write), kill_phase],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    phases: list[str] = []
    with ExitStack() as cleanup:
        cleanup.callback(_reap, child)
        timers = [threading.Timer(300, child.kill)]  # a watchdog, then maybe the kill
        cleanup.callback(lambda: [t.cancel() for t in timers])
        timers[0].start()
        assert child.stdout is not None
        for raw in child.stdout:
            word, _, arg = raw.strip().partition(" ")
            if word == "ack":
                ledger.acked.add(int(arg))
            elif word == "del":
                ledger.acked_deletes.add(int(arg))
            elif word == "phase":
                phases.append(arg)
                if arg == "copying" and kill_delay is not None:
                    timers.append(threading.Timer(kill_delay, child.send_signal, (signal.SIGKILL,)))
                    timers[-1].start()
        _, err = child.communicate()
        expected = (0,) if kill_phase == "-" and kill_delay is None else (0, -signal.SIGKILL)
        assert child.returncode in expected, err
    ledger.next_write = max(ledger.acked, default=ledger.next_write) + 1_000
    if sys.platform.startswith("linux"):  # the build process dies with its parent
        deadline = time.monotonic() + 10
        while build_processes(path) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert build_processes(path) == []
    return phases


def crash_rounds(workdir: Path, kills: list[tuple[str, float | None]], per_round: int) -> None:
    """One child per kill (``("-", None)`` runs to the end), each verified after it."""
    path = workdir / "store"
    ledger = Ledger()
    for n, (kill_phase, delay) in enumerate(kills):
        ledger.fill(path, n * per_round, per_round)
        phases = run_child(path, ledger, kill_phase, delay)
        if kill_phase != "-":
            assert phases[-1] == kill_phase, phases  # the kill landed where intended
        ledger.verify(path)
        print(f"round {n}: kill at {kill_phase} {delay} -> phases {phases}", flush=True)
    assert ledger.acked and ledger.acked_deletes
    print(
        f"{len(kills)} runs, {len(ledger.acked)} acknowledged writes and "
        f"{len(ledger.acked_deletes)} acknowledged deletes: none lost, none back"
    )


def test_sigkill_before_and_after_the_commit_loses_nothing(workdir: Path) -> None:
    # Before the commit the old shard must win; after it, the new one.
    crash_rounds(workdir, [("building", None), ("cleaning", None)], 600)


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_sigkill_at_every_phase_and_at_random_times(workdir: Path) -> None:
    rng = random.Random(11)
    kills: list[tuple[str, float | None]] = [(phase, None) for phase in PHASES]
    kills += [("-", rng.uniform(0.0, 4.0)) for _ in range(4)]
    crash_rounds(workdir, [*kills, ("-", None)], 800)
