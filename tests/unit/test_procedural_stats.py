"""Tool statistics and strategy counts: exact under every kind of concurrent writer, bounded."""

from __future__ import annotations

import asyncio
import json
import string
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.testing.fakes import FakeClock, HashingEmbeddings
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.tiers.episodic.models import Episode, Outcome, TrajectoryStep
from langchain_tiered_memory.tiers.procedural.memory import ProceduralMemory
from langchain_tiered_memory.tiers.procedural.models import ToolUsageRecord
from langchain_tiered_memory.tiers.procedural.stats import MAX_KINDS, RECENT_IDS, ToolStats

START = FakeClock()()


def use(writer: str, i: int, tool: str = "search") -> ToolUsageRecord:
    ok = i % 3 != 0
    return ToolUsageRecord(
        tool_name=tool,
        success=ok,
        execution_time_ms=[1.5, 10.0, 33.3, 0.1][i % 4],
        error_message="" if ok else ["Timeout after 30 ms", "410 Gone", ""][i % 3],
        hint="" if ok else "use v2",
        parameters={"limit": 50, "q": f"q{i % 3}"},
        timestamp=START + timedelta(seconds=i % 7),  # ties on purpose
        record_id=f"{writer}-{i}",
    )


def folded(tool: str, records: list[ToolUsageRecord]) -> object:
    stats = ToolStats()
    for record in records:
        stats.add(record)
    return stats.guidance(tool)


def test_threads_tasks_the_durable_writer_and_two_facades_lose_no_count(tmp_path: Path) -> None:
    first = TieredMemory.open(tmp_path / "mem", embeddings=HashingEmbeddings())
    second = TieredMemory(first.store)  # another facade over the same store object
    threads = {w: [use(f"thread{w}", i) for i in range(25)] for w in range(8)}
    tasks = [use("task", i) for i in range(40)]
    queued = [use("queued", i) for i in range(40)]
    try:
        a, b = first.for_user("ann"), second.for_user("ann")
        a.procedural.register_strategy("backoff", "Retry with backoff")

        def thread(w: int) -> None:
            for i, record in enumerate(threads[w]):
                a.procedural.record_tool_use(record)
                a.procedural.update_strategy_outcome("backoff", i % 2 == 0)

        async def task(record: ToolUsageRecord) -> None:
            await b.procedural.arecord_tool_use(record)
            await b.procedural.aupdate_strategy_outcome("backoff", True)

        async def all_tasks() -> None:
            await asyncio.gather(*(task(r) for r in tasks))

        with ThreadPoolExecutor(max_workers=8) as pool:
            futures = [pool.submit(thread, w) for w in threads]
            for record in queued:  # applied by the durable writer's thread
                a.queue_tool_use(record)
            asyncio.run(all_tasks())
            for future in futures:
                future.result()
        first.flush()
        everything = [r for rs in threads.values() for r in rs] + tasks + queued
        expected = folded("search", everything)
        assert a.procedural.get_tool_guidance("search") == expected
        assert b.procedural.get_all_tool_guidance() == [expected]
        strategy = b.procedural.get_strategy("backoff")
        assert strategy is not None
        assert (strategy.success_count, strategy.failure_count) == (8 * 13 + 40, 8 * 12)
    finally:
        first.close()
    reopened = TieredMemory.open(tmp_path / "mem", embeddings=HashingEmbeddings())
    try:
        assert reopened.for_user("ann").procedural.get_tool_guidance("search") == expected
    finally:
        reopened.close()


async def test_a_record_id_counts_once_sync_and_async() -> None:
    memory = ProceduralMemory(InMemoryStore(), MemoryScope("dora"))
    record = use("replayed", 1)
    memory.record_tool_use(record)
    memory.record_tool_use(record)  # a queued write replayed after a crash
    await memory.arecord_tool_use(record)
    for i in range(RECENT_IDS - 1):
        await memory.arecord_tool_use(use("later", i))
    memory.record_tool_use(record)  # still among the tool's latest uses
    g = await memory.aget_tool_guidance("search")
    assert g.total_uses == RECENT_IDS


def test_consolidation_does_not_count_uses_the_agent_already_counted() -> None:
    memory = TieredMemory(InMemoryStore())
    user = memory.for_user("eve")
    steps = [TrajectoryStep(action="tool_call: search", observation="ok")]
    counted = Episode(
        task_description="find the report",
        trajectory=steps,
        outcome=Outcome.SUCCESS,
        context={"tool_uses_recorded": True},
    )
    fresh = Episode(task_description="find it again", trajectory=steps, outcome=Outcome.SUCCESS)
    user.procedural.record_tool_use(ToolUsageRecord(tool_name="search", success=True))
    for i in range(2 * RECENT_IDS):  # many uses later, the agent's record ids are long gone
        user.procedural.record_tool_use(use("other", i))
    user.episodic.record(counted)
    user.episodic.record(fresh)
    report = user.consolidate()
    assert report.ok, report.errors
    assert report.tool_uses_recorded == 1  # the fresh episode's step only
    assert user.procedural.get_tool_guidance("search").total_uses == 2 * RECENT_IDS + 2


