"""Import writes only to users the caller names, under ids normalised as ``for_user`` does.

A file's user labels are data from outside: a label such as ``"VICTIM"`` must
land as the user ``"victim"`` (whom ``for_user`` and ``forget_user`` reach), and
records for a user the caller did not name are refused, so a file relabelled
to ``bob`` cannot plant memories in bob's context.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from reliability_helpers import scan_store

from langchain_tiered_memory import Episode, InvalidInputError, TieredMemory
from langchain_tiered_memory.testing.fakes import HashingEmbeddings

CANARIES = ["zqcanaryfact", "Quokkaville", "xylocanaryep", "marzipanzq", "snorkelqz"]


def write_user(memory: TieredMemory, uid: str, agent: str | None = None) -> None:
    user = memory.for_user(uid, agent)
    user.semantic.store_fact(uid, f"Loves {CANARIES[0]} music", confidence=0.9)
    user.remember(f"I live in {CANARIES[1]}.")
    user.episodic.record(
        Episode(task_description=f"Plan {CANARIES[2]}", outcome="success", reflection=CANARIES[3])
    )
    user.procedural.set_preference("snack", CANARIES[4])


def relabel(source: Path, target: Path, labels: dict[str, str]) -> int:
    """Copy an export file, replacing user (and agent) labels as a hand-edited file would."""
    lines = []
    for line in source.read_text("utf-8").splitlines():
        record = json.loads(line)
        record["namespace"] = [labels.get(label, label) for label in record["namespace"]]
        lines.append(json.dumps(record))
    target.write_text("\n".join(lines) + "\n", "utf-8")
    return len(lines)


def export_of(memory: TieredMemory, uid: str, path: Path, agent: str | None = None) -> Path:
    write_user(memory, uid, agent)
    memory.export_jsonl(uid, path)
    memory.forget_user(uid)
    return path


def user_labels(memory: TieredMemory) -> set[str]:
    return {ns[1] for ns in memory.store.list_namespaces(prefix=("tiered_memory",), max_depth=2)}


Importer = Callable[..., int]


@pytest.fixture(params=["sync", "async"])
def run_import(request: pytest.FixtureRequest) -> Callable[..., int]:
    """Calls ``import_jsonl`` or ``aimport_jsonl`` with the same arguments."""

    def call(memory: TieredMemory, path: Path, **kwargs: Any) -> int:
        if request.param == "sync":
            return memory.import_jsonl(path, **kwargs)
        import asyncio

        coro: Coroutine[Any, Any, int] = memory.aimport_jsonl(path, **kwargs)
        return asyncio.run(coro)

    return call


def test_a_label_in_another_spelling_lands_as_the_normalised_user(
    memory: TieredMemory, workdir: Path, run_import: Importer
) -> None:
    exported = export_of(memory, "victim", workdir / "victim.jsonl", agent="planner")
    count = relabel(exported, workdir / "upper.jsonl", {"victim": "VICTIM", "planner": "PLANNER"})
    assert run_import(memory, workdir / "upper.jsonl", user_id="victim") == count
    assert memory.users() == ["victim"]
    assert user_labels(memory) == {"victim"}
    assert len(list(memory.export_user("VICTIM"))) == count  # any spelling reaches it
    assert memory.for_user("victim", "planner").semantic.get_facts("victim")
    assert memory.forget_user("victim") == count
    assert memory.users() == [] and list(memory.export_user("victim")) == []


def test_keep_file_users_keeps_each_records_user_normalised(
    memory: TieredMemory, workdir: Path, run_import: Importer
) -> None:
    exported = export_of(memory, "victim", workdir / "victim.jsonl")
    count = relabel(exported, workdir / "upper.jsonl", {"victim": " VICTIM "})
    assert run_import(memory, workdir / "upper.jsonl", keep_file_users=True) == count
    assert memory.users() == ["victim"] and user_labels(memory) == {"victim"}


def test_import_without_a_target_refuses_and_writes_nothing(
    memory: TieredMemory, workdir: Path, run_import: Importer
) -> None:
    path = export_of(memory, "alice", workdir / "alice.jsonl")
    with pytest.raises(InvalidInputError, match=r"user_id=.*user_map=.*keep_file_users=True"):
        run_import(memory, path)
    assert memory.users() == []


def test_records_for_a_user_not_named_are_refused(
    memory: TieredMemory, workdir: Path, run_import: Importer
) -> None:
    path = export_of(memory, "alice", workdir / "alice.jsonl")
    relabel(path, workdir / "bob.jsonl", {"alice": "bob"})
    with pytest.raises(InvalidInputError, match=r"bob\.jsonl:1: .*user 'bob'.*user_map="):
        run_import(memory, workdir / "bob.jsonl", user_map={"alice": "alice"})
    assert memory.users() == []


def test_user_id_imports_a_file_as_that_user(
    memory: TieredMemory, workdir: Path, run_import: Importer
) -> None:
    path = export_of(memory, "alice", workdir / "alice.jsonl")
    count = run_import(memory, path, user_id="Carol")
    assert memory.users() == ["carol"]
    assert len(list(memory.export_user("carol"))) == count
    texts = " ".join(r["value"].get("content", "") for r in memory.export_user("carol"))
    assert CANARIES[0] in texts


def test_user_map_moves_named_users_and_refuses_the_rest_unless_kept(
    memory: TieredMemory, workdir: Path, run_import: Importer
) -> None:
    write_user(memory, "alice")
    write_user(memory, "bob")
    both = workdir / "both.jsonl"
    with both.open("w", encoding="utf-8") as fh:
        for uid in ("alice", "bob"):
            fh.writelines(json.dumps(r) + "\n" for r in memory.export_user(uid))
    memory.forget_user("alice")
    memory.forget_user("bob")

    with pytest.raises(InvalidInputError, match="user 'bob'"):
        run_import(memory, both, user_map={"ALICE": "dora"})
    assert memory.users() == []
    with pytest.raises(InvalidInputError, match=r"users 'alice', 'bob'.*user_map="):
        run_import(memory, both, user_id="dora")  # two users would merge into one
    assert memory.users() == []

    run_import(memory, both, user_map={"ALICE": "dora"}, keep_file_users=True)
    assert memory.users() == ["bob", "dora"]


@pytest.mark.parametrize(
    ("label", "message"),
    [("bad\x00user", "control characters"), ("*", "reserved"), ("   ", "empty")],
)
def test_an_invalid_user_label_is_refused_naming_the_line(
    memory: TieredMemory, workdir: Path, label: str, message: str
) -> None:
    path = export_of(memory, "alice", workdir / "alice.jsonl")
    relabel(path, workdir / "bad.jsonl", {"alice": label})
    with pytest.raises(InvalidInputError, match=rf"bad\.jsonl:1: .*{message}"):
        memory.import_jsonl(workdir / "bad.jsonl", keep_file_users=True)
    assert memory.users() == []


def test_conflicting_targets_are_refused(memory: TieredMemory, workdir: Path) -> None:
    path = export_of(memory, "alice", workdir / "alice.jsonl")
    with pytest.raises(InvalidInputError, match="user_id or user_map"):
        memory.import_jsonl(path, user_id="a", user_map={"alice": "b"})
    with pytest.raises(InvalidInputError, match="keep_file_users"):
        memory.import_jsonl(path, user_id="a", keep_file_users=True)


def test_no_canary_of_an_imported_then_forgotten_user_is_left_on_disk(workdir: Path) -> None:
    source = TieredMemory.open(workdir / "source", embeddings=HashingEmbeddings(size=64))
    try:
        write_user(source, "victim")
        source.export_jsonl("victim", workdir / "victim.jsonl")
    finally:
        source.close()
    relabel(workdir / "victim.jsonl", workdir / "upper.jsonl", {"victim": "VICTIM"})
    assert any(c.encode() in (workdir / "upper.jsonl").read_bytes() for c in CANARIES)

    root = workdir / "memory"
    memory = TieredMemory.open(root, embeddings=HashingEmbeddings(size=64))
    try:
        memory.import_jsonl(workdir / "upper.jsonl", user_id="victim")
        on_disk = b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file())
        assert all(c.encode() in on_disk or c.lower().encode() in on_disk for c in CANARIES[:2])
        assert memory.forget_user("victim") > 0
        assert scan_store(memory.store) == [
            i for i in scan_store(memory.store) if i.namespace[0] != "tiered_memory"
        ]
    finally:
        memory.close()
    left = {
        (str(p.relative_to(root)), c)
        for p in root.rglob("*")
        if p.is_file()
        for c in CANARIES
        if c.encode() in p.read_bytes() or c.lower().encode() in p.read_bytes()
    }
    assert left == set()
