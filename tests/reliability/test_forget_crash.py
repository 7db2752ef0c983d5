"""A SIGKILL in the middle of ``forget_user`` leaves none of the user's text once reopened.

The parent fills a memory directory for a victim (facts, episodes, tool uses,
a queued write) and a keeper, each record carrying unique canary strings, and
closes it. A child process opens it and calls ``forget_user(victim)``; the
parent SIGKILLs the child part-way: after the first batch of deletions, or
while the store rewrites its files without the deleted records. Reopening the
directory finishes the erasure (:mod:`langchain_tiered_memory.erasure`): every
file under the memory directory is then read as raw bytes and holds none of
the victim's canaries, the victim is not listed, and the keeper is untouched.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest
from langgraph.store.base import PutOp
from reliability_helpers import REPO, fast_dir

from langchain_tiered_memory import Episode, TieredMemory, ToolUsageRecord
from langchain_tiered_memory.erasure import ERASURES_NAMESPACE
from langchain_tiered_memory.testing.fakes import HashingEmbeddings
from langchain_tiered_memory.tiers.episodic.payload import (
    EMBED_FIELDS,
    episode_to_value,
    episodes_namespace,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX-only")

CHILD = Path(__file__).with_name("_child_forget.py")
VICTIM = "victim-k9q"
KEEPER = "keeper-p4w"
EPISODES = 300
"""More than one deletion batch (256 records) of the victim's."""


def open_memory(root: Path) -> TieredMemory:
    return TieredMemory.open(root, embeddings=HashingEmbeddings(size=64))


def populate(memory: TieredMemory, user: str, tag: str, episodes: int) -> list[bytes]:
    """Write ``user``'s memories, each with a unique canary; return the canaries."""
    c = [f"{tag}{uuid.uuid4().hex[:10]}" for _ in range(6)]
    me = memory.for_user(user)
    me.semantic.store_fact(user, f"Loves {c[0]} music", confidence=0.9)
    me.remember(f"I live in {c[1]}.")
    me.procedural.record_tool_use(
        ToolUsageRecord(tool_name="booking", success=False, error_message=f"{c[2]} down")
    )
    me.procedural.set_preference("city", c[3])
    namespace = episodes_namespace(me.scope)
    memory.store.batch(  # in one batch: the store embeds them in bulk
        [
            PutOp(namespace, ep.episode_id, episode_to_value(ep), index=EMBED_FIELDS)
            for ep in (
                Episode(task_description=f"trip {i} to {c[4]}", outcome="success")
                for i in range(episodes)
            )
        ]
    )
    me.queue_remember(f"My favourite band is {c[5]}.")
    memory.flush()
    me.semantic.semantic_search(c[0])  # an access count to save at close
    return [s.encode() for s in c]


def files_holding(root: Path, needles: list[bytes]) -> dict[str, int]:
    """For each file under ``root`` holding a needle: how many of the needles it holds."""
    found: dict[str, int] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        hits = sum(needle in data for needle in needles)
        if hits:
            found[str(path.relative_to(root))] = hits
    return found


def kill_mid_forget(root: Path, stage: str, delay: float) -> bool:
    """Run the child; SIGKILL it ``delay`` s after it reached ``stage``. True if it was killed."""
    child = subprocess.Popen(
        [sys.executable, str(CHILD), str(root), VICTIM, stage],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    watchdog = threading.Timer(300, child.kill)
    watchdog.start()
    timer: threading.Timer | None = None
    finished = False
    try:
        assert child.stdout is not None
        for raw in child.stdout:
            line = raw.strip()
            if line == f"at {stage}":
                timer = threading.Timer(delay, child.send_signal, (signal.SIGKILL,))
                timer.start()
            elif line.startswith("done"):
                finished = True
        _, err = child.communicate()
        assert timer is not None, f"the child never reached {stage!r}: {err[-2000:]}"
    finally:
        watchdog.cancel()
        if timer is not None:
            timer.join()
        if child.poll() is None:
            child.kill()
            child.wait()
    return not finished and child.returncode == -signal.SIGKILL


def crash_and_reopen(stage: str, delay: float) -> dict[str, int]:
    """One victim, one kill at ``stage``, one reopen; returns the canary counts."""
    root = fast_dir("ltm-forget-crash-")
    try:
        memory = open_memory(root)
        try:
            victim = [*populate(memory, VICTIM, "vzq", EPISODES), VICTIM.encode()]
            keeper = populate(memory, KEEPER, "kpz", 3)
        finally:
            memory.close()
        before = sum(files_holding(root, victim).values())
        assert before > 0  # the scan can find them
        killed = kill_mid_forget(root, stage, delay)

        memory = open_memory(root)  # finishes the erasure
        try:
            assert VICTIM not in memory.users()
            assert list(memory.export_user(VICTIM)) == []
            assert memory.store.search(ERASURES_NAMESPACE) == []
            kept = memory.for_user(KEEPER)
            assert len(kept.episodic.retrieve_recent(10)) == 3
            assert kept.semantic.get_facts(KEEPER)
        finally:
            memory.close()
        left = files_holding(root, victim)
        assert left == {}, left
        assert files_holding(root, keeper)  # the keeper's text is still on disk
        return {"before": before, "after": 0, "killed": int(killed)}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_sigkill_after_the_first_deletions_is_finished_on_reopen() -> None:
    assert crash_and_reopen("delete", 0.0)["killed"] == 1


def test_sigkill_during_the_purge_is_finished_on_reopen() -> None:
    crash_and_reopen("purge", 0.05)


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.0, 0.2, 0.5, 1.0])
def test_sigkill_at_any_point_of_the_purge_is_finished_on_reopen(delay: float) -> None:
    crash_and_reopen("purge", delay)
