"""Opening a memory at a bad path, and using one after ``close()``, fail with clear errors.

Each error is a :class:`TieredMemoryError` subclass whose message names the path
or the method and says what to do instead.
"""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory import (
    Episode,
    MemoryClosedError,
    MemoryPathError,
    Outcome,
    TieredMemory,
    TieredMemoryError,
    ToolUsageRecord,
    UserMemory,
)
from langchain_tiered_memory.cli.commands import main
from langchain_tiered_memory.testing.fakes import HashingEmbeddings
from langchain_tiered_memory.tiers.common.scope import normalize_id


def open_memory(path: str | os.PathLike[str]) -> TieredMemory:
    return TieredMemory.open(path, embeddings=HashingEmbeddings())


# -- bad paths ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["", "   "])
def test_an_empty_path_is_refused_and_nothing_lands_in_the_cwd(
    path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(MemoryPathError, match=r"is empty: .*TieredMemory.open\('./memory'\)"):
        open_memory(path)
    assert list(tmp_path.iterdir()) == []


def test_a_path_that_is_a_file_is_refused_and_left_alone(tmp_path: Path) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("mine")
    with pytest.raises(MemoryPathError, match=r"notes\.txt is a file, not a directory") as info:
        open_memory(target)
    assert isinstance(info.value, TieredMemoryError) and isinstance(info.value, ValueError)
    assert target.read_text() == "mine"


def test_a_path_under_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(MemoryPathError, match="part of that path is a file") as info:
        open_memory(tmp_path / "notes.txt" / "memory")
    assert str(tmp_path / "notes.txt" / "memory") in str(info.value)
    assert isinstance(info.value.__cause__, OSError)


def test_a_path_of_the_wrong_type_is_refused() -> None:
    with pytest.raises(MemoryPathError, match="got int 42"):
        open_memory(42)  # type: ignore[arg-type]


def test_a_good_path_is_created(tmp_path: Path) -> None:
    with open_memory(tmp_path / "a" / "b") as memory:
        memory.for_user("alice").remember("I'm allergic to shellfish.")
    assert (tmp_path / "a" / "b" / "store").is_dir()


# -- use after close ----------------------------------------------------------------------

EPISODE = Episode(task_description="Book a table", outcome=Outcome.SUCCESS)
TOOL_USE = ToolUsageRecord(tool_name="search", success=True)

MEMORY_CALLS: dict[str, Callable[[TieredMemory, Path], Any]] = {
    "for_user": lambda m, p: m.for_user("alice"),
    "users": lambda m, p: m.users(),
    "ausers": lambda m, p: m.ausers(),
    "export_user": lambda m, p: m.export_user("alice"),
    "aexport_user": lambda m, p: m.aexport_user("alice"),
    "export_jsonl": lambda m, p: m.export_jsonl("alice", p / "out.jsonl"),
    "aexport_jsonl": lambda m, p: m.aexport_jsonl("alice", p / "out.jsonl"),
    "import_jsonl": lambda m, p: m.import_jsonl(p / "in.jsonl", user_id="alice"),
    "aimport_jsonl": lambda m, p: m.aimport_jsonl(p / "in.jsonl", user_id="alice"),
    "forget_user": lambda m, p: m.forget_user("alice"),
    "aforget_user": lambda m, p: m.aforget_user("alice"),
    "resume_erasures": lambda m, p: m.resume_erasures(),
    "aresume_erasures": lambda m, p: m.aresume_erasures(),
    "stats": lambda m, p: m.stats(),
    "astats": lambda m, p: m.astats(),
    "flush": lambda m, p: m.flush(),
    "aflush": lambda m, p: m.aflush(),
}
"""Every public method of ``TieredMemory`` but ``open``, ``close`` and ``aclose``."""

USER_CALLS: dict[str, Callable[[UserMemory], Any]] = {
    "build_memory_context": lambda u: u.build_memory_context("Dinner ideas?"),
    "abuild_memory_context": lambda u: u.abuild_memory_context("Dinner ideas?"),
    "remember": lambda u: u.remember("I'm vegetarian."),
    "aremember": lambda u: u.aremember("I'm vegetarian."),
    "queue_remember": lambda u: u.queue_remember("I'm vegetarian."),
    "aqueue_remember": lambda u: u.aqueue_remember("I'm vegetarian."),
    "queue_episode": lambda u: u.queue_episode(EPISODE),
    "aqueue_episode": lambda u: u.aqueue_episode(EPISODE),
    "queue_tool_use": lambda u: u.queue_tool_use(TOOL_USE),
    "aqueue_tool_use": lambda u: u.aqueue_tool_use(TOOL_USE),
    "consolidate": lambda u: u.consolidate(),
    "aconsolidate": lambda u: u.aconsolidate(),
    "search": lambda u: u.search("diet"),
    "asearch": lambda u: u.asearch("diet"),
    "forget": lambda u: u.forget("vegetarian"),
    "aforget": lambda u: u.aforget("vegetarian"),
}
"""Every public method of ``UserMemory``."""


def public_methods(cls: type) -> set[str]:
    return {
        name
        for name, value in vars(cls).items()
        if not name.startswith("_") and callable(value) and not isinstance(value, property)
    }


def test_the_lists_above_cover_every_public_method() -> None:
    assert public_methods(TieredMemory) - {"open", "close", "aclose"} == set(MEMORY_CALLS)
    assert public_methods(UserMemory) == set(USER_CALLS)


async def call(result: Any) -> None:
    """Run what a call returned: await a coroutine, iterate an iterator."""
    if inspect.isawaitable(result):
        await result
    elif hasattr(result, "__anext__"):
        async for _ in result:
            pass
    elif hasattr(result, "__next__"):
        list(result)


@pytest.fixture
def closed(tmp_path: Path) -> tuple[TieredMemory, UserMemory]:
    memory = open_memory(tmp_path / "memory")
    alice = memory.for_user("alice")
    alice.remember("I'm allergic to shellfish.")
    memory.close()
    return memory, alice


@pytest.mark.parametrize("method", sorted(MEMORY_CALLS))
async def test_every_memory_method_raises_after_close(
    method: str, closed: tuple[TieredMemory, UserMemory], tmp_path: Path
) -> None:
    memory, _ = closed
    with pytest.raises(MemoryClosedError) as info:
        await call(MEMORY_CALLS[method](memory, tmp_path))
    message = str(info.value)
    assert f"{method}() was called on the memory at {tmp_path / 'memory'} after close()" in message
    assert "open it again with TieredMemory.open(" in message
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("method", sorted(USER_CALLS))
async def test_every_user_method_raises_after_close(
    method: str, closed: tuple[TieredMemory, UserMemory], caplog: pytest.LogCaptureFixture
) -> None:
    _, alice = closed
    with caplog.at_level(logging.WARNING), pytest.raises(MemoryClosedError, match=method):
        await call(USER_CALLS[method](alice))
    assert caplog.records == []  # refused at the door: no tier was asked, nothing logged


def test_closing_twice_is_harmless_and_a_store_built_memory_says_how_to_reopen() -> None:
    memory = TieredMemory(InMemoryStore())
    alice = memory.for_user("alice")
    memory.close()
    memory.close()
    with pytest.raises(MemoryClosedError, match=r"open it again with TieredMemory\(store\)"):
        alice.build_memory_context("Dinner ideas?")


# -- user ids -----------------------------------------------------------------------------


def test_user_ids_are_case_insensitive_and_documented() -> None:
    memory = TieredMemory(InMemoryStore())
    assert memory.for_user("Alice") is memory.for_user("  alice ")
    assert memory.for_user("Alice").user_id == "alice" == normalize_id("ALICE")
    assert "case-insensitive" in (normalize_id.__doc__ or "")
    assert 'for_user("Alice")' in (TieredMemory.for_user.__doc__ or "")


@pytest.mark.integration
def test_the_cli_finds_a_user_as_for_user_does(tmp_path: Path) -> None:
    with TieredMemory.open(tmp_path / "memory") as memory:
        memory.for_user("Alice  Smith").remember("I'm allergic to shellfish.")
    out = tmp_path / "alice.jsonl"
    code = main(
        ["export", "--path", str(tmp_path / "memory"), "--user", " ALICE\tsmith", "--out", str(out)]
    )
    assert code == 0 and out.read_text().count("\n") >= 1
