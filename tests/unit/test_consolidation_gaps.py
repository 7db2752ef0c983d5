"""Consolidation's promises that the facade test does not reach.

* the **merge** step: near-duplicates the write path kept apart become one fact
  with the higher confidence and the provenance of both;
* it **never holds the write path**: writes made while a pass is paused (by a
  progress callback waiting on an event) finish before the pass does, and
  nothing written during the pass is lost or forgotten by it;
* the per-user **size cap**, end to end: the lowest-value memories go to the
  trash with an audit record and the count lands on the cap.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import timedelta
from pathlib import Path

import pytest
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory import Episode, Outcome, TieredMemory, ToolUsageRecord
from langchain_tiered_memory.consolidation import ConsolidationReport, ForgettingPolicy
from langchain_tiered_memory.testing.fakes import FakeClock, HashingEmbeddings
from langchain_tiered_memory.tiers.semantic.models import Fact
from langchain_tiered_memory.user_memory import UserMemory

WAIT = 60.0
"""Seconds a step may take on a slow, shared CI machine before the test calls it stuck."""

CELTICS = "Is a fan of the Boston Celtics"
CELTICS_BIG = "Is a big fan of the Boston Celtics"
BULLS = "Is a fan of the Chicago Bulls"
BULLS_BIG = "Is a big fan of the Chicago Bulls"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=["inmemory", "embedded"])
def memory(
    request: pytest.FixtureRequest, clock: FakeClock, tmp_path: Path
) -> Iterator[TieredMemory]:
    if request.param == "embedded":
        mem = TieredMemory.open(tmp_path / "mem", embeddings=HashingEmbeddings(), clock=clock)
    else:
        store = InMemoryStore(index={"dims": 384, "embed": HashingEmbeddings(), "fields": ["text"]})
        mem = TieredMemory(store, clock=clock)
    yield mem
    mem.close()


def trashed_keys(user: UserMemory) -> set[str]:
    return {item.value["key"] for item in user.trash.list_trashed()}


def soft_deleted_keys(user: UserMemory) -> set[str]:
    return {r.key for r in user.trash.audit_log() if r.action == "soft_delete"}


# -- 1. merge ------------------------------------------------------------------------


@pytest.mark.parametrize("stronger_first", [True, False])
def test_merge_keeps_higher_confidence_and_provenance_of_both(
    memory: TieredMemory, clock: FakeClock, stronger_first: bool
) -> None:
    alice = memory.for_user("alice")
    weak = (CELTICS, 0.6, "ep-weak")
    strong = (CELTICS_BIG, 0.9, "ep-strong")
    ids: dict[str, str] = {}
    for content, confidence, episode_id in [strong, weak] if stronger_first else [weak, strong]:
        result = alice.semantic.store_fact(
            "alice", content, confidence=confidence, source_episode_id=episode_id
        )
        # The write path's judge compares content words ("big" tips it under its
        # threshold), so it keeps both: only consolidation can merge them.
        assert result.outcome == "new"
        ids[episode_id] = result.fact.fact_id
        clock.advance(days=1)
    unrelated = alice.semantic.store_fact("alice", "Works night shifts", confidence=0.7).fact
    assert len(alice.semantic.get_facts("alice")) == 3

    report = alice.consolidate()

    assert report.ok, report.errors
    assert report.facts_merged == 1
    facts = {f.fact_id: f for f in alice.semantic.get_facts("alice")}
    assert set(facts) == {ids["ep-strong"], unrelated.fact_id}
    kept = facts[ids["ep-strong"]]
    assert kept.content == CELTICS_BIG and kept.confidence == 0.9
    assert sorted(kept.source_episode_ids) == ["ep-strong", "ep-weak"]
    assert kept.first_observed == clock() - timedelta(days=2)  # the older observation
    assert facts[unrelated.fact_id].source_episode_ids == []  # untouched
    # The weaker duplicate is soft-deleted (restorable), with an audit record.
    assert trashed_keys(alice) == soft_deleted_keys(alice) == {ids["ep-weak"]}
    assert "merged into duplicate" in alice.trash.audit_log()[0].reason
    # A second pass finds nothing more to merge.
    assert alice.consolidate().facts_merged == 0


# -- 2. never holds the write path ------------------------------------------------


class PauseAt:
    """A progress callback that holds the pass at one point until released."""

    def __init__(self, phase: str, done: int) -> None:
        self.phase, self.done = phase, done
        self.reached = threading.Event()
        self.release = threading.Event()

    def __call__(self, phase: str, done: int, total: int) -> None:
        if (phase, done) == (self.phase, self.done) and not self.reached.is_set():
            assert total > done, f"pause point {phase} {done}/{total} is the end of the phase"
            self.reached.set()
            self.release.wait(2 * WAIT)


def seed_for_concurrency(alice: UserMemory, clock: FakeClock) -> dict[str, str]:
    """Enough memories that every phase has several steps to pause between."""
    now = clock()
    old = Episode(
        task_description="Abandoned plan to repaint the shed",
        outcome=Outcome.ABANDONED,
        created_at=now - timedelta(days=30),
    )
    alice.episodic.record(old)  # forgotten by this pass (abandoned, older than 7 days)
    for days in (3, 2, 1):
        alice.episodic.record(
            Episode(
                task_description=f"Routine check number {days}",
                outcome=Outcome.SUCCESS,
                created_at=now - timedelta(days=days),
            )
        )
    for entity in ("alice", "bob"):
        text, big = (CELTICS, CELTICS_BIG) if entity == "alice" else (BULLS, BULLS_BIG)
        alice.semantic.store_fact(entity, text, confidence=0.6, source_episode_id=f"{entity}-1")
        alice.semantic.store_fact(entity, big, confidence=0.9, source_episode_id=f"{entity}-2")
    weak = alice.semantic.store_fact("alice", "Might enjoy opera", confidence=0.25)
    return {"old_episode": old.episode_id, "weak_fact": weak.fact.fact_id}


def pair_facts(alice: UserMemory, entity: str) -> list[Fact]:
    """The entity's current facts from its near-duplicate pair (one once merged)."""
    return [f for f in alice.semantic.get_facts(entity) if "fan of the" in f.content]


