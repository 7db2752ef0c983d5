"""``forget_user`` is total: nothing counted, deferred or imported brings the user back.

* Retrievals count accesses in process memory; forgetting drops the user's
  unsaved counts, and a retrieval that was still running cannot save one later.
* After a reopen the user is not listed, and no file holds their text.
* ``forget_user(..., purge=False)`` leaves the text in the store's files only
  until the next open, which finishes the purge.
* Records written by ``import_jsonl`` are reached too.
* Writes racing the forget (threads, asyncio tasks, queued writes, imports):
  none whose call started before ``forget_user`` was called stays; those that
  reach the store after the erasure began raise ``UserErasedError``.

Every variant on the embedded store ends with a raw-byte scan of every file
under the memory directory for the user's unique canary strings.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory import Episode, TieredMemory
from langchain_tiered_memory.erasure import ERASURES_NAMESPACE
from langchain_tiered_memory.errors import UserErasedError
from langchain_tiered_memory.testing.fakes import HashingEmbeddings
from langchain_tiered_memory.tiers.common.access import save_access
from langchain_tiered_memory.types import utcnow

VICTIM = "victim-r3t"


def canaries(n: int = 4) -> list[str]:
    return [f"cnry{uuid.uuid4().hex[:12]}" for _ in range(n)]


def fill(memory: TieredMemory, user: str, secrets: list[str]) -> None:
    me = memory.for_user(user)
    me.semantic.store_fact(user, f"Loves {secrets[0]} music", confidence=0.9)
    me.remember(f"I live in {secrets[1]}.")
    me.episodic.record(Episode(task_description=f"Plan {secrets[2]}", outcome="success"))
    me.procedural.set_preference("city", secrets[3])
    memory.flush()


def retrieve(memory: TieredMemory, user: str, query: str) -> None:
    me = memory.for_user(user)
    me.build_memory_context(query, token_budget=500)
    me.semantic.semantic_search(query)
    me.episodic.retrieve_similar(query, top_k=3)


def open_memory(root: Path, **kwargs: Any) -> TieredMemory:
    return TieredMemory.open(root, embeddings=HashingEmbeddings(size=64), **kwargs)


def canaries_on_disk(root: Path, needles: list[str]) -> int:
    """How many (file, canary) pairs: each file under ``root`` read as raw bytes."""
    raw = [n.encode() for n in needles]
    return sum(n in p.read_bytes() for p in root.rglob("*") if p.is_file() for n in raw)


def in_memory() -> TieredMemory:
    emb = HashingEmbeddings(size=64)
    return TieredMemory(InMemoryStore(index={"dims": 64, "embed": emb, "fields": ["text"]}))


# -- access counts ------------------------------------------------------------------------


def test_a_retrieval_finishing_after_the_forget_saves_nothing_for_the_user() -> None:
    memory = in_memory()
    fill(memory, VICTIM, canaries())
    retrieve(memory, VICTIM, "music")
    old = memory.for_user(VICTIM)  # a handle a running retrieval still holds
    facts = old.semantic.get_facts(VICTIM)
    episodes = old.episodic.retrieve_recent(5)

    assert memory.forget_user(VICTIM) > 0
    old.semantic.access.touch([f.fact_id for f in facts])  # it counts its hits late
    old.episodic.access.touch([e.episode_id for e in episodes])
    save_access(memory.store)

    assert list(memory.export_user(VICTIM)) == []
    assert VICTIM not in memory.users()


async def test_aforget_user_drops_the_unsaved_counts_too() -> None:
    memory = in_memory()
    fill(memory, VICTIM, canaries())
    retrieve(memory, VICTIM, "music")
    assert await memory.aforget_user(VICTIM) > 0
    await memory.aclose()  # saves every count of this process
    reopened = TieredMemory(memory.store)
    assert [r async for r in reopened.aexport_user(VICTIM)] == []


def test_after_a_reopen_the_user_is_not_listed_and_no_file_holds_their_text(
    tmp_path: Path,
) -> None:
    secrets = canaries()
    memory = open_memory(tmp_path)
    try:
        fill(memory, VICTIM, secrets)
        fill(memory, "keeper", canaries())
        for query in ("music", "plan", secrets[0]):
            retrieve(memory, VICTIM, query)
        memory.forget_user(VICTIM)
    finally:
        memory.close()
    memory = open_memory(tmp_path)
    try:
        assert memory.users() == ["keeper"]
        assert list(memory.export_user(VICTIM)) == []
    finally:
        memory.close()
    assert canaries_on_disk(tmp_path, [*secrets, VICTIM]) == 0


# -- deferred purge -----------------------------------------------------------------------


def test_a_deferred_purge_is_finished_by_the_next_open(tmp_path: Path) -> None:
    secrets = canaries()
    memory = open_memory(tmp_path)
    try:
        fill(memory, VICTIM, secrets)
        fill(memory, "keeper", canaries())
        memory.forget_user(VICTIM, purge=False)
        assert canaries_on_disk(tmp_path, secrets) > 0  # deleted, still in the files
        assert memory.store.search(ERASURES_NAMESPACE)  # the purge is owed
    finally:
        memory.close()
    memory = open_memory(tmp_path)  # pays it
    try:
        assert memory.store.search(ERASURES_NAMESPACE) == []
        assert memory.for_user("keeper").semantic.get_facts("keeper")
    finally:
        memory.close()
    assert canaries_on_disk(tmp_path, [*secrets, VICTIM]) == 0


def test_resume_erasures_purges_several_deferred_forgets_at_once(tmp_path: Path) -> None:
    first, second = canaries(), canaries()
    memory = open_memory(tmp_path)
    try:
        fill(memory, "first-user", first)
        fill(memory, "second-user", second)
        memory.forget_user("first-user", purge=False)
        memory.forget_user("second-user", purge=False)
        assert memory.resume_erasures() == 2
        assert memory.resume_erasures() == 0
    finally:
        memory.close()
    assert canaries_on_disk(tmp_path, [*first, *second]) == 0


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
async def test_resume_erasures_finishes_an_erasure_that_failed_part_way(
    tmp_path: Path, use_async: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    interrupted, deferred, kept = canaries(), canaries(), canaries()
    memory = open_memory(tmp_path)
    try:
        fill(memory, VICTIM, interrupted)
        fill(memory, "deferred-user", deferred)
        fill(memory, "keeper", kept)
        memory.forget_user("deferred-user", purge=False)  # its purge is owed

        def unplugged(ops: Any) -> None:
            if any(
                isinstance(op, PutOp) and op.value is None and op.namespace[1:2] == (VICTIM,)
                for op in ops
            ):
                raise OSError("disk unplugged")

        batch, abatch = memory.store.batch, memory.store.abatch

        def failing_batch(ops: Any) -> Any:
            unplugged(ops)
            return batch(ops)

        async def failing_abatch(ops: Any) -> Any:
            unplugged(ops)
            return await abatch(ops)

        with monkeypatch.context() as patch:  # the deletions fail after the marker is written
            patch.setattr(memory.store, "batch", failing_batch)
            patch.setattr(memory.store, "abatch", failing_abatch)
            with pytest.raises(OSError, match="disk unplugged"):
                await memory.aforget_user(VICTIM) if use_async else memory.forget_user(VICTIM)
        assert VICTIM in memory.users()  # not erased yet, and the journal says so
        assert len(memory.store.search(ERASURES_NAMESPACE)) == 2

        async def resume() -> int:
            return await memory.aresume_erasures() if use_async else memory.resume_erasures()

        assert await resume() == 2
        assert memory.users() == ["keeper"]
        assert list(memory.export_user(VICTIM)) == []
        assert memory.store.search(ERASURES_NAMESPACE) == []
        assert memory.for_user("keeper").semantic.get_facts("keeper")
        assert await resume() == 0
    finally:
        memory.close()
    assert canaries_on_disk(tmp_path, [*interrupted, *deferred, VICTIM]) == 0
    assert canaries_on_disk(tmp_path, kept) > 0


# -- import -------------------------------------------------------------------------------


def test_forget_user_reaches_every_record_import_wrote(tmp_path: Path) -> None:
    secrets = canaries()
    source = in_memory()
    fill(source, "someone", secrets)
    export = tmp_path / "export.jsonl"
    assert source.export_jsonl("someone", export) > 0
    root = tmp_path / "memory"
    memory = open_memory(root)
    try:
        assert memory.import_jsonl(export, user_id="  VICTIM-R3T ") > 0  # any spelling
        assert VICTIM in memory.users()
        assert canaries_on_disk(root, secrets) > 0
        memory.forget_user("Victim-R3T")
        assert memory.users() == []
    finally:
        memory.close()
    assert canaries_on_disk(root, [*secrets, VICTIM]) == 0


# -- concurrent writes during the forget -------------------------------------------------

WAIT = 60.0
"""Longest wait for a writer's progress (a safety net; nothing waits for time to pass)."""


