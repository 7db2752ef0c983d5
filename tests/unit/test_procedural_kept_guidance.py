"""Tool guidance is folded once per change of procedural memory, never served stale.

On a store with namespace versions (the embedded ``QdrantMemoryStore``) the
procedural tier keeps the folded tool guidance and reuses it while nothing under
the scope's procedural namespaces changed: the context assembler asks for it on
every call. Every way a tool use can arrive must show up in the next answer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import BaseStore, Result
from test_episodic_support import open_qdrant

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.testing.fakes import HashingEmbeddings
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.tiers.procedural.memory import ProceduralMemory
from langchain_tiered_memory.tiers.procedural.models import ToolUsageRecord


def use(tool: str, ok: bool, err: str = "") -> ToolUsageRecord:
    return ToolUsageRecord(tool_name=tool, success=ok, execution_time_ms=5.0, error_message=err)


def tally(memory: ProceduralMemory) -> dict[str, tuple[int, int]]:
    return {g.tool_name: (g.successes, g.failures) for g in memory.get_all_tool_guidance()}


class CountingStore(BaseStore):
    """Counts the batches that reach ``inner``; keeps its namespace versions visible."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.batches = 0

    def namespace_version(self, prefix: tuple[str, ...]) -> Any:
        return self.inner.namespace_version(prefix)

    def batch(self, ops: Any) -> list[Result]:
        self.batches += 1
        return self.inner.batch(ops)  # type: ignore[no-any-return]

    async def abatch(self, ops: Any) -> list[Result]:
        self.batches += 1
        return await self.inner.abatch(ops)  # type: ignore[no-any-return]


@pytest.fixture
def qdrant(tmp_path: Path) -> Any:
    store = open_qdrant(tmp_path / "store")
    yield store
    store.close()


def test_guidance_is_read_once_until_procedural_memory_changes(qdrant: Any) -> None:
    store = CountingStore(qdrant)
    memory = ProceduralMemory(store, MemoryScope("alice"))
    memory.record_tool_use(use("deploy", False, "503 Service Unavailable"))
    assert tally(memory) == {"deploy": (0, 1)}
    reads = store.batches
    assert tally(memory) == {"deploy": (0, 1)}
    assert store.batches == reads  # kept: no store call at all
    memory.record_tool_use(use("deploy", True))
    assert tally(memory) == {"deploy": (1, 1)}
    memory.set_preference("editor", "vim")  # any procedural write refreshes it too
    reads = store.batches
    assert tally(memory) == {"deploy": (1, 1)}
    assert store.batches > reads


def test_writes_through_another_object_or_user_are_seen(qdrant: Any) -> None:
    alice = ProceduralMemory(qdrant, MemoryScope("alice"))
    alice_again = ProceduralMemory(qdrant, MemoryScope("alice"))
    bob = ProceduralMemory(qdrant, MemoryScope("bob"))
    alice.record_tool_use(use("search", True))
    assert tally(alice) == {"search": (1, 0)}
    alice_again.record_tool_use(use("search", False, "timeout"))
    bob.record_tool_use(use("search", False, "timeout"))
    assert tally(alice) == {"search": (1, 1)}
    assert tally(bob) == {"search": (0, 1)}


def test_kept_guidance_cannot_be_changed_by_a_caller(qdrant: Any) -> None:
    memory = ProceduralMemory(qdrant, MemoryScope("carol"))
    memory.record_tool_use(use("orders_v1", False, "410 Gone: use orders_v2"))
    first = memory.get_all_tool_guidance()
    first[0].common_errors.clear()
    first.clear()
    (again,) = memory.get_all_tool_guidance()
    assert again.common_errors and "410" in again.common_errors[0].last_message


async def test_the_async_twin_keeps_and_refreshes_alike(qdrant: Any) -> None:
    store = CountingStore(qdrant)
    memory = ProceduralMemory(store, MemoryScope("dana"))
    await memory.arecord_tool_use(use("lint", True))
    assert [g.successes for g in await memory.aget_all_tool_guidance()] == [1]
    reads = store.batches
    assert [g.successes for g in await memory.aget_all_tool_guidance()] == [1]
    assert store.batches == reads
    await memory.arecord_tool_use(use("lint", True))
    assert [g.successes for g in await memory.aget_all_tool_guidance()] == [2]


def test_durable_writes_reach_the_next_context(tmp_path: Path) -> None:
    memory = TieredMemory.open(tmp_path / "memory", embeddings=HashingEmbeddings())
    try:
        user = memory.for_user("erin")
        user.procedural.record_tool_use(use("orders_v1", True))
        assert tally(user.procedural) == {"orders_v1": (1, 0)}  # kept from here on
        receipt = user.queue_tool_use(use("orders_v1", False, "410 Gone: use orders_v2"))
        assert receipt is not None  # queued in the durable outbox, not written yet
        memory.flush()  # the writer's thread applies it
        assert tally(user.procedural) == {"orders_v1": (1, 1)}
        ctx = user.build_memory_context("call the orders API", token_budget=500)
        assert "orders_v2" in ctx.text
    finally:
        memory.close()


def test_stores_without_versions_fold_on_every_call() -> None:
    from langgraph.store.memory import InMemoryStore

    store = CountingStore(InMemoryStore())
    store.namespace_version = lambda prefix: None  # type: ignore[method-assign]
    memory = ProceduralMemory(store, MemoryScope("frank"))
    memory.record_tool_use(use("grep", True))
    tally(memory)
    reads = store.batches
    assert tally(memory) == {"grep": (1, 0)}
    assert store.batches > reads
