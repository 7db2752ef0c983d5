"""One current value per slot, whoever writes it and however the writes interleave.

A single-valued slot (``lives_in``) keeps exactly one current fact while
threads, asyncio tasks, the durable writer's thread and several ``TieredMemory``
facades over one store write it at once; every other value is in
``fact_history`` as superseded. The writers start together behind a barrier;
the outcome does not depend on how they are scheduled.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory import ConfigurationError, TieredMemory
from langchain_tiered_memory.stores.serialized import unwrap
from langchain_tiered_memory.testing.fakes import HashingEmbeddings
from langchain_tiered_memory.tiers.semantic.flows import FlowContext
from langchain_tiered_memory.tiers.semantic.models import SemanticConfig
from langchain_tiered_memory.tiers.common.slot_lock import slot_lock
from langchain_tiered_memory.types import utcnow

THREADS, PER_THREAD, TASKS = 8, 5, 40


def slot_counts(memory: TieredMemory, user: str, entity: str = "alice") -> tuple[int, int]:
    """(current facts, facts in history) of ``entity``'s ``lives_in`` slot."""
    semantic = memory.for_user(user).semantic
    current = [f for f in semantic.get_facts(entity) if f.attribute == "lives_in"]
    history = semantic.fact_history(entity, "lives_in")
    ids = {f.fact_id for f in current}
    assert all(f.status == "superseded" for f in history if f.fact_id not in ids)
    return len(current), len(history)


def write_city(memory: TieredMemory, user: str, city: str, entity: str = "alice") -> None:
    memory.for_user(user).semantic.store_fact(
        entity, f"Lives in {city}", attribute="lives_in", value=city
    )


def run_threads(target, n: int) -> None:  # type: ignore[no-untyped-def]
    barrier = threading.Barrier(n)
    errors: list[BaseException] = []

    def run(k: int) -> None:
        try:
            barrier.wait()
            target(k)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_eight_threads_leave_one_current_value(memory: TieredMemory) -> None:
    def writer(k: int) -> None:
        for i in range(PER_THREAD):
            write_city(memory, "u", f"city{k}x{i}")

    run_threads(writer, THREADS)
    assert slot_counts(memory, "u") == (1, THREADS * PER_THREAD)


async def test_forty_concurrent_async_writes_leave_one_current_value(
    memory: TieredMemory,
) -> None:
    semantic = memory.for_user("u").semantic
    await asyncio.gather(
        *(
            semantic.astore_fact("alice", f"Lives in c{i}", attribute="lives_in", value=f"c{i}")
            for i in range(TASKS)
        )
    )
    assert slot_counts(memory, "u") == (1, TASKS)


async def test_threads_tasks_writer_and_two_facades_at_once(tmp_path: Path) -> None:
    """Every kind of writer on one slot at once: the durable writer's thread
    (``queue_remember``), threads and tasks, through two facades over one store."""
    first = TieredMemory.open(tmp_path / "mem", embeddings=HashingEmbeddings(size=64))
    second = TieredMemory(first.store)
    try:
        receipts = [first.for_user("u").queue_remember(f"I live in Queued{i}") for i in range(8)]
        assert all(r is not None for r in receipts)

        def threaded(k: int) -> None:
            for i in range(3):
                write_city(first if k % 2 else second, "u", f"Thread{k}x{i}", entity="u")

        async def task(i: int) -> None:
            facade = first if i % 2 else second
            await facade.for_user("u").semantic.astore_fact(
                "u", f"Lives in Task{i}", attribute="lives_in", value=f"Task{i}"
            )

        def write_alice(k: int) -> None:  # the same slot of another entity, through both
            write_city(first if k % 2 else second, "u", f"Other{k}")

        threads = asyncio.to_thread(run_threads, threaded, 4)
        others = asyncio.to_thread(run_threads, write_alice, 4)
        await asyncio.gather(threads, others, *(task(i) for i in range(12)))
        first.flush()
        assert slot_counts(first, "u", entity="u") == (1, 8 + 4 * 3 + 12)
        assert slot_counts(second, "u") == (1, 4)
        assert first.writer is not None and first.writer.stats().dead_letters == 0
    finally:
        first.close()


def test_a_slot_left_with_several_current_values_is_repaired_by_its_next_write() -> None:
    """Writers of several processes on one Qdrant server are not serialised with each
    other; the next write to the slot keeps the newest value and ends the others."""
    memory = TieredMemory(InMemoryStore())
    user = memory.for_user("u")
    ctx = FlowContext(user.scope, SemanticConfig(), utcnow())
    write_city(memory, "u", "Paris")
    (paris,) = user.semantic.get_facts("alice")
    for city in ("Lyon", "Nice"):  # two more current values, written past the lock
        twin = paris.model_copy(
            update={"fact_id": f"f-{city}", "value": city, "content": f"Lives in {city}"}
        )
        memory.store.batch([ctx.put_fact(twin)])
    assert slot_counts(memory, "u") == (3, 3)
    write_city(memory, "u", "Rome")
    assert slot_counts(memory, "u") == (1, 4)
    assert [f.value for f in user.semantic.get_facts("alice")] == ["Rome"]


async def test_a_sync_write_inside_the_event_loop_that_would_deadlock_raises() -> None:
    """A blocking write from the event loop's own thread while a task of that loop
    holds the slot could never finish; it raises, naming the async twin."""
    memory = TieredMemory(InMemoryStore())
    user = memory.for_user("u")
    scope_ns = user.scope.namespace("semantic", "facts")
    async with slot_lock(unwrap(memory.store), scope_ns, "alice", "lives_in"):
        with pytest.raises(ConfigurationError, match="astore_fact"):
            write_city(memory, "u", "Paris")
    write_city(memory, "u", "Paris")  # the slot is free again
    assert slot_counts(memory, "u") == (1, 1)


async def test_a_cancelled_waiter_does_not_keep_the_slot() -> None:
    memory = TieredMemory(InMemoryStore())
    user = memory.for_user("u")
    lock = slot_lock(unwrap(memory.store), user.scope.namespace("semantic", "facts"), "a", "s")
    await lock.aacquire()
    waiter = asyncio.ensure_future(
        user.semantic.astore_fact("a", "Lives in X", attribute="s", value="X")
    )
    for _ in range(10_000):  # let the write run until it queues behind the held lock
        if lock._waiters or waiter.done():
            break
        await asyncio.sleep(0)
    assert lock._waiters and not waiter.done()
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    lock.release()
    assert not lock.locked()
    result = await user.semantic.astore_fact("a", "Lives in Y", attribute="s", value="Y")
    assert result.outcome == "new"