def test_a_tool_record_stays_small_and_keeps_what_most_calls_share() -> None:
    store = InMemoryStore()
    memory = ProceduralMemory(store, MemoryScope("finn"))
    for i in range(600):
        if i % 3 == 0:
            kind = "".join(string.ascii_lowercase[int(d)] for d in f"{i:03d}")  # 200 kinds
            record = ToolUsageRecord(
                tool_name="api", success=False, error_message=f"unknown field {kind} " + "x" * 5000
            )
        elif i % 3 == 1:
            record = ToolUsageRecord(tool_name="api", success=False, error_message="quota exceeded")
        else:
            record = ToolUsageRecord(
                tool_name="api", success=True, parameters={"limit": 50, "q": f"query {i}"}
            )
        memory.record_tool_use(record)
    g = memory.get_tool_guidance("api")
    assert (g.total_uses, g.successes, g.failures) == (600, 200, 400)
    assert (g.common_errors[0].signature, g.common_errors[0].count) == ("quota exceeded", 200)
    assert g.successful_patterns == ["limit=50 (always)"]
    (item,) = store.search(memory.tool_stats_namespace)
    stats = ToolStats.from_value(item.value)
    assert len(stats.errors) <= MAX_KINDS and len(stats.params["q"][3]) <= MAX_KINDS
    assert len(json.dumps(item.value)) < 100_000


def test_statistics_of_the_earlier_layout_are_moved_once() -> None:
    """Uses and outcomes stored one item per event, partly folded into segments."""
    store = InMemoryStore()
    scope = MemoryScope("gus")

    def ns(name: str) -> tuple[str, ...]:
        return scope.namespace("procedural", name)

    t0 = START.timestamp()
    use_r1 = {"record_id": "r1", "tool_name": "search", "success": True, "ts": t0 + 1,
              "execution_time_ms": 10.0, "error_message": "", "hint": "",
              "parameters_json": '{"limit": 50}'}  # fmt: skip
    use_r3 = {"record_id": "r3", "tool_name": "search", "success": False, "ts": t0 + 3,
              "execution_time_ms": 30.0, "error_message": "410 Gone", "hint": "use v2",
              "parameters_json": "{}"}  # fmt: skip
    events = [[t0 + 1, 1, 10.0, "", "", "", {"limit": "50"}], [t0 + 2, 1, 20.0, "", "", "", {}]]
    old = {
        ns("tool_uses"): {"r1": use_r1, "r3": use_r3},  # r1 is in the segment too
        ns("tool_uses_folded"): {"s1": {"tool_name": "search", "count": 2}},
        ns("tool_uses_folded_events"): {
            "s1": {"tool_name": "search", "ids": '["r1", "r2"]', "events": json.dumps(events)}
        },
        ns("strategy_outcomes"): {"o1": {"strategy_key": "backoff", "success": True, "ts": t0}},
        ns("strategy_outcomes_folded"): {"s2": {"strategy_key": "backoff", "count": 2}},
        ns("strategy_outcomes_folded_events"): {
            "s2": {"strategy_key": "backoff", "ids": '["o2", "o3"]', "events": "[[1, 1], [2, 0]]"}
        },
    }

    def write_old() -> None:
        for namespace, items in old.items():
            for key, value in items.items():
                store.put(namespace, key, value, index=False)

    def check(memory: ProceduralMemory) -> None:
        g = memory.get_tool_guidance("search")
        assert (g.total_uses, g.successes, g.failures) == (3, 2, 1)
        assert g.avg_execution_time_ms == 20.0 and g.successful_patterns == []
        assert (g.last_error, g.last_hint, g.last_success) == ("410 Gone", "use v2", False)
        strategy = memory.get_strategy("backoff")
        assert strategy is not None
        assert (strategy.success_count, strategy.failure_count) == (2, 1)
        assert all(store.search(namespace) == [] for namespace in old)

    write_old()
    memory = ProceduralMemory(store, scope)
    memory.register_strategy("Backoff", "Retry with backoff")
    check(memory)
    write_old()  # as if a move stopped after writing the records, before its deletes
    check(ProceduralMemory(store, scope))
    memory.record_tool_use(use("new", 1))
    assert memory.get_tool_guidance("search").total_uses == 4