def write_during_run(alice: UserMemory, clock: FakeClock) -> dict[str, str]:
    """What a user does while consolidation runs: the writes must not wait for it."""
    written: dict[str, str] = {}
    written["fact"] = alice.semantic.store_fact(
        "alice", "Cycles to work every day", confidence=0.8, source_episode_id="during"
    ).fact.fact_id
    # Restate the low-confidence fact: it is now confirmed, above the forgetting floor.
    restated = alice.semantic.store_fact(
        "alice", "Might enjoy opera", confidence=0.5, source_episode_id="during"
    )
    assert restated.outcome == "reinforced" and restated.fact.confidence >= 0.3
    # Restate the stronger of a duplicate pair that has not been merged yet (if any).
    for entity, big in (("alice", CELTICS_BIG), ("bob", BULLS_BIG)):
        if len(pair_facts(alice, entity)) == 2 or entity == "bob":
            written["restated_entity"] = entity
            alice.semantic.store_fact(entity, big, confidence=0.9, source_episode_id="during")
            break
    episode = alice.episodic.record(
        Episode(
            task_description="Plan meals. I'm vegetarian, by the way.",
            outcome=Outcome.SUCCESS,
            created_at=clock(),
        )
    )
    written["episode"] = episode.episode_id
    alice.procedural.record_tool_use(
        ToolUsageRecord(tool_name="meal_planner", context="plan meals", success=True)
    )
    return written


