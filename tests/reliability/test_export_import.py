"""Export / import: a user's memories survive a round trip, also across engines.

One user's memories of every tier are exported to JSON Lines and imported into
an empty store on the same or the other engine. The import must give back the
same records (namespaces, keys, values, timestamps) and the same answers to
the same queries: ids in the same order, with the same scores, and the same
assembled context.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from reliability_helpers import open_memory

from langchain_tiered_memory import (
    Episode,
    InvalidInputError,
    TieredMemory,
    ToolUsageRecord,
    TrajectoryStep,
)
from langchain_tiered_memory.testing.fakes import FakeClock

USER = "alice"
QUERIES = [
    "Where should we eat tonight?",
    "deploy the payments service",
    "book a flight to Lisbon",
    "what music do I like",
    "search tool keeps timing out",
]
PAIRS = [("embedded", "client"), ("client", "embedded"), ("embedded", "embedded")]


def populate(memory: TieredMemory, clock: FakeClock) -> None:
    alice = memory.for_user(USER)
    bob = memory.for_user("bob")
    facts = [
        "Allergic to shellfish",
        "Vegetarian since 2019",
        "Loves jazz and bossa nova",
        "Works as a data engineer",
        "Prefers aisle seats on flights",
        "Has a dog named Pixel",
    ]
    for i, fact in enumerate(facts):
        alice.semantic.store_fact(USER, fact, confidence=0.6 + 0.05 * i)
        clock.advance(hours=3)
    alice.semantic.store_fact("lisbon", "Capital of Portugal", entity_type="place")
    alice.remember("I live in Porto and I work at Acme.")
    for i, (task, outcome) in enumerate(
        [
            ("Deploy the payments service to staging", "failure"),
            ("Book a flight to Lisbon for the conference", "success"),
            ("Find a vegetarian restaurant near the office", "success"),
            ("Deploy the search service with a canary", "partial"),
            ("Summarise the jazz festival programme", "success"),
        ]
    ):
        alice.episodic.record(
            Episode(
                task_description=task,
                outcome=outcome,
                reflection=f"Lesson {i}: check the plan before acting",
                session_id=f"s{i % 2}",
                tags=["work" if "Deploy" in task else "life"],
                importance=0.3 + 0.1 * i,
                created_at=clock(),
                trajectory=[
                    TrajectoryStep(action="tool_call: search", observation="ok", timestamp=clock())
                ],
            )
        )
        clock.advance(days=1)
    for i in range(6):
        alice.procedural.record_tool_use(
            ToolUsageRecord(
                tool_name="search",
                success=i % 3 != 0,
                error_message="" if i % 3 else "timeout after 30 s",
                execution_time_ms=100.0 + i,
                timestamp=clock(),
            )
        )
    alice.procedural.register_strategy("canary deploys", "Deploy to 5% first", "deploying")
    alice.procedural.update_strategy_outcome("canary deploys", True)
    alice.procedural.register_strategy("book early", "Book flights a month ahead", "travel")
    alice.procedural.set_preference("tone", "concise")
    bob.semantic.store_fact("bob", "Allergic to peanuts", confidence=0.9)
    bob.episodic.record(Episode(task_description="Deploy bob's blog", outcome="success"))


def answers(memory: TieredMemory) -> dict[str, Any]:
    u = memory.for_user(USER)
    out: dict[str, Any] = {}
    for q in QUERIES:
        out[f"search:{q}"] = [(i.key, round(i.score, 6)) for i in u.search(q, top_k=10)]
        out[f"context:{q}"] = u.build_memory_context(q, 600).text
        out[f"similar:{q}"] = [
            (s.episode.episode_id, round(s.score.total, 6))
            for s in u.episodic.retrieve_similar(q, top_k=5)
        ]
        out[f"semantic:{q}"] = [
            (h.kind, h.entity_id, h.text, round(h.score or 0.0, 6))
            for h in u.semantic.semantic_search(q, top_k=8)
        ]
        out[f"strategies:{q}"] = [
            (s.strategy.name, round(s.score, 6)) for s in u.procedural.get_applicable_strategies(q)
        ]
    out["recent"] = [e.episode_id for e in u.episodic.retrieve_recent(10)]
    out["session"] = [e.episode_id for e in u.episodic.get_session_episodes("s1")]
    out["profile"] = u.semantic.retrieve_entity_context(USER).text
    out["guidance"] = repr(u.procedural.get_tool_guidance("search"))
    out["injection"] = u.procedural.get_context_injection("deploying")
    return out


def records(memory: TieredMemory, *, timestamps: bool) -> dict[tuple[Any, ...], Any]:
    out = {}
    for r in memory.export_user(USER):
        if "access" in r["namespace"]:
            continue  # access statistics change with every read
        stamp = (r["created_at"], r["updated_at"]) if timestamps else ()
        out[(tuple(r["namespace"]), r["key"])] = (r["value"], *stamp)
    return out


def round_trip(source_engine: str, target_engine: str, workdir: Path) -> tuple[Any, ...]:
    clock = FakeClock()
    source = open_memory(source_engine, workdir / "a", clock=clock)
    target = open_memory(target_engine, workdir / "b", clock=clock)
    try:
        populate(source, clock)
        clock.advance(days=2)
        path = workdir / "alice.jsonl"
        count = source.export_jsonl(USER, path)
        assert count == len(list(source.export_user(USER))) > 20
        assert target.import_jsonl(path, user_id=USER) == count
        return (
            records(source, timestamps=False),
            records(target, timestamps=False),
            records(source, timestamps=True),
            records(target, timestamps=True),
            answers(source),
            answers(target),
            target.users(),
        )
    finally:
        source.close()
        target.close()


@pytest.mark.parametrize(("source", "target"), PAIRS)
def test_round_trip_gives_back_the_same_memories_and_answers(
    source: str, target: str, workdir: Path
) -> None:
    src, dst, _, _, src_answers, dst_answers, users = round_trip(source, target, workdir)
    assert users == [USER]  # nothing of bob came along
    assert dst == src
    for key in src_answers:
        assert same(dst_answers[key], src_answers[key]), (key, dst_answers[key], src_answers[key])


def same(a: Any, b: Any) -> bool:
    """Equal, except that scores may differ by float32 noise between the two engines.

    The engines compute similarities in float32 in different libraries, so the
    same answer can score 1.4204224 on one and 1.4204226 on the other; ids,
    texts and order must still be identical.
    """
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=2e-6)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    return bool(a == b)


@pytest.mark.parametrize(("source", "target"), PAIRS)
def test_round_trip_keeps_record_timestamps(source: str, target: str, workdir: Path) -> None:
    _, _, src, dst, *_ = round_trip(source, target, workdir)
    assert dst == src
    # Not vacuous: the records span days of (fake) time, and the import ran two days later.
    stamps = sorted({stamp for _, created, updated in src.values() for stamp in (created, updated)})
    assert len(stamps) > 10


def test_restored_records_keep_their_order_and_later_writes_are_stamped_now(
    engine: str, workdir: Path
) -> None:
    clock = FakeClock()
    source = open_memory(engine, workdir / "a", clock=clock)
    target = open_memory(engine, workdir / "b", clock=clock)
    try:
        alice = source.for_user(USER)
        for fact in ("Lives in Porto", "Works at Acme", "Likes jazz"):
            alice.semantic.store_fact(USER, fact)
            clock.advance(days=1)
        source.export_jsonl(USER, workdir / "a.jsonl")
        clock.advance(days=30)
        target.import_jsonl(workdir / "a.jsonl", user_id=USER)
        facts_ns = alice.scope.namespace("semantic", "facts")
        newest_first = [i.key for i in source.store.search(facts_ns, limit=10)]
        assert [i.key for i in target.store.search(facts_ns, limit=10)] == newest_first
        target.store.put(facts_ns, "new", {"content": "Plays the cello"})
        item = target.store.get(facts_ns, "new")
        assert item is not None and item.updated_at > max(
            i.updated_at for i in target.store.search(facts_ns, limit=10) if i.key != "new"
        )
    finally:
        source.close()
        target.close()


def test_in_memory_store_import_keeps_timestamps(workdir: Path) -> None:
    from langgraph.store.memory import InMemoryStore

    clock = FakeClock()
    source = open_memory("embedded", workdir / "a", clock=clock)
    try:
        populate(source, clock)
        source.export_jsonl(USER, workdir / "alice.jsonl")
        target = TieredMemory(InMemoryStore(), clock=clock)
        assert target.import_jsonl(workdir / "alice.jsonl", user_id=USER) > 20
        assert records(target, timestamps=True) == records(source, timestamps=True)
    finally:
        source.close()


async def test_async_import_keeps_timestamps(engine: str, workdir: Path) -> None:
    clock = FakeClock()
    source = open_memory(engine, workdir / "a", clock=clock)
    target = open_memory(engine, workdir / "b", clock=clock)
    try:
        source.for_user(USER).remember("I live in Porto and I work at Acme.")
        clock.advance(days=3)
        source.export_jsonl(USER, workdir / "a.jsonl")
        clock.advance(days=3)
        assert await target.aimport_jsonl(workdir / "a.jsonl", user_id=USER) > 0
        assert records(target, timestamps=True) == records(source, timestamps=True)
    finally:
        source.close()
        target.close()


def test_import_rejects_a_bad_line_and_writes_nothing(memory: TieredMemory, workdir: Path) -> None:
    memory.for_user(USER).remember("I live in Porto.")
    path = workdir / "bad.jsonl"
    memory.export_jsonl(USER, path)
    good = path.read_text("utf-8")
    path.write_text(good + '{"format": "something-else"}\n', "utf-8")
    memory.forget_user(USER)
    with pytest.raises(InvalidInputError, match=r"bad\.jsonl:\d+"):
        memory.import_jsonl(path, user_id=USER)
    assert list(memory.export_user(USER)) == []


def test_import_is_idempotent(memory: TieredMemory, workdir: Path) -> None:
    alice = memory.for_user(USER)
    alice.remember("I live in Porto.")
    alice.episodic.record(Episode(task_description="Plan the week", outcome="success"))
    path = workdir / "a.jsonl"
    n = memory.export_jsonl(USER, path)
    before = records(memory, timestamps=False)
    assert memory.import_jsonl(path, user_id=USER) == n
    assert memory.import_jsonl(path, user_id=USER) == n
    assert records(memory, timestamps=False) == before
