# ruff: noqa: F811  (pytest fixtures imported from test_episodic_support are redefined as arguments)
"""Compaction of procedural memory: same statistics, fewer items, nothing lost under races."""

from __future__ import annotations

import functools
import random
import threading
from typing import Any

import pytest
from langgraph.store.base import BaseStore, PutOp, Result
from langgraph.store.memory import InMemoryStore
from test_episodic_support import (  # noqa: F401 (fixtures)
    Progress,
    RecordingStore,
    qdrant_store,
    race_store,
    run_with_helpers,
    scope,
    store,
    thread_safe,
)

from langchain_tiered_memory.errors import BackendError, ConfigurationError
from langchain_tiered_memory.testing.fakes import FakeClock
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.tiers.procedural.memory import ProceduralConfig, ProceduralMemory
from langchain_tiered_memory.tiers.procedural.models import ToolUsageRecord
from langchain_tiered_memory.tiers.procedural.stats import aggregate_tool_events, tool_event_value

ON_DEMAND = ProceduralConfig(compact_after=None)


def varied_uses(n: int, tool: str = "search", seed: int = 3) -> list[ToolUsageRecord]:
    """Uses with successes, several error kinds, hints and parameter patterns."""
    rng = random.Random(seed)
    start = FakeClock()()
    out = []
    for i in range(n):
        ok = rng.random() < 0.6
        out.append(
            ToolUsageRecord(
                tool_name=tool,
                success=ok,
                execution_time_ms=rng.choice([1.5, 10.0, 33.3, 0.1]),
                error_message="" if ok else rng.choice(["Timeout after 30 ms", "410 Gone", ""]),
                hint="" if ok else rng.choice(["", "use v2"]),
                parameters={"limit": 50, "q": f"q{i % 3}"} if ok else {"limit": i},
                timestamp=start.replace(minute=rng.randrange(60)),  # ties on purpose
            )
        )
    return out


def expected(tool: str, uses: list[ToolUsageRecord]) -> Any:
    return aggregate_tool_events(tool, [tool_event_value(u) for u in uses if u.tool_name == tool])


def raw_count(store: BaseStore, memory: ProceduralMemory) -> int:
    return len(store.search(memory.tools_namespace, limit=10_000))


def test_compaction_keeps_guidance_and_counts_and_deletes_the_events(
    store: BaseStore, scope: MemoryScope
) -> None:
    memory = ProceduralMemory(store, scope, config=ON_DEMAND)
    uses = varied_uses(60) + varied_uses(9, tool="fetch", seed=4)
    for u in uses:
        memory.record_tool_use(u)
    memory.register_strategy("s", "a strategy")
    for i in range(7):
        memory.update_strategy_outcome("s", i % 3 != 0)
    before = (memory.get_all_tool_guidance(), memory.get_strategy("s"))
    assert before[0] == [expected("fetch", uses), expected("search", uses)]
    result = memory.compact()
    assert (result.events_folded, result.segments_written) == (69 + 7, 3)
    assert raw_count(store, memory) == 0
    assert (memory.get_all_tool_guidance(), memory.get_strategy("s")) == before
    more = varied_uses(5, seed=9)
    for u in more:
        memory.record_tool_use(u)
    assert memory.get_tool_guidance("search") == expected("search", uses + more)
    assert memory.compact().events_folded == 5  # folded into the one small segment
    assert memory.get_tool_guidance("search") == expected("search", uses + more)
    s = memory.get_strategy("s")
    assert s is not None and (s.success_count, s.failure_count) == (4, 3)


def test_a_read_over_the_threshold_compacts_by_itself(scope: MemoryScope) -> None:
    spy = RecordingStore(InMemoryStore())
    memory = ProceduralMemory(spy, scope, config=ProceduralConfig(compact_after=10))
    uses = varied_uses(40)
    for u in uses[:10]:
        memory.record_tool_use(u)
    memory.get_tool_guidance("search")
    assert raw_count(spy.inner, memory) == 10  # not over the threshold yet
    for u in uses[10:]:
        memory.record_tool_use(u)
    assert memory.get_tool_guidance("search") == expected("search", uses)
    assert raw_count(spy.inner, memory) == 0
    spy.items_returned = 0
    assert memory.get_tool_guidance("search") == expected("search", uses)
    assert spy.items_returned == 1  # one segment instead of 40 events


def test_an_injection_stays_the_same_across_compaction(
    store: BaseStore, scope: MemoryScope
) -> None:
    memory = ProceduralMemory(store, scope, config=ON_DEMAND)
    for u in varied_uses(30) + varied_uses(6, tool="flaky", seed=5):
        memory.record_tool_use(u)
    memory.register_strategy("backoff", "Retry with backoff", "rate limited")
    for _ in range(5):
        memory.update_strategy_outcome("backoff", True)
    text = memory.get_context_injection("rate limited")
    assert "backoff" in text and "Tool usage warnings" in text
    memory.compact()
    assert memory.get_context_injection("rate limited") == text


def test_a_record_id_written_again_after_compaction_counts_once(
    store: BaseStore, scope: MemoryScope
) -> None:
    memory = ProceduralMemory(store, scope, config=ON_DEMAND)
    use = ToolUsageRecord(tool_name="t", success=True, record_id="episode-1:0")
    memory.record_tool_use(use)
    memory.compact()
    memory.record_tool_use(use)  # a consolidation pass re-run after a crash
    assert memory.get_tool_guidance("t").total_uses == 1
    memory.compact()
    assert memory.get_tool_guidance("t").total_uses == 1 and raw_count(store, memory) == 0


