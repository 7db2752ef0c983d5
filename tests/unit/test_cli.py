"""The ``tiered-memory`` command line, on the real default store (embedded Qdrant, bundled model).

The demo runs once per module into a kept directory; the other commands are
run against that directory.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from langchain_tiered_memory import Episode, TieredMemory
from langchain_tiered_memory.cli import commands
from langchain_tiered_memory.cli.commands import main

pytestmark = pytest.mark.integration

WIDTH = "110"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def run(*argv: str, err: io.StringIO | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), err if err is not None else io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def run_on_terminal(*argv: str) -> tuple[int, str, str]:
    """Run with ``stderr`` looking like a terminal, as in an interactive shell."""
    return run(*argv, err=_Terminal())


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    path = tmp_path_factory.mktemp("cli") / "memory"
    code, out, err = run("demo", "--path", str(path), "--width", WIDTH)
    assert code == 0, err
    return path, out


def answers(story_text: str) -> tuple[str, str]:
    """The WITH and WITHOUT memory answers of one story, from the side-by-side table."""
    lines = story_text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("WITH memory"))
    split = lines[start].index(" | ")
    left, right = [], []
    for line in lines[start + 2 :]:
        if not line.strip():
            break
        left.append(line[:split].strip())
        right.append(line[split + 3 :].strip())
    return " ".join(left), " ".join(right)


def stories(out: str) -> list[str]:
    parts = out.split("\nDone in ")[0].split("== Story ")[1:]
    assert len(parts) == 3
    return parts


@pytest.mark.parametrize(
    ("index", "lesson"),
    [(0, "shellfish"), (1, "Read the pod logs first"), (1, "DATABASE_URL"), (2, "orders_v2")],
)
def test_demo_session_two_remembers_and_the_no_memory_run_does_not(
    demo: tuple[Path, str], index: int, lesson: str
) -> None:
    with_memory, without_memory = answers(stories(demo[1])[index])
    assert lesson in with_memory
    assert lesson not in without_memory
    assert "I have no memories that bear on this." in without_memory


def test_demo_prints_the_context_with_sections_and_token_counts(demo: tuple[Path, str]) -> None:
    allergy, deployment, endpoint = stories(demo[1])
    assert "section               | tokens" in allergy
    assert "\nprofile " in allergy and "- Allergic to shellfish" in allergy
    assert "\nexperiences " in deployment and "## past tasks and lessons" in deployment
    assert "\nwarnings " in endpoint and "410 Gone: use orders_v2" in endpoint
    for story in (allergy, deployment, endpoint):
        assert "What session 2 knows from memory (" in story
        assert " of 1000 tokens):" in story
        assert "WITHOUT memory (0 tokens of context)" in story
        assert all(len(line) <= int(WIDTH) for line in story.splitlines())


def test_demo_keeps_its_memory_for_inspection(demo: tuple[Path, str]) -> None:
    path, out = demo
    assert f"Memory directory: {path}\n" in out
    assert (path / "store").is_dir()
    assert "Done in " in out


def test_demo_refuses_a_directory_that_is_not_empty(demo: tuple[Path, str]) -> None:
    code, out, err = run("demo", "--path", str(demo[0]))
    assert code == 2 and out == ""
    assert err.startswith("tiered-memory: error: ") and "not an empty directory" in err
    assert err.count("\n") == 1


def test_demo_rejects_an_unknown_model(tmp_path: Path) -> None:
    code, _, err = run("demo", "--path", str(tmp_path / "m"), "--model", "gpt-banana")
    assert code == 2 and "unknown model spec 'gpt-banana'" in err


def test_inspect_shows_facts_episodes_and_tools(demo: tuple[Path, str]) -> None:
    path = str(demo[0])
    code, out, _ = run("inspect", "--path", path, "--user", "alice", "--width", WIDTH)
    assert code == 0 and "Allergic to shellfish" in out and "\nFacts (" in out
    code, out, _ = run("inspect", "--path", path, "--user", "dana", "--width", WIDTH)
    assert code == 0 and "\nEpisodes (" in out and "Read the pod logs first" in out
    assert "kubectl_rollout_restart" in out  # learned by the consolidation pass
    code, out, _ = run("inspect", "--path", path, "--user", "Sam", "--width", WIDTH)
    assert code == 0 and "Tools (2)" in out
    row = next(line for line in out.splitlines() if line.startswith("orders_v1 "))
    assert "| 1    | 0%  " in row and "410 Gone: use orders_v2" in row


def test_stats_as_table_and_json(demo: tuple[Path, str]) -> None:
    code, out, _ = run("stats", "--path", str(demo[0]), "--width", WIDTH)
    assert code == 0
    assert "user  | episodic | procedural | semantic | total" in out
    code, out, _ = run("stats", "--path", str(demo[0]), "--json")
    stats = json.loads(out)
    assert sorted(stats["users"]) == ["alice", "dana", "sam"]
    assert stats["users"]["dana"]["episodic"] >= 1 and stats["users"]["sam"]["procedural"] >= 2
    assert stats["consolidation"]["runs"] >= 3 and stats["errors"] == {}


def test_export_import_round_trip(demo: tuple[Path, str], tmp_path: Path) -> None:
    exported = {}
    for user in ("alice", "dana", "sam"):
        out_file = tmp_path / f"{user}.jsonl"
        code, out, _ = run("export", "--path", str(demo[0]), "--user", user, "--out", str(out_file))
        records = [json.loads(line) for line in out_file.read_text().splitlines()]
        assert code == 0 and out.startswith(f"Exported {len(records)} records of user '{user}'")
        exported[user] = sorted((r["key"], json.dumps(r["value"], sort_keys=True)) for r in records)
    assert {"semantic", "episodic", "procedural"} <= {
        json.loads(line)["namespace"][3]
        for user in exported
        for line in (tmp_path / f"{user}.jsonl").read_text().splitlines()
    }
    target = tmp_path / "copy"
    files = [str(tmp_path / f"{user}.jsonl") for user in exported]
    code, out, _ = run("import", "--path", str(target), "--keep-file-users", *files)
    total = sum(len(keys) for keys in exported.values())
    assert code == 0 and f"Imported {total} records from 3 file(s)" in out
    with TieredMemory.open(target) as memory:
        assert memory.users() == ["alice", "dana", "sam"]
        for user, records in exported.items():
            again = sorted(
                (r["key"], json.dumps(r["value"], sort_keys=True)) for r in memory.export_user(user)
            )
            assert again == records
        # Imported records are indexed again: retrieval finds them.
        ctx = memory.for_user("alice").build_memory_context("dinner ideas?")
        assert "Allergic to shellfish" in ctx.text
        assert "orders_v2" in memory.for_user("sam").build_memory_context("order status").text


def test_consolidate_reports_and_draws_progress(tmp_path: Path) -> None:
    with TieredMemory.open(tmp_path / "m") as memory:
        erin = memory.for_user("erin")
        for task in ("Book a table; I'm vegetarian.", "Plan the team offsite in Lyon"):
            erin.queue_episode(Episode(task_description=task, outcome="success"))
        memory.flush()
    code, out, err = run_on_terminal("consolidate", "--path", str(tmp_path / "m"), "--user", "erin")
    assert code == 0
    assert "Consolidated the memory of user 'erin'" in out
    assert "episodes processed       | 2" in out
    assert "episodes: 100%" in err and "2/2" in err  # a tqdm bar per phase, on stderr
    code, out, err = run_on_terminal(
        "consolidate", "--path", str(tmp_path / "m"), "--user", "erin", "--quiet"
    )
    assert code == 0 and err == "" and "episodes processed       | 0" in out


def test_consolidate_draws_no_progress_without_a_terminal(tmp_path: Path) -> None:
    with TieredMemory.open(tmp_path / "m") as memory:
        memory.for_user("erin").queue_episode(Episode(task_description="Plan", outcome="success"))
        memory.flush()
    code, out, err = run("consolidate", "--path", str(tmp_path / "m"), "--user", "erin")
    assert code == 0 and "episodes processed       | 1" in out
    assert err == ""  # stderr is not a terminal: the report alone, no bars


def test_a_closed_pipe_ends_the_command_quietly(demo: tuple[Path, str]) -> None:
    """``tiered-memory stats | head``: the reader leaves before the first line is written."""
    path, _ = demo
    proc = subprocess.Popen(
        [sys.executable, "-m", "langchain_tiered_memory", "stats", "--path", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the command prints anything
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert err == ""


def test_ctrl_c_exits_130_with_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def interrupted(args: object) -> int:
        print("partial report")
        raise KeyboardInterrupt

    monkeypatch.setattr(commands, "_cmd_stats", interrupted)
    code, out, err = run("stats", "--path", str(tmp_path))
    assert code == 130
    assert err == "tiered-memory: interrupted\n"
    assert out == "partial report\n"


@pytest.mark.parametrize("flush", [True, False], ids=["while-printing", "at-exit"])
def test_a_reader_gone_mid_output_ends_the_command_quietly(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, flush: bool
) -> None:
    """``tiered-memory stats | head``: exit 141, no error line, later output is dropped."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has gone
    stdout = open(write_end, "w", encoding="utf-8")  # noqa: SIM115 - closed below

    def report(args: object) -> int:
        print("user | total", flush=flush)  # unflushed: main's final flush breaks the pipe
        return 0

    monkeypatch.setattr(commands, "_cmd_stats", report)
    err = io.StringIO()
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(err):
            code = main(["stats", "--path", str(tmp_path)])
        assert code == 141
        assert err.getvalue() == ""
        # Anything printed later (at interpreter exit) goes to /dev/null, not to a broken pipe.
        assert os.path.samestat(os.fstat(stdout.fileno()), os.stat(os.devnull))
        print("after the reader left", file=stdout, flush=True)
    finally:
        stdout.close()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["inspect", "--user", "alice"], "no memory store at"),
        (["stats"], "no memory store at"),
        (["export", "--user", "alice", "--out", "x.jsonl"], "no memory store at"),
        (["consolidate", "--user", "alice"], "no memory store at"),
    ],
)
def test_missing_directory_is_a_one_line_error(
    tmp_path: Path, argv: list[str], message: str
) -> None:
    code, out, err = run(*argv, "--path", str(tmp_path / "nowhere"))
    assert code == 2 and out == ""
    assert err.startswith(f"tiered-memory: error: {message}") and err.count("\n") == 1
    assert not (tmp_path / "nowhere").exists()


