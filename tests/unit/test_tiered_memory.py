"""The facade's promise on the default embedded store and on InMemoryStore."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory import (
    ConfigurationError,
    Episode,
    InvalidInputError,
    Outcome,
    TieredMemory,
    ToolUsageRecord,
    TrajectoryStep,
)
from langchain_tiered_memory.consolidation import ForgettingPolicy
from langchain_tiered_memory.testing.fakes import FakeClock, HashingEmbeddings
from langchain_tiered_memory.tokens import TokenCounter
from langchain_tiered_memory.user_memory import UserMemory

COUNTER = TokenCounter()


def memory_on(
    kind: str, tmp_path: Path, clock: FakeClock | None = None, **kwargs: Any
) -> TieredMemory:
    if kind == "embedded":
        return TieredMemory.open(
            tmp_path / "mem", embeddings=HashingEmbeddings(), clock=clock, **kwargs
        )
    store = InMemoryStore(index={"dims": 384, "embed": HashingEmbeddings(), "fields": ["text"]})
    return TieredMemory(store, clock=clock, **kwargs)


@pytest.fixture(params=["inmemory", "embedded"])
def memory(request: pytest.FixtureRequest, tmp_path: Path):
    mem = memory_on(request.param, tmp_path)
    yield mem
    mem.close()


def seed_alice(memory: TieredMemory) -> None:
    alice = memory.for_user("alice")
    alice.semantic.store_fact("alice", "Allergic to shellfish", confidence=0.95)
    alice.episodic.record(
        Episode(
            task_description="Deploy the payments service to staging",
            trajectory=[
                TrajectoryStep(
                    thought="deploy", action="tool_call: deploy", observation="error: probe failed"
                )
            ],
            outcome=Outcome.FAILURE,
            reflection="Readiness probe path was wrong; check /healthz before deploying",
        )
    )
    alice.procedural.record_tool_use(
        ToolUsageRecord(
            tool_name="orders_v1",
            parameters={},
            context="list orders",
            success=False,
            execution_time_ms=120,
            error_message="410 Gone: use orders_v2",
        )
    )


def test_the_promised_snippet(memory: TieredMemory) -> None:
    seed_alice(memory)
    alice = memory.for_user("alice")
    ctx = alice.build_memory_context("Recommend a restaurant for dinner tonight", token_budget=2000)
    assert "Allergic to shellfish" in ctx.text  # critical: in whatever the query
    assert "orders_v2" not in ctx.text  # the orders tool has nothing to do with dinner
    assert ctx.tokens == COUNTER.count(ctx.text) <= 2000
    orders = alice.build_memory_context("Look up the orders of last week", token_budget=2000)
    assert "orders_v2" in orders.text and "Allergic to shellfish" in orders.text
    tiers = {i.tier for i in orders.items}
    assert {"semantic", "procedural"} <= tiers
    for item in ctx.items:
        assert item.id and item.text and isinstance(item.score_breakdown, dict)
    fact = next(i for i in ctx.items if i.text == "Allergic to shellfish")
    assert fact.provenance["entity_id"] == "alice" and fact.confidence == pytest.approx(0.95)
    deploy = alice.build_memory_context("The staging deploy is failing again", token_budget=2000)
    assert "healthz" in deploy.text
    assert any(i.tier == "episodic" for i in deploy.items)


async def test_async_twin_matches_sync(memory: TieredMemory) -> None:
    seed_alice(memory)
    alice = memory.for_user("alice")
    sync = alice.build_memory_context("dinner tonight", token_budget=800)
    asyn = await alice.abuild_memory_context("dinner tonight", token_budget=800)
    assert [i.key for i in sync.items] == [i.key for i in asyn.items]
    assert sync.text == asyn.text


def test_small_budget_trims_and_reports(memory: TieredMemory) -> None:
    seed_alice(memory)
    ctx = memory.for_user("alice").build_memory_context("deploy dinner orders", token_budget=120)
    assert ctx.tokens <= 120
    assert ctx.dropped, "something must be reported as dropped at 120 tokens"
    assert all(d.reason for d in ctx.dropped)
    zero = memory.for_user("alice").build_memory_context("x", token_budget=0)
    assert zero.text == "" and zero.tokens == 0


def test_users_are_isolated(memory: TieredMemory) -> None:
    seed_alice(memory)
    bob = memory.for_user("bob")
    ctx = bob.build_memory_context("Recommend a restaurant; deploy; orders", token_budget=2000)
    assert ctx.items == [] and "shellfish" not in ctx.text and "orders_v2" not in ctx.text
    assert memory.for_user(" Alice ") is memory.for_user("alice")


def test_bad_input(memory: TieredMemory) -> None:
    alice = memory.for_user("alice")
    with pytest.raises(InvalidInputError):
        alice.build_memory_context("q", token_budget=-1)
    with pytest.raises(InvalidInputError):
        alice.build_memory_context(None, token_budget=10)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        memory.for_user("")
    with pytest.raises(ConfigurationError):
        TieredMemory({"not": "a store"})  # type: ignore[arg-type]


def test_a_failing_tier_is_reported_not_fatal(memory: TieredMemory, monkeypatch) -> None:
    seed_alice(memory)
    alice = memory.for_user("alice")

    def boom(*a, **k):
        raise RuntimeError("episodic index offline")

    monkeypatch.setattr(alice.episodic, "retrieve_similar", boom)
    ctx = alice.build_memory_context("dinner", token_budget=1000)
    assert "Allergic to shellfish" in ctx.text
    assert "episodic index offline" in ctx.errors["experiences"]
    assert memory.stats()["errors"]["retrieval.experiences"] == 1


def test_export_import_roundtrip_across_engines(tmp_path: Path) -> None:
    src = memory_on("inmemory", tmp_path)
    seed_alice(src)
    path = tmp_path / "alice.jsonl"
    count = src.export_jsonl("alice", path)
    assert count == len(path.read_text().splitlines()) > 3
    dst = memory_on("embedded", tmp_path)
    try:
        assert dst.import_jsonl(path, user_id="alice") == count
        a = src.for_user("alice").build_memory_context("dinner deploy orders", token_budget=2000)
        b = dst.for_user("alice").build_memory_context("dinner deploy orders", token_budget=2000)
        assert sorted(i.key for i in a.items) == sorted(i.key for i in b.items)
        assert sorted(r["key"] for r in src.export_user("alice")) == sorted(
            r["key"] for r in dst.export_user("alice")
        )
    finally:
        dst.close()
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"format": "other"}) + "\n")
    with pytest.raises(InvalidInputError, match="nothing was imported"):
        src.import_jsonl(bad, user_id="alice")


def test_forget_user_removes_everything(memory: TieredMemory) -> None:
    seed_alice(memory)
    memory.for_user("alice", agent_id="planner").remember("I live in Lyon.")
    seed_alice_bob = memory.for_user("bob")
    seed_alice_bob.remember("I live in Paris.")
    deleted = memory.forget_user("Alice")
    assert deleted > 0
    assert list(memory.export_user("alice")) == []
    # A full scan of every namespace finds nothing of alice, and bob is untouched.
    for ns in memory.store.list_namespaces(prefix=(), limit=10_000):
        for item in memory.store.search(ns, limit=1000):
            assert "alice" not in item.namespace
            assert "shellfish" not in json.dumps(item.value).lower()
    assert memory.for_user("bob").semantic.get_facts("bob")
    assert "alice" not in memory.users()


def test_durable_writeback_applies_after_flush_and_reopen(tmp_path: Path) -> None:
    mem = memory_on("embedded", tmp_path)
    alice = mem.for_user("alice")
    ep = Episode(task_description="Write the quarterly report", outcome=Outcome.SUCCESS)
    assert alice.queue_episode(ep) is not None
    alice.queue_remember("I work at Acme Corp.")
    alice.queue_tool_use(ToolUsageRecord(tool_name="search", success=True))
    mem.flush()
    assert alice.episodic.get(ep.episode_id) is not None
    assert alice.procedural.get_tool_guidance("search").total_uses == 1
    mem.close()
    again = memory_on("embedded", tmp_path)
    try:
        assert again.for_user("alice").episodic.get(ep.episode_id) is not None
        assert any("Acme" in f.content for f in again.for_user("alice").semantic.get_facts("alice"))
        assert again.stats()["writeback"]["dead_letters"] == 0
    finally:
        again.close()


def consolidation_scenario(
    tmp_path: Path,
) -> tuple[TieredMemory, FakeClock, UserMemory, Episode, Episode]:
    """Alice with an old abandoned episode, a pinned one, a tool failure and a near-duplicate."""
    clock = FakeClock()
    mem = memory_on(
        "inmemory", tmp_path, clock=clock, forgetting=ForgettingPolicy(grace_period_days=30)
    )
    alice = mem.for_user("alice")
    old = Episode(
        task_description="Abandoned idea",
        outcome=Outcome.ABANDONED,
        created_at=clock() - timedelta(days=30),
    )
    pinned = Episode(
        task_description="Pinned abandoned idea",
        outcome=Outcome.ABANDONED,
        created_at=clock() - timedelta(days=30),
        pinned=True,
    )
    work = Episode(
        task_description="Migrate orders client. I'm vegetarian by the way.",
        trajectory=[
            TrajectoryStep(
                thought="t", action="tool_call: orders_v1", observation="Error 410 Gone"
            ),
            TrajectoryStep(thought="t", action="tool_call: orders_v2", observation="200 OK"),
        ],
        outcome=Outcome.SUCCESS,
        created_at=clock(),
    )
    for ep in (old, pinned, work):
        alice.episodic.record(ep)
    alice.semantic.store_fact("alice", "Prefers short answers", confidence=0.6)
    alice.semantic.store_fact("alice", "prefers short answers!", confidence=0.9)
    return mem, clock, alice, old, pinned


def test_consolidation_extracts_learns_merges_forgets_and_resumes(tmp_path: Path) -> None:
    mem, clock, alice, old, pinned = consolidation_scenario(tmp_path)
    seen: list[str] = []
    report = alice.consolidate(progress=lambda phase, done, total: seen.append(phase))
    assert report.ok, report.errors
    assert report.episodes_processed == 3 and report.tool_uses_recorded == 2
    assert alice.procedural.get_tool_guidance("orders_v1").failures == 1
    assert any("vegetarian" in f.content.lower() for f in alice.semantic.get_facts("alice"))
    assert alice.episodic.get(old.episode_id) is None  # forgotten (soft)
    assert alice.episodic.get(pinned.episode_id) is not None  # pinned stays
    assert {"episodes", "forget"} <= set(seen)
    # Running again resumes after the cursor: nothing is processed twice.
    again = alice.consolidate()
    assert again.episodes_processed == 0 and again.resumed_from is not None
    assert alice.procedural.get_tool_guidance("orders_v1").failures == 1
    stats = mem.stats()
    assert stats["consolidation"]["runs"] == 2 and stats["consolidation"]["success_rate"] == 1.0
    assert stats["forgetting"].get("soft_delete", 0) >= 1
    clock.advance(days=31)
    assert alice.consolidate().purged >= 1


async def test_aconsolidate_does_what_consolidate_does_and_saves_access_counts(
    tmp_path: Path,
) -> None:
    mem, clock, alice, old, pinned = consolidation_scenario(tmp_path)
    assert await alice.episodic.aretrieve_similar("orders client", top_k=1)  # counted, unsaved
    assert await alice.semantic.asemantic_search("short answers", top_k=1)
    seen: list[str] = []
    report = await alice.aconsolidate(progress=lambda phase, done, total: seen.append(phase))
    assert report.ok, report.errors
    assert report.episodes_processed == 3 and report.tool_uses_recorded == 2
    assert alice.procedural.get_tool_guidance("orders_v1").failures == 1
    assert any("vegetarian" in f.content.lower() for f in alice.semantic.get_facts("alice"))
    assert alice.episodic.get(old.episode_id) is None
    assert alice.episodic.get(pinned.episode_id) is not None
    assert {"episodes", "forget"} <= set(seen)
    # The access counts of this process were saved by the pass: none is left to save.
    assert await alice.episodic.aflush_access() == 0
    assert await alice.semantic.aflush_access() == 0
    again = await alice.aconsolidate()
    assert again.episodes_processed == 0 and again.resumed_from is not None
    assert alice.procedural.get_tool_guidance("orders_v1").failures == 1
    assert (await mem.astats())["consolidation"]["runs"] == 2
    clock.advance(days=31)
    assert (await alice.aconsolidate()).purged >= 1


def test_close_applies_queued_writes(tmp_path: Path) -> None:
    mem = memory_on("embedded", tmp_path)
    ep = Episode(task_description="Queued right before close", outcome=Outcome.SUCCESS)
    mem.for_user("alice").queue_episode(ep)
    mem.close()  # no flush(): close must flush, and the handlers must still run
    again = memory_on("embedded", tmp_path)
    try:
        assert again.for_user("alice").episodic.get(ep.episode_id) is not None
        assert again.stats()["writeback"]["dead_letters"] == 0
    finally:
        again.close()


def test_forget_matches_by_words_not_by_rank(memory: TieredMemory) -> None:
    alice = memory.for_user("alice")
    alice.remember("I'm allergic to shellfish.")
    alice.remember("I live in Lyon.")
    assert not alice.forget("my favourite colour")  # the top hit is unrelated: keep it
    gone = alice.forget("that I am allergic to shellfish")
    assert [i.text for i in gone.forgotten] == ["Allergic to shellfish"]
    texts = [f.content for f in alice.semantic.get_facts("alice")]
    assert "Allergic to shellfish" not in texts and any("Lyon" in t for t in texts)
    assert alice.trash.restore(alice.scope.namespace("semantic", "facts"), gone.forgotten[0].id)


async def test_aforget_matches_by_words_not_by_rank(memory: TieredMemory) -> None:
    alice = memory.for_user("alice")
    await alice.aremember("I'm allergic to shellfish.")
    await alice.aremember("I live in Lyon.")
    assert not await alice.aforget("my favourite colour")
    gone = await alice.aforget("that I am allergic to shellfish")
    assert [i.text for i in gone.forgotten] == ["Allergic to shellfish"]
    assert gone.forgotten[0].section == "knowledge"
    texts = [f.content for f in await alice.semantic.aget_facts("alice")]
    assert "Allergic to shellfish" not in texts and any("Lyon" in t for t in texts)
    facts = alice.scope.namespace("semantic", "facts")
    assert await alice.trash.arestore(facts, gone.forgotten[0].id)
    assert "Allergic to shellfish" in [f.content for f in alice.semantic.get_facts("alice")]


def test_open_passes_store_options_and_rejects_bad_ones(tmp_path: Path) -> None:
    from langchain_tiered_memory.errors import ConfigurationError

    opened = TieredMemory.open(
        tmp_path / "mem",
        embeddings=HashingEmbeddings(),
        durable_writes=False,
        store_options={"full_scan_points": 5_000},
    )
    try:
        store: Any = opened.store
        assert store._planner.full_scan_points == 5_000
        user = opened.for_user("alice")
        user.semantic.store_fact("alice", "Allergic to shellfish", confidence=0.95)
        assert "shellfish" in user.build_memory_context("dinner with seafood?").text
    finally:
        opened.close()
    with pytest.raises(ConfigurationError, match="retrieval"):
        TieredMemory.open(
            tmp_path / "b", embeddings=HashingEmbeddings(), store_options={"retrieval": "dense"}
        )
    with pytest.raises(ConfigurationError, match="unknown store option full_scan"):
        TieredMemory.open(
            tmp_path / "c", embeddings=HashingEmbeddings(), store_options={"full_scan": 1}
        )
    assert not (tmp_path / "b").exists() and not (tmp_path / "c").exists()  # nothing created
