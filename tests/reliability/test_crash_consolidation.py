"""Crash safety of consolidation: SIGKILL ``UserMemory.consolidate()`` mid-way, restart.

The parent records many episodes (each with tool-call steps) in an embedded
memory, keeps a pristine copy of it, and runs ``consolidate()`` in a child
process that it SIGKILLs at random points of the episode phase. After each
kill the store must open cleanly; the next pass resumes from the saved cursor,
and after the final pass every episode's effects are applied exactly once:
tool-use counts are exact and the facts (content, confidence, provenance) are
the same as those of an uninterrupted pass over the pristine copy.

(The durable writer's own SIGKILL test is tests/integration/test_writeback_crash.py.)
"""

from __future__ import annotations

import json
import random
import shutil
import signal
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from reliability_helpers import CHILD, REPO, WordEmbeddings

from langchain_tiered_memory import Episode, TieredMemory, TrajectoryStep
from langchain_tiered_memory.types import utcnow

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX-only")

CITIES = ["Lyon", "Porto", "Oslo", "Riga", "Turin", "Ghent", "Bergen", "Cork"]
ALLERGENS = ["shellfish", "peanuts", "gluten", "pollen", "dust", "cats", "latex", "soy"]


def _open(path: Path) -> TieredMemory:
    return TieredMemory.open(path, embeddings=WordEmbeddings(), durable_writes=False)


def populate(path: Path, episodes: int) -> None:
    start = utcnow() - timedelta(hours=1)
    with _open(path) as memory:
        alice = memory.for_user("alice")
        for i in range(episodes):
            city = CITIES[i % len(CITIES)]
            alice.episodic.record(
                Episode(
                    episode_id=f"ep{i:04d}",
                    task_description=f"I live in {city}. I'm allergic to {ALLERGENS[i % 7]}.",
                    outcome="success" if i % 2 else "failure",
                    created_at=start + timedelta(seconds=i),
                    trajectory=[
                        TrajectoryStep(action="tool_call: search(q)", observation="ok"),
                        TrajectoryStep(
                            action="tool_call: fetch",
                            observation="error 500" if i % 3 == 0 else "fetched",
                        ),
                    ],
                )
            )


def run_child(path: Path, kill_after: int | None) -> dict[str, Any] | None:
    """Run one pass; SIGKILL it after ``kill_after`` processed episodes. Returns the report."""
    child = subprocess.Popen(
        [sys.executable, str(CHILD), "consolidate", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    watchdog = threading.Timer(300, child.kill)
    watchdog.start()
    report = None
    try:
        assert child.stdout is not None
        for raw in child.stdout:
            line = raw.strip()
            if line.startswith("done "):
                report = json.loads(line[5:])
            parts = line.split()
            if (
                kill_after is not None
                and parts[:2] == ["progress", "episodes"]
                and int(parts[2]) >= kill_after
            ):
                child.send_signal(signal.SIGKILL)
                break
        _, err = child.communicate()
        if kill_after is None:
            assert child.returncode == 0, err
        else:
            assert child.returncode == -signal.SIGKILL, f"the pass ended before the kill: {err}"
    finally:
        watchdog.cancel()
        if child.poll() is None:
            child.kill()
            child.wait()
    return report


def outcome(path: Path) -> dict[str, Any]:
    with _open(path) as memory:
        alice = memory.for_user("alice")
        facts = sorted(
            (f.content, round(f.confidence, 6), tuple(sorted(f.source_episode_ids)))
            for f in alice.semantic.get_facts("alice")
        )
        guidance = {t: alice.procedural.get_tool_guidance(t) for t in ("search", "fetch")}
        return {
            "facts": facts,
            "uses": {t: (g.total_uses, g.successes, g.failures) for t, g in guidance.items()},
            "episodes": len(alice.episodic.retrieve_recent(10_000)),
        }


def crash_and_resume(workdir: Path, episodes: int, kills: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    path, pristine = workdir / "mem", workdir / "pristine"
    populate(path, episodes)
    shutil.copytree(path, pristine)
    done_before = 0
    for n in range(kills):
        # Kill points spread over the pass; each resumed pass has fewer episodes left.
        low = done_before + 1
        high = done_before + max(2, (episodes - done_before) // (kills - n + 1))
        target = rng.randint(low, high) - done_before
        assert run_child(path, kill_after=target) is None
        with _open(path):  # the store opens cleanly after every kill
            pass
        done_before += target
    final = run_child(path, kill_after=None)
    assert final is not None and not final["errors"], final
    assert final["resumed_from"] is not None
    assert final["episodes_processed"] <= episodes - done_before + kills
    crashed = outcome(path)
    with _open(pristine) as memory:
        report = memory.for_user("alice").consolidate()
        assert report.ok and report.episodes_processed == episodes
    reference = outcome(pristine)
    fetch_failures = sum(1 for i in range(episodes) if i % 3 == 0)
    assert crashed["uses"] == {
        "search": (episodes, episodes, 0),
        "fetch": (episodes, episodes - fetch_failures, fetch_failures),
    }
    assert crashed["facts"], "the episodes produced facts"
    assert crashed == reference
    return {"episodes": episodes, "kills": kills, "facts": len(crashed["facts"])}


def test_sigkill_during_consolidation_then_resume_applies_each_episode_once(
    workdir: Path,
) -> None:
    print(crash_and_resume(workdir, episodes=40, kills=1, seed=3))


@pytest.mark.slow
def test_many_sigkills_during_a_long_consolidation(workdir: Path) -> None:
    print(crash_and_resume(workdir, episodes=600, kills=8, seed=11))