class HoldingClock:
    """The memory's clock; the first reading of each held thread waits until released.

    A write reads the clock after its call started and before it writes, so a
    held write is one that started and has not reached the store yet.
    """

    def __init__(self) -> None:
        self.entered: dict[int, threading.Event] = {}
        self.release = threading.Event()

    def hold_this_thread(self, entered: threading.Event) -> None:
        self.entered[threading.get_ident()] = entered

    def __call__(self) -> datetime:
        entered = self.entered.get(threading.get_ident())
        if entered is not None and not entered.is_set():
            entered.set()
            self.release.wait()
        return utcnow()


class Race:
    """Writers that keep writing unique canaries and note when each call started."""

    def __init__(self) -> None:
        self.started: list[tuple[float, str]] = []
        self.refused: list[UserErasedError] = []
        self.errors: list[BaseException] = []
        self.calls: Counter[str] = Counter()
        self.progress = threading.Condition()
        self.stop = threading.Event()

    def _begin(self) -> str:
        canary = f"cnry{uuid.uuid4().hex[:12]}"
        self.started.append((time.monotonic(), canary))
        return canary

    def _done(self, name: str, error: BaseException | None) -> None:
        if isinstance(error, UserErasedError):
            self.refused.append(error)
        elif error is not None:
            self.errors.append(error)
        with self.progress:
            self.calls[name] += 1
            self.progress.notify_all()

    def run(self, name: str, write: Callable[[str], object]) -> None:
        while not self.stop.is_set():
            canary, error = self._begin(), None
            try:
                write(canary)
            except Exception as exc:
                error = exc
            self._done(name, error)

    async def arun(self, name: str, write: Callable[[str], Awaitable[object]]) -> None:
        while not self.stop.is_set():
            canary, error = self._begin(), None
            try:
                await write(canary)
            except Exception as exc:
                error = exc
            self._done(name, error)

    def wait_for(self, names: list[str], calls: int) -> None:
        with self.progress:
            assert self.progress.wait_for(
                lambda: all(self.calls[n] >= calls for n in names), WAIT
            ), (dict(self.calls), self.errors[:3])


