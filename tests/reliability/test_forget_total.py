"""``forget_user`` is total: nothing counted, deferred or imported brings the user back.

* Retrievals count accesses in process memory; forgetting drops the user's
  unsaved counts, and a retrieval that was still running cannot save one later.
* After a reopen the user is not listed, and no file holds their text.
* ``forget_user(..., purge=False)`` leaves the text in the store's files only
  until the next open, which finishes the purge.
* Records written by ``import_jsonl`` are reached too.

Every variant on the embedded store ends with a raw-byte scan of every file
under the memory directory for the user's unique canary strings.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory import Episode, TieredMemory
from langchain_tiered_memory.erasure import ERASURES_NAMESPACE
from langchain_tiered_memory.testing.fakes import HashingEmbeddings
from langchain_tiered_memory.tiers.common.access import save_access

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


def open_memory(root: Path) -> TieredMemory:
    return TieredMemory.open(root, embeddings=HashingEmbeddings(size=64))


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
    assert [r async for r in memory.aexport_user(VICTIM)] == []


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
