"""DurableMemoryWriter: durability, retries, dead letters, flush, idempotency, concurrency."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import BaseStore, Op, PutOp, Result
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory.errors import (
    ConfigurationError,
    InvalidInputError,
    StoreLockedError,
    WriteBackError,
)
from langchain_tiered_memory.writeback.ops import RetryPolicy, WriteOp
from langchain_tiered_memory.writeback.writer import DurableMemoryWriter, WriteBackTimeoutError

FAST = RetryPolicy(initial_interval=0.002, max_interval=0.01, max_attempts=3, jitter=False)
NS = ("tiered_memory", "alice", "_", "semantic")


class FlakyStore(InMemoryStore):
    """InMemoryStore whose writes fail while ``failures_left`` > 0 or a key is poisoned."""

    def __init__(self, failures: int = 0, poisoned: Iterable[str] = ()) -> None:
        super().__init__()
        self.failures_left = failures
        self.poisoned = set(poisoned)
        self.calls = 0

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        self.calls += 1
        writes = [op for op in ops if isinstance(op, PutOp)]
        if any(op.key in self.poisoned for op in writes):
            raise ConnectionError(f"poisoned key in {[op.key for op in writes]}")
        if writes and self.failures_left > 0:
            self.failures_left -= 1
            raise ConnectionError("store unavailable")
        return super().batch(ops)


class FlakyHandler:
    """Named-op handler failing ``failures`` times, recording when each call happened."""

    def __init__(self, failures: int = 0, exc: type[Exception] = TimeoutError) -> None:
        self.failures = failures
        self.exc = exc
        self.calls: list[float] = []

    def __call__(self, payload: dict[str, Any], store: BaseStore) -> None:
        self.calls.append(time.monotonic())
        if len(self.calls) <= self.failures:
            raise self.exc(f"attempt {len(self.calls)} failed")
        store.put(("facts",), payload["id"], {"text": payload["text"]})


@pytest.fixture
def store() -> InMemoryStore:
    return InMemoryStore()


@pytest.fixture
def writer(store: InMemoryStore, tmp_path: Path) -> Iterator[DurableMemoryWriter]:
    with DurableMemoryWriter(store, tmp_path, retry=FAST) as w:
        yield w


def value(store: BaseStore, namespace: tuple[str, ...], key: str) -> Any:
    item = store.get(namespace, key)
    return None if item is None else item.value


# ---------------------------------------------------------------- applying
def test_put_and_delete_are_applied_in_order(
    writer: DurableMemoryWriter, store: InMemoryStore
) -> None:
    writer.submit_put(NS, "diet", {"text": "vegetarian"})
    writer.submit_put(NS, "city", {"text": "Paris"})
    writer.submit_delete(NS, "city")
    writer.flush()
    assert value(store, NS, "diet") == {"text": "vegetarian"}
    assert value(store, NS, "city") is None
    assert writer.stats().applied == 3
    assert writer.stats().pending == 0


def test_outbox_lives_in_the_memory_directory(tmp_path: Path) -> None:
    with DurableMemoryWriter(InMemoryStore(), tmp_path / "memory") as w:
        w.submit_put(NS, "k", {"v": 1})
    assert (tmp_path / "memory" / "outbox.sqlite3").is_file()


def test_named_operation_receives_payload_and_store(tmp_path: Path, store: InMemoryStore) -> None:
    handler = FlakyHandler()
    with DurableMemoryWriter(store, tmp_path, handlers={"semantic.store_fact": handler}) as w:
        w.submit(WriteOp("semantic.store_fact", {"id": "f1", "text": "likes tea"}))
    assert value(store, ("facts",), "f1") == {"text": "likes tea"}


def test_unregistered_operation_is_refused_and_nothing_stored(
    writer: DurableMemoryWriter,
) -> None:
    with pytest.raises(InvalidInputError, match=r"register\('episodic.record'"):
        writer.submit(WriteOp("episodic.record", {"x": 1}))
    assert writer.stats().pending == 0


@pytest.mark.parametrize(
    "payload", [{"when": object()}, {"score": float("nan")}, {"v": float("inf")}]
)
def test_non_json_payload_is_refused_before_queueing(payload: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError, match="JSON"):
        WriteOp.put(NS, "k", payload)


def test_bad_namespace_and_key_are_refused() -> None:
    with pytest.raises(InvalidInputError, match="namespace"):
        WriteOp.put((), "k", {"v": 1})
    with pytest.raises(InvalidInputError, match="store key"):
        WriteOp.put(NS, "", {"v": 1})
    with pytest.raises(InvalidInputError, match="index"):
        WriteOp.put(NS, "k", {"v": 1}, index=["", 3])  # type: ignore[list-item]


def test_index_option_is_passed_to_the_store(tmp_path: Path) -> None:
    seen: list[Any] = []

    class Recording(InMemoryStore):
        def batch(self, ops: Iterable[Op]) -> list[Result]:
            ops = list(ops)
            seen.extend(getattr(op, "index", "n/a") for op in ops)
            return super().batch(ops)

    with DurableMemoryWriter(Recording(), tmp_path) as w:
        w.submit_put(NS, "a", {"text": "x"}, index=False)
        w.submit_put(NS, "b", {"text": "y"}, index=["text"])
    assert seen == [False, ["text"]]


# ---------------------------------------------------------------- retries and dead letters
def test_flaky_handler_is_retried_with_growing_backoff(
    tmp_path: Path, store: InMemoryStore
) -> None:
    handler = FlakyHandler(failures=3)
    policy = RetryPolicy(initial_interval=0.02, backoff_factor=2, max_attempts=5, jitter=False)
    with DurableMemoryWriter(store, tmp_path, retry=policy, handlers={"fact": handler}) as w:
        w.submit(WriteOp("fact", {"id": "f1", "text": "t"}))
        w.flush()
        stats = w.stats()
    assert value(store, ("facts",), "f1") == {"text": "t"}
    assert len(handler.calls) == 4
    assert stats.failed_attempts == 3 and stats.dead_letters == 0 and stats.applied == 1
    gaps = [b - a for a, b in zip(handler.calls, handler.calls[1:], strict=False)]
    for gap, expected in zip(gaps, [0.02, 0.04, 0.08], strict=True):
        assert gap >= expected * 0.9


def test_flaky_store_is_retried_for_builtin_writes(tmp_path: Path) -> None:
    store = FlakyStore(failures=2)
    with DurableMemoryWriter(store, tmp_path, retry=FAST) as w:
        w.submit_put(NS, "k", {"v": 1})
        w.flush()
        assert w.stats().failed_attempts == 2
    assert value(store, NS, "k") == {"v": 1}


def test_permanent_failure_becomes_a_visible_dead_letter(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = FlakyStore(poisoned={"bad"})
    with (
        caplog.at_level(logging.WARNING, logger="langchain_tiered_memory.writeback.writer"),
        DurableMemoryWriter(store, tmp_path, retry=FAST) as w,
    ):
        w.submit_put(NS, "bad", {"v": 1})
        w.submit_put(NS, "good", {"v": 2})
        w.flush()
        [dead] = w.dead_letters()
        stats = w.stats()
    assert dead.op == "store.put" and dead.payload["key"] == "bad"
    assert dead.attempts == FAST.max_attempts
    assert dead.error.startswith("ConnectionError: poisoned key")
    assert dead.namespace == NS
    assert stats.dead_letters == 1 and stats.pending == 0
    assert stats.last_error is not None and "poisoned" in stats.last_error
    # The queue moved on past the dead letter.
    assert value(store, NS, "good") == {"v": 2}
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "dead letter" in errors[0].getMessage()
    assert errors[0].exc_info is not None
    assert sum("retrying" in r.getMessage() for r in caplog.records) == FAST.max_attempts - 1


def test_non_retryable_error_is_dead_lettered_at_once(tmp_path: Path) -> None:
    handler = FlakyHandler(failures=10, exc=InvalidInputError)
    with DurableMemoryWriter(InMemoryStore(), tmp_path, retry=FAST, handlers={"f": handler}) as w:
        w.submit(WriteOp("f", {"id": "x", "text": "t"}))
        w.flush()
        [dead] = w.dead_letters()
    assert dead.attempts == 1 and len(handler.calls) == 1
    assert dead.error.startswith("InvalidInputError")


def test_retry_dead_letters_reapplies_once_the_fault_is_fixed(tmp_path: Path) -> None:
    store = FlakyStore(poisoned={"k"})
    with DurableMemoryWriter(store, tmp_path, retry=FAST) as w:
        w.submit_put(NS, "k", {"v": 1})
        w.flush()
        assert w.stats().dead_letters == 1
        store.poisoned.clear()
        assert w.retry_dead_letters() == 1
        w.flush()
        assert w.dead_letters() == []
        assert w.stats().applied == 1
    assert value(store, NS, "k") == {"v": 1}


def test_retrying_a_dead_put_never_reverts_a_newer_write(tmp_path: Path) -> None:
    store = FlakyStore(poisoned={"k"})
    with DurableMemoryWriter(store, tmp_path, retry=FAST) as w:
        w.submit_put(NS, "k", {"v": "old"})
        w.flush()
        store.poisoned.clear()
        w.submit_put(NS, "k", {"v": "new"})
        w.flush()
        assert w.retry_dead_letters() == 0
        w.flush()
        stats = w.stats()
    assert value(store, NS, "k") == {"v": "new"}
    assert stats.superseded == 1 and stats.dead_letters == 0


def test_replayed_op_without_handler_is_dead_lettered_then_recoverable(tmp_path: Path) -> None:
    store = InMemoryStore()
    first = DurableMemoryWriter(store, tmp_path, handlers={"fact": FlakyHandler()}, start=False)
    first.submit(WriteOp("fact", {"id": "f1", "text": "t"}))
    first.close()  # never started: the write stays queued on disk
    with DurableMemoryWriter(store, tmp_path, retry=FAST) as w:  # forgot to register
        w.flush()
        [dead] = w.dead_letters()
        assert "no handler registered for operation 'fact'" in dead.error
        w.register("fact", FlakyHandler())
        assert w.retry_dead_letters() == 1
        w.flush()
    assert value(store, ("facts",), "f1") == {"text": "t"}


def test_batched_apply_isolates_the_failing_write(tmp_path: Path) -> None:
    store = FlakyStore(poisoned={"k3"})
    with DurableMemoryWriter(store, tmp_path, retry=FAST, start=False) as w:
        w.submit_many([WriteOp.put(NS, f"k{i}", {"i": i}) for i in range(6)])
        w.start()
        w.flush()
        [dead] = w.dead_letters()
    assert dead.payload["key"] == "k3"
    assert [value(store, NS, f"k{i}") for i in range(6)] == [
        {"i": 0},
        {"i": 1},
        {"i": 2},
        None,
        {"i": 4},
        {"i": 5},
    ]


# ---------------------------------------------------------------- flush and close
class GatedHandler:
    """Blocks on a per-id event, so a test controls when each write completes."""

    def __init__(self) -> None:
        self.gates: dict[str, threading.Event] = {}
        self.applied: list[str] = []

    def gate(self, key: str) -> threading.Event:
        return self.gates.setdefault(key, threading.Event())

    def __call__(self, payload: dict[str, Any], store: BaseStore) -> None:
        assert self.gate(payload["id"]).wait(10)
        self.applied.append(payload["id"])


def test_flush_waits_for_earlier_writes_only(tmp_path: Path) -> None:
    handler = GatedHandler()
    with DurableMemoryWriter(InMemoryStore(), tmp_path, handlers={"g": handler}) as w:
        w.submit(WriteOp("g", {"id": "a"}))
        done = threading.Event()
        flusher = threading.Thread(target=lambda: (w.flush(), done.set()))
        flusher.start()
        time.sleep(0.05)
        w.submit(WriteOp("g", {"id": "b"}))  # after the flush began
        assert not done.is_set()
        handler.gate("a").set()
        assert done.wait(5), "flush did not return after the earlier write was applied"
        assert handler.applied == ["a"]
        handler.gate("b").set()
        flusher.join()


def test_flush_timeout_raises_and_loses_nothing(tmp_path: Path) -> None:
    handler = GatedHandler()
    with DurableMemoryWriter(InMemoryStore(), tmp_path, handlers={"g": handler}) as w:
        w.submit(WriteOp("g", {"id": "a"}))
        with pytest.raises(WriteBackTimeoutError, match="still pending") as info:
            w.flush(timeout=0.05)
        assert isinstance(info.value, TimeoutError)
        assert w.stats().pending == 1
        handler.gate("a").set()
        w.flush(timeout=5)
        assert w.stats().applied == 1


def test_close_flushes_and_the_writer_refuses_later_submits(tmp_path: Path) -> None:
    store = InMemoryStore()
    w = DurableMemoryWriter(store, tmp_path, fsync=False)
    for i in range(300):
        w.submit_put(NS, f"k{i}", {"i": i})
    w.close()
    w.close()  # twice is fine
    assert len(store.search(NS, limit=1000)) == 300
    with pytest.raises(WriteBackError, match="closed"):
        w.submit_put(NS, "late", {"i": -1})


def test_close_with_a_stuck_handler_gives_up_and_replays_on_reopen(tmp_path: Path) -> None:
    stuck = GatedHandler()
    w = DurableMemoryWriter(InMemoryStore(), tmp_path, handlers={"g": stuck})
    w.submit(WriteOp("g", {"id": "a"}))
    started = time.monotonic()
    with pytest.raises(WriteBackTimeoutError):
        w.close(timeout=0.05)
    assert time.monotonic() - started < 5
    stuck.gate("a").set()  # let the old thread finish; its outbox is closed
    fresh = GatedHandler()
    fresh.gate("a").set()
    with DurableMemoryWriter(InMemoryStore(), tmp_path, handlers={"g": fresh}) as again:
        again.flush()
    assert fresh.applied == ["a"]


def test_flush_without_a_running_worker_says_how_to_fix(tmp_path: Path) -> None:
    w = DurableMemoryWriter(InMemoryStore(), tmp_path, start=False)
    w.submit_put(NS, "k", {"v": 1})
    with pytest.raises(WriteBackError, match=r"call start\(\)"):
        w.flush()
    w.close()


def test_restart_replays_what_was_not_applied(tmp_path: Path) -> None:
    store = InMemoryStore()
    first = DurableMemoryWriter(store, tmp_path, start=False)
    first.submit_many([WriteOp.put(NS, f"k{i}", {"i": i}) for i in range(50)])
    first.close()
    assert store.search(NS) == []
    with DurableMemoryWriter(store, tmp_path) as second:
        second.flush()
        assert second.stats().applied == 50
    assert len(store.search(NS, limit=100)) == 50


def test_second_writer_on_the_same_outbox_is_refused(tmp_path: Path) -> None:
    with (
        DurableMemoryWriter(InMemoryStore(), tmp_path),
        pytest.raises(StoreLockedError, match="already open"),
    ):
        DurableMemoryWriter(InMemoryStore(), tmp_path)
    DurableMemoryWriter(InMemoryStore(), tmp_path).close()  # free again once closed


def test_a_file_that_is_not_an_outbox_is_reported_and_the_lock_released(tmp_path: Path) -> None:
    (tmp_path / "outbox.sqlite3").write_bytes(b"this is not a database" * 100)
    with pytest.raises(WriteBackError, match=r"cannot open outbox .*outbox\.sqlite3"):
        DurableMemoryWriter(InMemoryStore(), tmp_path)
    (tmp_path / "outbox.sqlite3").unlink()
    DurableMemoryWriter(InMemoryStore(), tmp_path).close()


# ---------------------------------------------------------------- idempotency
def test_double_submit_is_queued_once(writer: DurableMemoryWriter) -> None:
    first = writer.submit_put(NS, "k", {"v": 1})
    second = writer.submit_put(NS, "k", {"v": 1})
    assert second.duplicate and second.seq == first.seq
    writer.flush()
    again = writer.submit_put(NS, "k", {"v": 1})  # already applied: still a duplicate
    assert again.duplicate
    assert writer.stats().applied == 1


def test_caller_key_dedupes_even_a_different_payload(
    writer: DurableMemoryWriter, store: InMemoryStore
) -> None:
    writer.submit_put(NS, "k", {"v": 1}, idempotency_key="turn-7")
    assert writer.submit_put(NS, "k", {"v": 2}, idempotency_key="turn-7").duplicate
    writer.flush()
    assert value(store, NS, "k") == {"v": 1}


def test_same_content_after_a_newer_write_is_applied_again(
    writer: DurableMemoryWriter, store: InMemoryStore
) -> None:
    writer.submit_put(NS, "k", {"v": "a"})
    writer.submit_put(NS, "k", {"v": "b"})
    assert not writer.submit_put(NS, "k", {"v": "a"}).duplicate  # A, B, A: A must win
    writer.flush()
    assert value(store, NS, "k") == {"v": "a"}


def test_resubmitting_a_dead_letter_queues_it_again(tmp_path: Path) -> None:
    store = FlakyStore(poisoned={"k"})
    with DurableMemoryWriter(store, tmp_path, retry=FAST) as w:
        w.submit_put(NS, "k", {"v": 1}, idempotency_key="x")
        w.flush()
        store.poisoned.clear()
        assert not w.submit_put(NS, "k", {"v": 1}, idempotency_key="x").duplicate
        w.flush()
        assert w.dead_letters() == []
    assert value(store, NS, "k") == {"v": 1}


# ---------------------------------------------------------------- concurrency
async def test_threads_and_tasks_submitting_at_once_lose_nothing(tmp_path: Path) -> None:
    store = InMemoryStore()
    per_worker = 150
    async with DurableMemoryWriter(store, tmp_path, fsync=False) as w:

        def thread_body(t: int) -> None:
            for i in range(per_worker):
                w.submit_put(NS, f"t{t}-{i}", {"i": i})

        async def task_body(t: int) -> None:
            for i in range(per_worker):
                await w.asubmit_put(NS, f"a{t}-{i}", {"i": i})

        threads = [threading.Thread(target=thread_body, args=(t,)) for t in range(8)]
        for th in threads:
            th.start()
        await asyncio.gather(*(task_body(t) for t in range(4)))
        for th in threads:
            await asyncio.to_thread(th.join)
        await w.aflush()
        stats = await w.astats()
    assert stats.applied == 12 * per_worker and stats.pending == 0
    assert len(store.search(NS, limit=10_000)) == 12 * per_worker


# ---------------------------------------------------------------- async surface
async def test_async_twins(tmp_path: Path) -> None:
    store = FlakyStore(poisoned={"bad"})
    async with DurableMemoryWriter(store, tmp_path, retry=FAST) as w:
        await w.asubmit(WriteOp.put(NS, "k", {"v": 1}))
        await w.asubmit_put(NS, "bad", {"v": 0})
        await w.asubmit_delete(NS, "k")
        await w.aflush()
        [dead] = await w.adead_letters()
        assert dead.payload["key"] == "bad"
        store.poisoned.clear()
        assert await w.aretry_dead_letters() == 1
        await w.aflush()
        assert (await w.astats()).applied == 3
    assert value(store, NS, "k") is None
    assert value(store, NS, "bad") == {"v": 0}


async def test_asubmit_refuses_a_callable(tmp_path: Path) -> None:
    async def write() -> None: ...

    async with DurableMemoryWriter(InMemoryStore(), tmp_path) as w:
        with pytest.raises(InvalidInputError, match="cannot be queued durably"):
            await w.asubmit(write)  # type: ignore[arg-type]


def test_register_refuses_builtin_duplicate_and_async_handlers(
    writer: DurableMemoryWriter,
) -> None:
    async def coro(payload: dict[str, Any], store: BaseStore) -> None: ...

    with pytest.raises(ConfigurationError, match="built in"):
        writer.register("store.put", FlakyHandler())
    with pytest.raises(ConfigurationError, match="sync"):
        writer.register("c", coro)  # type: ignore[arg-type]
    writer.register("h", FlakyHandler())
    with pytest.raises(ConfigurationError, match="replace=True"):
        writer.register("h", FlakyHandler())
    writer.register("h", FlakyHandler(), replace=True)


# ---------------------------------------------------------------- forgetting
def test_purge_removes_one_users_writes_in_every_state(tmp_path: Path) -> None:
    store = FlakyStore(poisoned={"dead"})
    alice, al = ("tiered_memory", "alice"), ("tiered_memory", "al")
    secret = "SECRET-OF-ALICE"
    with DurableMemoryWriter(store, tmp_path, retry=FAST, handlers={"f": FlakyHandler()}) as w:
        w.submit_put((*alice, "semantic"), "k", {"v": secret})
        w.submit_put((*alice, "semantic"), "dead", {"v": secret})
        w.submit_put((*al, "semantic"), "k", {"v": "kept"})
        w.submit(WriteOp("f", {"id": "x", "text": secret}, namespace=alice))
        w.flush()
        assert w.purge(alice) == 3
        stats = w.stats()
    assert stats.applied == 1 and stats.dead_letters == 0
    # Nothing of alice's lingers on disk: not in free pages, not in the WAL.
    on_disk = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert secret.encode() not in on_disk
    assert b"kept" in on_disk