def export_template(tmp_path: Path) -> str:
    """One user's export (JSON Lines) with ``CANARY`` where each import puts its canary."""
    source = in_memory()
    source.for_user("someone").semantic.store_fact("someone", "Visited CANARY", confidence=0.9)
    path = tmp_path / "template.jsonl"
    source.export_jsonl("someone", path)
    return path.read_text(encoding="utf-8")


def test_writes_racing_the_forget_never_bring_back_what_started_before_it(
    tmp_path: Path,
) -> None:
    root = tmp_path / "memory"
    clock = HoldingClock()
    memory = open_memory(root, clock=clock)
    race = Race()
    template = export_template(tmp_path)
    keeper = canaries()
    fill(memory, "keeper", keeper)
    fill(memory, VICTIM, canaries())
    keeper_records = len(list(memory.export_user("keeper")))

    def user() -> Any:
        return memory.for_user(VICTIM)

    def fact(c: str) -> object:
        return user().semantic.store_fact(VICTIM, f"Knows {c}", confidence=0.9)

    def episode(c: str) -> object:
        return user().episodic.record(Episode(task_description=f"Plan {c}", outcome="success"))

    def turn(c: str) -> object:
        return user().turns.add_turns(
            f"s-{c}", [{"speaker": "victim", "text": f"I saw {c}", "time": utcnow()}]
        )

    def queued(c: str) -> object:
        user().queue_remember(f"I live in {c}.")
        return user().queue_episode(Episode(task_description=f"Trip {c}", outcome="success"))

    def imported(c: str) -> object:
        path = tmp_path / f"{c}.jsonl"
        path.write_text(template.replace("CANARY", c), encoding="utf-8")
        return memory.import_jsonl(path, user_id=VICTIM)

    async def afact(c: str) -> object:
        return await user().semantic.astore_fact(VICTIM, f"Knew {c}", confidence=0.9)

    async def aepisode(c: str) -> object:
        return await user().aqueue_episode(Episode(task_description=f"Go {c}", outcome="success"))

    async def aturn(c: str) -> object:
        return await user().turns.aadd_turns(
            f"a-{c}", [{"speaker": "victim", "text": c, "time": utcnow()}]
        )

    sync_writers = {"fact": fact, "episode": episode, "turn": turn, "queued": queued}
    sync_writers["import"] = imported
    async_writers = {"afact": afact, "aepisode": aepisode, "aturn": aturn}

    async def run_async() -> None:
        await asyncio.gather(*(race.arun(n, w) for n, w in async_writers.items()))

    threads = [
        threading.Thread(target=race.run, args=(n, w), daemon=True) for n, w in sync_writers.items()
    ]
    threads.append(threading.Thread(target=asyncio.run, args=(run_async(),), daemon=True))
    # Two writes held between the start of their call and the store: one direct, one queued.
    held_results: dict[str, BaseException | None] = {}
    entered = {"direct": threading.Event(), "queued": threading.Event()}

    def held(name: str, write: Callable[[str], object]) -> None:
        clock.hold_this_thread(entered[name])
        try:
            write(race._begin())
            held_results[name] = None
        except BaseException as exc:
            held_results[name] = exc

    held_threads = [
        threading.Thread(target=held, args=("direct", episode), daemon=True),
        threading.Thread(target=held, args=("queued", queued), daemon=True),
    ]
    try:
        for thread in threads:
            thread.start()
        race.wait_for([*sync_writers, *async_writers], calls=2)
        for thread in held_threads:
            thread.start()
        assert all(e.wait(WAIT) for e in entered.values())

        t0 = time.monotonic()
        assert memory.forget_user(VICTIM) > 0
        clock.release.set()
        for thread in held_threads:
            thread.join(WAIT)
        # A write that starts now lands in the emptied user.
        user().semantic.store_fact(VICTIM, "Moved on", confidence=0.9)
    finally:
        clock.release.set()
        race.stop.set()
        for thread in threads:
            thread.join(WAIT)
    assert not any(t.is_alive() for t in [*threads, *held_threads])
    assert race.errors == []
    assert all(isinstance(held_results[n], UserErasedError) for n in ("direct", "queued"))
    assert all("was refused" in str(e) for e in race.refused)
    assert memory.writer is not None
    memory.flush()
    assert memory.writer.stats().dead_letters == 0
    after = [r["value"] for r in memory.export_user(VICTIM)]
    assert any("Moved on" in str(v) for v in after)
    memory.close()

    before = [c for t, c in race.started if t < t0]
    assert len(before) >= 2 * (len(sync_writers) + len(async_writers))
    assert canaries_on_disk(root, before) == 0

    memory = open_memory(root)
    try:
        assert len(list(memory.export_user("keeper"))) == keeper_records
        assert set(memory.users()) <= {"keeper", VICTIM}
    finally:
        memory.close()
    assert all(canaries_on_disk(root, [c]) > 0 for c in keeper)
