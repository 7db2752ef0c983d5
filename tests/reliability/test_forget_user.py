"""Right to be forgotten: ``forget_user`` leaves nothing of the user behind.

The user gets memories in every tier, under two agents, in the trash and the
audit trail (a soft delete), in consolidation runs, and in the durable outbox
(queued writes, applied writes and a dead letter). After ``forget_user`` a
full scan of the store finds no record of theirs and no string of theirs, the
outbox file (and its WAL) holds none of their bytes, the other user is
untouched, and only a content-free deletion record remains.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from reliability_helpers import make_store, scan_store

from langchain_tiered_memory import (
    Episode,
    InvalidInputError,
    TieredMemory,
    ToolUsageRecord,
    TrajectoryStep,
)
from langchain_tiered_memory.memory import DELETIONS_NAMESPACE
from langchain_tiered_memory.testing.fakes import HashingEmbeddings
from langchain_tiered_memory.writeback.handlers import register_memory_handlers
from langchain_tiered_memory.writeback.ops import RetryPolicy, WriteOp
from langchain_tiered_memory.writeback.writer import DurableMemoryWriter

VICTIM = "victim-q7x"
OTHER = "keeper-k2m"
SECRETS = ["zqvictimsecret", "Xylophonia", "qqmarmaladeqq", "wolfgangzqx"]


def open_with_writer(engine: str, root: Path) -> TieredMemory:
    emb = HashingEmbeddings(size=64)
    store = make_store(engine, root / "store", emb)
    writer = DurableMemoryWriter(
        store, root, start=False, retry=RetryPolicy(max_attempts=1, initial_interval=0.01)
    )
    memory = TieredMemory(store, embeddings=emb, writer=writer)
    memory._owns_store = True
    register_memory_handlers(writer, memory.for_user)

    def boom(payload: dict[str, Any], store: Any) -> None:
        raise RuntimeError("this write always fails (becomes a dead letter)")

    writer.register("test.boom", boom)
    writer.start()
    return memory


def populate(memory: TieredMemory, uid: str, secrets: list[str]) -> None:
    s0, s1, s2, s3 = secrets
    for agent in (None, "planner"):
        u = memory.for_user(uid, agent)
        u.semantic.store_fact(uid, f"Loves {s0} music", confidence=0.9)
        u.remember(f"I live in {s1}.")
        u.episodic.record(
            Episode(
                task_description=f"Plan a trip to {s1}",
                outcome="failure",
                reflection=f"{s2} was closed",
                trajectory=[TrajectoryStep(action="tool_call: booking", observation=f"error {s3}")],
            )
        )
        u.procedural.record_tool_use(
            ToolUsageRecord(tool_name="booking", success=False, error_message=f"{s3} down")
        )
        u.procedural.register_strategy(f"{s0} strategy", f"call {s2} first")
        u.procedural.set_preference("city", s1)
        # Durable write-back: queued, applied, and one dead letter in the outbox.
        u.queue_episode(Episode(task_description=f"queued {s0} {s2}", outcome="success"))
        u.queue_remember(f"My favourite band is {s3}.")
        u.queue_tool_use(ToolUsageRecord(tool_name="maps", success=True, context=s2))
        memory.writer.submit(  # type: ignore[union-attr]
            WriteOp("test.boom", {"note": f"{s0} {s1}"}, namespace=u.scope.user_prefix)
        )
    memory.flush()
    main = memory.for_user(uid)
    assert main.forget(f"Loves {s0} music")  # soft delete: trash + audit record
    assert main.consolidate().episodes_processed >= 1  # consolidation cursor and run records


def strings_of(uid: str, secrets: list[str]) -> list[bytes]:
    return [s.encode() for s in [uid, *secrets]] + [s.lower().encode() for s in secrets]


def outbox_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.glob("outbox.sqlite3*")) if p.is_file())


def test_forget_user_removes_every_record_and_string(engine: str, workdir: Path) -> None:
    memory = open_with_writer(engine, workdir)
    try:
        populate(memory, VICTIM, SECRETS)
        populate(memory, OTHER, ["keepsecretzz", "Keepville", "keepjamzz", "keepbandzz"])
        assert memory.writer is not None and memory.writer.dead_letters()
        assert any(s.encode() in outbox_bytes(workdir) for s in SECRETS)  # the check can fail
        other_before = sorted((r["namespace"], r["key"]) for r in memory.export_user(OTHER))

        deleted = memory.forget_user(VICTIM.upper())  # any spelling of the id
        assert deleted > 0

        items = scan_store(memory.store)
        for item in items:
            assert item.namespace[1:2] != (VICTIM,), item
            text = repr((item.namespace, item.key, item.value)).encode()
            for needle in strings_of(VICTIM, SECRETS):
                assert needle not in text, (needle, item.namespace)
        assert list(memory.export_user(VICTIM)) == []
        assert VICTIM not in memory.users()
        assert memory.for_user(VICTIM).search(SECRETS[0]) == []

        # Only that a deletion happened is kept, without the id or any content.
        records = [i for i in items if tuple(i.namespace) == DELETIONS_NAMESPACE]
        assert len(records) == 1
        assert records[0].value["user_sha256"] == hashlib.sha256(VICTIM.encode()).hexdigest()
        assert records[0].value["records"] == deleted

        # The outbox holds none of the victim's bytes (queued, applied or dead).
        assert memory.writer.dead_letters() == [
            d for d in memory.writer.dead_letters() if d.namespace[1] == OTHER
        ]
        blob = outbox_bytes(workdir)
        for needle in strings_of(VICTIM, SECRETS):
            assert needle not in blob, needle

        # The other user is untouched.
        assert sorted((r["namespace"], r["key"]) for r in memory.export_user(OTHER)) == (
            other_before
        )
    finally:
        memory.close()
    blob = outbox_bytes(workdir)  # and still none after close (WAL checkpointed)
    for needle in strings_of(VICTIM, SECRETS):
        assert needle not in blob, needle


def test_forget_user_star_is_rejected_and_forgets_nobody(memory: TieredMemory) -> None:
    memory.for_user("alice").remember("I live in Lyon.")
    with pytest.raises(InvalidInputError, match="reserved"):
        memory.forget_user("*")
    assert list(memory.export_user("alice"))


def _files_holding(root: Path, needles: list[bytes]) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): needle
        for path in root.rglob("*")
        if path.is_file()
        for needle in needles
        if needle in path.read_bytes()
    }


def test_forgotten_strings_are_gone_from_the_embedded_store_files(workdir: Path) -> None:
    """Deleted points stay in Edge's segments and WAL: ``forget_user`` purges them."""
    memory = open_with_writer("embedded", workdir)
    needles = strings_of(VICTIM, SECRETS)
    try:
        populate(memory, VICTIM, SECRETS)
        populate(memory, OTHER, ["keepsecretzz", "Keepville", "keepjamzz", "keepbandzz"])
        memory.forget_user(VICTIM, purge=False)
        assert _files_holding(workdir / "store", needles)  # deleted, but still on disk
        memory.forget_user(VICTIM)  # purges by default (nothing left to delete)
        other = memory.for_user(OTHER)
        assert other.semantic.get_facts(OTHER)  # the other user's data survived the rewrite
        assert other.search("Keepville")
    finally:
        memory.close()
    assert _files_holding(workdir, needles) == {}


def test_purge_deleted_reports_the_rewrite(workdir: Path) -> None:
    memory = open_with_writer("embedded", workdir)
    try:
        populate(memory, VICTIM, SECRETS)
        memory.forget_user(VICTIM, purge=False)
        report = memory.store.purge_deleted()  # type: ignore[attr-defined]
        assert report.outcome == "swapped" and report.purged
    finally:
        memory.close()