def test_unknown_user_names_the_known_ones(demo: tuple[Path, str]) -> None:
    for command in ("inspect", "consolidate"):
        code, _, err = run(command, "--path", str(demo[0]), "--user", "bob")
        assert code == 2
        assert "no memories of user 'bob'" in err and "alice, dana, sam" in err


def test_locked_directory_is_a_one_line_error(demo: tuple[Path, str]) -> None:
    with TieredMemory.open(demo[0]):
        code, _, err = run("stats", "--path", str(demo[0]))
    assert code == 2
    assert "already open" in err and err.count("\n") == 1


def test_import_of_a_missing_or_bad_file(tmp_path: Path) -> None:
    missing = str(tmp_path / "none.jsonl")
    code, _, err = run("import", "--path", str(tmp_path / "m"), "--user", "a", missing)
    assert code == 2 and "no such file" in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"hello": "world"}\n')
    code, _, err = run("import", "--path", str(tmp_path / "m"), "--user", "a", str(bad))
    assert code == 2 and "is not a langchain-tiered-memory export record" in err


def test_import_writes_only_to_the_users_named(demo: tuple[Path, str], tmp_path: Path) -> None:
    alice = tmp_path / "alice.jsonl"
    assert run("export", "--path", str(demo[0]), "--user", "alice", "--out", str(alice))[0] == 0
    shouted = tmp_path / "shouted.jsonl"
    shouted.write_text(alice.read_text().replace('"alice"', '"ALICE"'))
    target = str(tmp_path / "copy")

    code, _, err = run("import", "--path", target, str(shouted))
    assert code == 2 and "--user U" in err and "--keep-file-users" in err and err.count("\n") == 1
    assert not Path(target).exists()  # refused before the directory was made
    code, _, err = run("import", "--path", target, "--map", "bob=carol", str(shouted))
    assert code == 2 and "user 'alice'" in err and "nothing was imported" in err
    assert run("import", "--path", target, "--user", "a", "--keep-file-users", str(alice))[0] == 2
    assert run("import", "--path", target, "--map", "no-equals-sign", str(alice))[0] == 2

    assert run("import", "--path", target, "--user", "Zoe", str(alice))[0] == 0
    assert run("import", "--path", target, "--map", "ALICE=carol", str(shouted))[0] == 0
    assert run("import", "--path", target, "--keep-file-users", str(shouted))[0] == 0
    with TieredMemory.open(target) as memory:
        assert memory.users() == ["alice", "carol", "zoe"]
        sizes = {len(list(memory.export_user(u))) for u in ("alice", "carol", "zoe")}
        assert sizes == {len(alice.read_text().splitlines())}


def test_usage_errors_exit_2_and_help_exits_0() -> None:
    assert run()[0] == 2
    assert run("inspect", "--path", "x")[0] == 2  # --user missing
    assert run("demo", "--budget", "0")[0] == 2
    code, out, _ = run("--help")
    assert code == 0
    for command in ("demo", "inspect", "export", "import", "consolidate", "stats"):
        assert command in out


def test_python_dash_m_runs_the_same_main(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["langchain_tiered_memory", "--version"])
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exc:
        runpy.run_module("langchain_tiered_memory", run_name="__main__")
    assert exc.value.code == 0 and out.getvalue().startswith("tiered-memory 0.")
