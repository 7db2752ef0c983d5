"""The facade's async twins: ``astats``, ``ausers``, ``aexport_user``, ``aexport_jsonl``.

Each returns what its sync twin returns on the same memory, on LangGraph's
``InMemoryStore`` and on the default embedded store (which has a write-back
outbox, so ``stats()["writeback"]`` is filled in).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory import (
    Episode,
    Outcome,
    TieredMemory,
    ToolUsageRecord,
)
from langchain_tiered_memory.export_import import RestoreOp, write_records
from langchain_tiered_memory.testing.fakes import FakeClock, HashingEmbeddings
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.tiers.episodic import EpisodicConfig

QUIET = EpisodicConfig()


def memory_on(kind: str, tmp_path: Path, clock: FakeClock | None = None) -> TieredMemory:
    if kind == "embedded":
        return TieredMemory.open(
            tmp_path / "mem", embeddings=HashingEmbeddings(), clock=clock, episodic=QUIET
        )
    store = InMemoryStore(index={"dims": 384, "embed": HashingEmbeddings(), "fields": ["text"]})
    return TieredMemory(store, clock=clock, episodic=QUIET)


@pytest.fixture(params=["inmemory", "embedded"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TieredMemory]:
    mem = memory_on(request.param, tmp_path, FakeClock(datetime.now(timezone.utc)))
    yield mem
    mem.close()


def seed(memory: TieredMemory) -> None:
    """Alice (two agents) and bob with facts, episodes, tool use and one episode retrieval."""
    alice = memory.for_user("alice")
    alice.semantic.store_fact("alice", "Allergic to shellfish", confidence=0.95)
    alice.episodic.record(
        Episode(task_description="Deploy the payments service", outcome=Outcome.FAILURE)
    )
    alice.episodic.record(Episode(task_description="Book a flight to Rome", outcome="success"))
    alice.procedural.record_tool_use(ToolUsageRecord(tool_name="search", success=True))
    memory.for_user("alice", agent_id="planner").remember("I live in Lyon.")
    memory.for_user("bob").remember("I live in Paris.")
    assert alice.episodic.retrieve_similar("flight to Rome", top_k=1)  # buffered access


async def test_astats_equals_stats(memory: TieredMemory) -> None:
    seed(memory)
    memory.for_user("bob").forget("Paris")  # an audit record: a forgetting count
    expected = memory.stats()
    assert expected["users"]["alice"]["total"] > 0 and expected["episodes_ever_retrieved"] > 0
    assert expected["forgetting"]
    assert await memory.astats() == expected


async def test_astats_counts_accesses_still_buffered(tmp_path: Path) -> None:
    mem = memory_on("inmemory", tmp_path)
    alice = mem.for_user("alice")
    alice.episodic.record(Episode(task_description="Book a flight to Rome", outcome="success"))
    alice.episodic.record(Episode(task_description="Cook a risotto", outcome="success"))
    assert (await mem.astats())["episodes_ever_retrieved"] == 0.0
    await alice.episodic.aretrieve_similar("flight to Rome", top_k=1)  # buffered, not written
    assert (await mem.astats())["episodes_ever_retrieved"] == 0.5


async def test_astats_reports_writeback_of_the_durable_writer(tmp_path: Path) -> None:
    mem = memory_on("embedded", tmp_path)
    try:
        mem.for_user("alice").queue_remember("I work at Acme Corp.")
        await mem.aflush()
        writeback = (await mem.astats())["writeback"]
        assert writeback is not None and writeback == mem.stats()["writeback"]
        assert writeback["dead_letters"] == 0
    finally:
        await mem.aclose()


async def test_ausers_equals_users_and_skips_forgotten_users(memory: TieredMemory) -> None:
    seed(memory)
    memory.for_user("carol").remember("I live in Oslo.")
    await memory.aforget_user("carol")
    assert memory.users() == ["alice", "bob"]
    assert await memory.ausers() == ["alice", "bob"]


async def test_aexport_user_yields_what_export_user_yields(memory: TieredMemory) -> None:
    seed(memory)
    expected = list(memory.export_user("alice"))
    got = [record async for record in memory.aexport_user("alice")]
    assert got == expected
    assert {tuple(r["namespace"][:2]) for r in got} == {MemoryScope("alice").user_prefix}
    assert any("shellfish" in json.dumps(r["value"]) for r in got)
    assert any(r["namespace"][2] != "_" for r in got)  # the planner agent's records too
    assert [r async for r in memory.aexport_user("nobody")] == []


async def test_aexport_jsonl_writes_the_same_file(memory: TieredMemory, tmp_path: Path) -> None:
    seed(memory)
    sync_path, async_path = tmp_path / "sync.jsonl", tmp_path / "async.jsonl"
    count = memory.export_jsonl("alice", sync_path)
    assert count > 0
    assert await memory.aexport_jsonl("alice", async_path) == count
    assert async_path.read_text(encoding="utf-8") == sync_path.read_text(encoding="utf-8")
    # The file imports back (async) into an empty memory as the same records.
    other = memory_on("inmemory", tmp_path)
    assert await other.aimport_jsonl(async_path, user_id="alice") == count
    assert list(other.export_user("alice")) == list(memory.export_user("alice"))


@pytest.mark.parametrize("use_async", [False, True])
async def test_import_into_an_indexed_inmemory_store_with_a_text_twice(
    tmp_path: Path, use_async: bool
) -> None:
    # Alice's entity "alice (user)" exists under two agents: the same embedded text twice.
    src = memory_on("inmemory", tmp_path)
    src.for_user("alice").remember("I live in Lyon.")
    src.for_user("alice", agent_id="planner").remember("I live in Lyon.")
    path = tmp_path / "alice.jsonl"
    count = await src.aexport_jsonl("alice", path)
    dst = memory_on("inmemory", tmp_path)
    if use_async:
        imported = await dst.aimport_jsonl(path, user_id="alice")
    else:
        imported = dst.import_jsonl(path, user_id="alice")
    assert imported == count
    assert list(dst.export_user("alice")) == list(src.export_user("alice"))
    hits = dst.for_user("alice", agent_id="planner").semantic.semantic_search("Lyon", top_k=3)
    assert any("Lyon" in h.text and h.score is not None for h in hits)  # has its vector


def _notes(count: int) -> list[RestoreOp]:
    ns = MemoryScope("alice").namespace("notes")
    at = datetime(2026, 1, 1, tzinfo=timezone.utc)
    values: list[dict[str, Any]] = [{"text": f"note {i}"} for i in range(count)]
    return [RestoreOp(ns, f"n{i:05d}", v, at, at, index=False) for i, v in enumerate(values)]


async def test_aexport_jsonl_writes_every_record_of_a_large_export(tmp_path: Path) -> None:
    # More records than one page of the scan and one chunk of file writes.
    mem = TieredMemory(InMemoryStore())
    write_records(mem.store, _notes(2_345))
    path = tmp_path / "big.jsonl"
    assert await mem.aexport_jsonl("alice", path) == 2_345
    lines = path.read_text(encoding="utf-8").splitlines()
    assert sorted(json.loads(line)["key"] for line in lines) == [f"n{i:05d}" for i in range(2_345)]
    sync_path = tmp_path / "sync.jsonl"
    assert mem.export_jsonl("alice", sync_path) == 2_345
    assert path.read_bytes() == sync_path.read_bytes()


async def test_aexport_jsonl_of_an_unknown_user_writes_an_empty_file(tmp_path: Path) -> None:
    mem = TieredMemory(InMemoryStore())
    path = tmp_path / "empty.jsonl"
    path.write_text("stale content\n", encoding="utf-8")
    assert await mem.aexport_jsonl("nobody", path) == 0
    assert path.read_text(encoding="utf-8") == ""


async def test_both_twins_measure_growth_with_the_memory_clock(tmp_path: Path) -> None:
    clock = FakeClock(datetime.now(timezone.utc))
    mem = memory_on("inmemory", tmp_path, clock)
    mem.for_user("alice").remember("I live in Lyon.")
    clock.advance(days=2)
    for stats in (mem.stats(), await mem.astats()):
        assert stats["total_items"] > 0
        assert stats["growth"] == {"last_24h": 0, "last_7d": stats["total_items"]}
    clock.advance(days=6)
    assert (await mem.astats())["growth"] == {"last_24h": 0, "last_7d": 0}