class FailingDeletes(BaseStore):
    """Fails every batch that deletes (a crash after the segments were written)."""

    def __init__(self, inner: BaseStore) -> None:
        self.inner = inner

    def batch(self, ops: Any) -> list[Result]:
        ops = list(ops)
        if any(isinstance(op, PutOp) and op.value is None for op in ops):
            raise BackendError("disk full")
        return self.inner.batch(ops)

    async def abatch(self, ops: Any) -> list[Result]:
        return self.batch(ops)


async def test_a_compaction_that_fails_half_way_loses_and_repeats_nothing(
    scope: MemoryScope, caplog: pytest.LogCaptureFixture
) -> None:
    inner = InMemoryStore()
    uses = varied_uses(25)
    healthy = ProceduralMemory(inner, scope, config=ON_DEMAND)
    for u in uses:
        healthy.record_tool_use(u)
    config = ProceduralConfig(compact_after=3)
    broken = ProceduralMemory(FailingDeletes(inner), scope, config=config)
    with pytest.raises(BackendError):
        await broken.acompact()
    assert raw_count(inner, healthy) == 25  # the segment is there, the events too
    assert healthy.get_tool_guidance("search") == expected("search", uses)
    # An automatic compaction that fails is logged; the read still answers exactly.
    assert await broken.aget_tool_guidance("search") == expected("search", uses)
    assert "compacting 1 group(s)" in caplog.text
    await healthy.acompact()
    assert raw_count(inner, healthy) == 0
    assert await healthy.aget_tool_guidance("search") == expected("search", uses)


def test_compact_after_is_checked() -> None:
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ConfigurationError, match="compact_after"):
            ProceduralConfig(compact_after=bad)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- races


def test_parallel_writers_and_compactions_give_exact_statistics(
    race_store: BaseStore, scope: MemoryScope
) -> None:
    """Writers, explicit compactions and reads that compact, all at once, on one store.

    Every read in between must count at least the uses written before it started
    and at most those started before it ended; at the end, every statistic is
    exactly what folding every use from scratch gives.
    """
    config = ProceduralConfig(compact_after=2)
    ProceduralMemory(race_store, scope).register_strategy("s", "a strategy")
    writers, per_writer = 4, 30
    uses = {w: varied_uses(per_writer, tool="tool0", seed=w) for w in range(writers)}
    done = threading.Event()
    progress = Progress()

    def write(w: int) -> None:
        memory = ProceduralMemory(race_store, scope, config=config)  # one per worker
        for i, u in enumerate(uses[w]):
            with progress.op():
                memory.record_tool_use(u)
            memory.update_strategy_outcome("s", (w + i) % 2 == 0)

    def compact() -> None:
        memory = ProceduralMemory(race_store, scope, config=config)
        while not done.is_set():
            memory.compact()

    def read() -> None:
        memory = ProceduralMemory(race_store, scope, config=config)
        while not done.is_set():
            low = progress.completed
            progress.check(low, memory.get_tool_guidance("tool0").total_uses)
            memory.get_strategy("s")

    writes = [functools.partial(write, w) for w in range(writers)]
    errors = run_with_helpers(writes, [compact, compact, read, read], done)
    assert errors == []
    memory = ProceduralMemory(race_store, scope, config=ON_DEMAND)
    everything = [u for us in uses.values() for u in us]
    assert memory.get_tool_guidance("tool0") == expected("tool0", everything)
    s = memory.get_strategy("s")
    assert s is not None and (s.success_count, s.failure_count) == (60, 60)
    memory.compact()
    assert memory.get_tool_guidance("tool0") == expected("tool0", everything)
    assert raw_count(race_store, memory) == 0


class Interleaved(BaseStore):
    """Records batches; lets a test run a second compaction between two batches of a first."""

    def __init__(self, inner: BaseStore) -> None:
        self.inner = inner
        self.before_batch: list[Any] = []

    def batch(self, ops: Any) -> list[Result]:
        if self.before_batch:
            self.before_batch.pop(0)()
        return self.inner.batch(list(ops))

    async def abatch(self, ops: Any) -> list[Result]:
        return self.batch(ops)


def test_two_compactions_racing_with_a_writer(scope: MemoryScope) -> None:
    inner = InMemoryStore()
    racer = Interleaved(inner)
    memory = ProceduralMemory(racer, scope, config=ON_DEMAND)
    other = ProceduralMemory(inner, scope, config=ON_DEMAND)
    uses = varied_uses(12)
    for u in uses[:8]:
        other.record_tool_use(u)
    late = uses[8:]

    def interfere() -> None:  # between the first compaction's reads and its writes
        for u in late:
            other.record_tool_use(u)
        other.compact()

    racer.before_batch = [lambda: None, lambda: None, interfere]
    memory.compact()
    assert other.get_tool_guidance("search") == expected("search", uses)
    other.compact()
    assert other.get_tool_guidance("search") == expected("search", uses)
    assert raw_count(inner, other) == 0


def test_read_before_a_compaction_and_after_it_agree(
    qdrant_store: BaseStore, scope: MemoryScope
) -> None:
    memory = ProceduralMemory(qdrant_store, scope, config=ON_DEMAND)
    uses = varied_uses(50)
    for u in uses:
        memory.record_tool_use(u)
    spy = RecordingStore(qdrant_store)
    reader = ProceduralMemory(spy, scope, config=ON_DEMAND)
    assert reader.get_tool_guidance("search") == expected("search", uses)
    assert spy.items_returned == 50
    memory.compact()
    spy.items_returned = 0
    assert reader.get_tool_guidance("search") == expected("search", uses)
    assert spy.items_returned == 1