@pytest.mark.parametrize(("phase", "done"), [("episodes", 2), ("merge", 1), ("forget", 1)])
def test_writes_finish_while_consolidation_runs_and_survive_it(
    memory: TieredMemory, clock: FakeClock, phase: str, done: int
) -> None:
    alice = memory.for_user("alice")
    seeded = seed_for_concurrency(alice, clock)
    pause = PauseAt(phase, done)
    with ThreadPoolExecutor(max_workers=2) as pool:
        run: Future[ConsolidationReport] = pool.submit(alice.consolidate, pause)
        try:
            assert pause.reached.wait(WAIT), f"the pass never reached {phase} {done}"
            writes = pool.submit(write_during_run, alice, clock)
            try:
                written = writes.result(timeout=WAIT)
            except FutureTimeout:
                pytest.fail("writes waited for the consolidation pass (it holds the write path)")
            assert not run.done(), "the pass ended before the writes: the test proves nothing"
        finally:
            pause.release.set()
        report = run.result(timeout=2 * WAIT)

    assert report.ok, report.errors
    assert seeded["old_episode"] in soft_deleted_keys(alice)  # the pass did forget
    # Nothing written during the pass was lost or forgotten by it.
    assert alice.episodic.get(written["episode"]) is not None
    facts = {f.fact_id: f for f in alice.semantic.get_facts("alice")}
    assert "during" in facts[written["fact"]].source_episode_ids
    opera = alice.semantic.get_fact(seeded["weak_fact"])
    assert opera is not None and opera.is_current, "a fact confirmed during the pass was forgotten"
    assert "during" in opera.source_episode_ids
    entity = written["restated_entity"]
    [merged] = pair_facts(alice, entity)
    assert "during" in merged.source_episode_ids, "a confirmation made during the merge was lost"
    assert len(merged.source_episode_ids) == 3
    assert not {written["fact"], written["episode"]} & trashed_keys(alice)
    assert alice.procedural.get_tool_guidance("meal_planner").successes == 1
    # The episode recorded during the pass is consolidated by the next one.
    again = alice.consolidate()
    assert again.ok and again.episodes_processed == 1
    assert any("vegetarian" in f.content.lower() for f in alice.semantic.get_facts("alice"))


# -- 3. the size cap, end to end ---------------------------------------------------


def test_size_cap_forgets_the_lowest_value_memories(memory: TieredMemory, clock: FakeClock) -> None:
    capped = TieredMemory(
        memory.store, clock=clock, forgetting=ForgettingPolicy(max_items_per_user=4)
    )
    alice = capped.for_user("alice")
    facts: dict[str, str] = {}
    for name, text, confidence in [
        ("fact_mid", "Works in logistics", 0.7),
        ("fact_high", "Allergic to shellfish", 0.95),
        ("fact_low", "Maybe likes hiking", 0.35),  # the newest fact, but the least sure
    ]:
        facts[name] = alice.semantic.store_fact("alice", text, confidence=confidence).fact.fact_id
        clock.advance(days=1)
    clock.advance(days=7)
    now = clock()

    def episode(text: str, days_ago: float, importance: float, pinned: bool = False) -> str:
        return alice.episodic.record(
            Episode(
                task_description=text,
                outcome=Outcome.SUCCESS,
                created_at=now - timedelta(days=days_ago),
                importance=importance,
                pinned=pinned,
                context={"facts_extracted": True},  # keep the count under the test's control
            )
        ).episode_id

    episodes = {
        "ep_low": episode("Looked up the weather", 20, 0.05),
        "ep_high": episode("Shipped the quarterly report", 1, 0.9),
        "ep_pinned": episode("Kept for the record", 50, 0.0, pinned=True),
    }
    # Six memories, cap four: none is old or weak enough for another rule to forget it.
    report = alice.consolidate()

    assert report.ok, report.errors
    gone = {episodes["ep_low"], facts["fact_low"]}  # the two lowest-value unpinned ones
    assert {key.split(":", 1)[1] for key, _ in report.forgotten} == gone
    assert all(why.startswith("size cap 4") for _, why in report.forgotten)
    remaining_episodes = alice.episodic.get_episodes_in_range(now - timedelta(days=365), now)
    remaining_facts = alice.semantic.get_facts("alice")
    assert len(remaining_episodes) + len(remaining_facts) == 4
    kept_episodes = {e.episode_id for e in remaining_episodes}
    assert kept_episodes == {episodes["ep_high"], episodes["ep_pinned"]}
    assert {f.fact_id for f in remaining_facts} == {facts["fact_mid"], facts["fact_high"]}
    # Soft deletes: in the trash (restorable), each with an audit record naming the cap.
    assert trashed_keys(alice) == soft_deleted_keys(alice) == gone
    assert all("size cap" in r.reason for r in alice.trash.audit_log())
    assert alice.trash.restore(alice.episodic.namespace, episodes["ep_low"])
    assert alice.episodic.get(episodes["ep_low"]) is not None
