"""The ``tiered-memory`` console script: the demo, and tools to look after a memory directory.

Commands::

    tiered-memory demo [--path DIR] [--model offline|openai:<model>] [--budget N]
    tiered-memory inspect --path DIR --user U [--limit N]
    tiered-memory export --path DIR --user U --out FILE
    tiered-memory import --path DIR (--user U | --map OLD=NEW ... | --keep-file-users) FILE ...
    tiered-memory consolidate --path DIR --user U
    tiered-memory stats --path DIR [--json]
    tiered-memory verify --path DIR
    tiered-memory repair --path DIR

Every command exits with 0 on success and with 2 and a one-line message on
``stderr`` when something is wrong that the user can fix (a missing or locked
directory, an unknown user, a bad file). ``python -m langchain_tiered_memory``
runs the same commands.

Examples:
    >>> main(["--version"])  # doctest: +ELLIPSIS
    tiered-memory ...
    0
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from langchain_tiered_memory.cli.demo import (
    STORIES,
    create_runner,
    empty_memory_like,
    render_story,
    render_table,
    run_story,
)
from langchain_tiered_memory.errors import TieredMemoryError
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.tiers.common.scope import normalize_id

__all__ = ["main"]

PROG = "tiered-memory"


class CliError(Exception):
    """Something the user can fix; printed as one line, exit code 2."""


# -- opening memory directories ---------------------------------------------------------------


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


@contextmanager
def _open_existing(path: str) -> Iterator[TieredMemory]:
    root = Path(path)
    if not (root / "store").is_dir():
        raise CliError(
            f"no memory store at {root}: check --path (a directory made by "
            f"TieredMemory.open or `{PROG} demo --path DIR`)"
        )
    memory = TieredMemory.open(root)
    try:
        memory.flush()
        yield memory
    finally:
        memory.close()


def _check_user(memory: TieredMemory, path: str, user: str) -> str:
    users = memory.users()
    uid = normalize_id(user, what="--user")  # as for_user normalises it: "Alice" is "alice"
    if uid not in users:
        known = ", ".join(users) if users else "none"
        raise CliError(f"no memories of user {user!r} in {path} (users there: {known})")
    return uid


# -- commands ---------------------------------------------------------------------------------


def _cmd_demo(args: argparse.Namespace) -> int:
    if args.path is None:
        with tempfile.TemporaryDirectory(prefix="tiered-memory-demo-") as tmp:
            return _run_demo(Path(tmp), args, kept=False)
    root = Path(args.path)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise CliError(
            f"{root} is not an empty directory: the demo needs a fresh one "
            "(pass a new --path, or none for a temporary directory)"
        )
    return _run_demo(root, args, kept=True)


def _run_demo(root: Path, args: argparse.Namespace, *, kept: bool) -> int:
    from langchain_tiered_memory.chat_models import load_chat_model

    started = time.perf_counter()
    model = load_chat_model(args.model)
    print(f"Memory directory: {root}" + ("" if kept else " (temporary; --path DIR keeps it)"))
    note = " (deterministic, no network)" if args.model == "offline" else ""
    print(f"Model: {args.model}{note}. Embeddings: bundled all-MiniLM-L6-v2 (offline).")
    print("Turns run through the LangGraph memory agent (create_memory_agent).")
    print("Each story: session 1 writes memory; session 2 asks again, with and without it.\n")
    with TieredMemory.open(root) as memory:
        runner = create_runner(model, token_budget=args.budget)
        empty = empty_memory_like(memory)
        for n, story in enumerate(STORIES, 1):
            result = run_story(memory, runner, story, empty=empty)
            print(render_story(result, n, len(STORIES), width=args.width))
    print(f"Done in {time.perf_counter() - started:.1f} s.")
    if kept:
        users = ", ".join(s.user_id for s in STORIES)
        print(
            f"Users: {users}. Look inside: {PROG} inspect --path {root} --user {STORIES[0].user_id}"
        )
    return 0


def _cmd_inspect(args: argparse.Namespace) -> int:
    with _open_existing(args.path) as memory:
        uid = _check_user(memory, args.path, args.user)
        user = memory.for_user(uid)
        facts = [
            fact
            for entity in user.semantic.list_entities(limit=args.limit)
            for fact in user.semantic.get_facts(entity.entity_id)
        ]
        episodes = user.episodic.retrieve_recent(limit=args.limit)
        tools = user.procedural.get_all_tool_guidance()
    tables: list[tuple[str, list[str], list[list[object]]]] = [
        (
            f"Facts ({len(facts)})",
            ["entity", "fact", "confidence", "source", "last confirmed"],
            [
                [f.entity_id, f.content, f"{f.confidence:.2f}", f.source, _day(f.last_confirmed)]
                for f in facts[: args.limit]
            ],
        ),
        (
            f"Episodes ({len(episodes)})",
            ["created", "outcome", "task", "lesson"],
            [
                [_day(e.created_at), e.outcome.value, e.task_description, e.reflection]
                for e in episodes
            ],
        ),
        (
            f"Tools ({len(tools)})",
            ["tool", "uses", "success", "avg ms", "last error", "hint"],
            [
                [
                    g.tool_name,
                    g.total_uses,
                    f"{g.success_rate:.0%}",
                    f"{g.avg_execution_time_ms:.0f}",
                    g.last_error or "",
                    g.last_hint or "",
                ]
                for g in tools
            ],
        ),
    ]
    print(f"Memory of user {uid!r} in {args.path}")
    for title, headers, rows in tables:
        print(f"\n{title}")
        print(render_table(headers, rows, width=args.width))
    return 0


def _day(value: Any) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value is not None else ""


def _cmd_export(args: argparse.Namespace) -> int:
    with _open_existing(args.path) as memory:
        uid = _check_user(memory, args.path, args.user)
        count = memory.export_jsonl(uid, args.out)
    print(f"Exported {count} records of user {uid!r} to {args.out}")
    return 0


def _cmd_import(args: argparse.Namespace) -> int:
    if args.user is not None and (args.map or args.keep_file_users):
        raise CliError(
            "--user imports every record as one user: leave out --map and --keep-file-users"
        )
    if args.user is None and not args.map and not args.keep_file_users:
        raise CliError(
            "say whose memory the records become: --user U (each file as user U), "
            "--map OLD=NEW (repeatable), or --keep-file-users (each record's own user, normalised)"
        )
    sources = [Path(f) for f in args.files]
    for source in sources:
        if not source.is_file():
            raise CliError(f"no such file: {source} (give JSON Lines files from `{PROG} export`)")
    count = 0
    with TieredMemory.open(args.path) as memory:
        for source in sources:
            count += memory.import_jsonl(
                source,
                user_id=args.user,
                user_map=dict(args.map),
                keep_file_users=args.keep_file_users,
            )
    print(f"Imported {count} records from {len(sources)} file(s) into {args.path}")
    return 0


def _user_pair(text: str) -> tuple[str, str]:
    old, sep, new = text.partition("=")
    if not sep or not old.strip() or not new.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not OLD=NEW (e.g. alice=alice2)")
    return old, new


class _ProgressBars:
    """A ``progress(phase, done, total)`` callback drawing one tqdm bar per phase.

    Bars are drawn only when ``stderr`` is a terminal, so piped or logged output
    holds the report alone.
    """

    def __init__(self, disable: bool) -> None:
        self.disable = disable or not sys.stderr.isatty()
        self.phase: str | None = None
        self.bar: Any = None

    def __call__(self, phase: str, done: int, total: int) -> None:
        from tqdm import tqdm

        if phase != self.phase:
            self.close()
            self.phase = phase
            self.bar = tqdm(total=total, desc=phase, unit="item", disable=self.disable)
        self.bar.total = total
        self.bar.n = done
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _cmd_consolidate(args: argparse.Namespace) -> int:
    with _open_existing(args.path) as memory:
        uid = _check_user(memory, args.path, args.user)
        bars = _ProgressBars(disable=args.quiet)
        try:
            report = memory.for_user(uid).consolidate(progress=bars)
        finally:
            bars.close()
    rows: list[list[object]] = [
        ["episodes processed", report.episodes_processed],
        ["facts extracted", report.facts_extracted],
        ["tool uses learned", report.tool_uses_recorded],
        ["facts merged", report.facts_merged],
        ["forgotten (soft-deleted)", len(report.forgotten)],
        ["purged from trash", report.purged],
        ["errors", len(report.errors)],
    ]
    print(f"Consolidated the memory of user {uid!r}")
    print(render_table(["step", "count"], rows, width=args.width))
    for error in report.errors:
        print(f"error: {_one_line(error)}", file=sys.stderr)
    return 0 if report.ok else 1


def _cmd_stats(args: argparse.Namespace) -> int:
    with _open_existing(args.path) as memory:
        stats = memory.stats()
    if args.json:
        print(json.dumps(stats, indent=2, sort_keys=True, default=str))
        return 0
    tiers = sorted({t for counts in stats["users"].values() for t in counts} - {"total"})
    print(f"Memory in {args.path}: {stats['total_items']} items\n")
    print(
        render_table(
            ["user", *tiers, "total"],
            [
                [user, *(counts.get(t, 0) for t in tiers), counts["total"]]
                for user, counts in stats["users"].items()
            ],
            width=args.width,
        )
    )
    rows = [[key, _flat(stats[key])] for key in stats if key not in ("users", "total_items")]
    print()
    print(render_table(["figure", "value"], rows, width=args.width))
    return 0


def _containers(root: Path) -> list[Path]:
    """The collection directories of a memory directory (or of a store directory)."""
    store = root / "store" if (root / "store").is_dir() else root
    found = sorted(e for e in store.iterdir() if e.is_dir()) if store.is_dir() else []
    if not found:
        raise CliError(f"no memory store at {root}: check --path")
    return found


def _cmd_verify(args: argparse.Namespace) -> int:
    from langchain_tiered_memory.errors import StoreDamagedError
    from langchain_tiered_memory.stores.edge.files import verify
    from langchain_tiered_memory.writeback.outbox import OUTBOX_FILENAME, check_outbox

    root = Path(args.path)
    problems = [p for container in _containers(root) for p in verify(container)]
    try:
        check_outbox(root / OUTBOX_FILENAME)
    except StoreDamagedError as exc:
        problems.append(str(exc))
    for problem in problems:
        print(f"damaged: {_one_line(problem)}")
    if not problems:
        print(f"{root}: every store and outbox file checked is intact")
    return 1 if problems else 0


def _cmd_repair(args: argparse.Namespace) -> int:
    from langchain_tiered_memory.stores.edge.files import repair_pointer

    repaired = 0
    for container in _containers(Path(args.path)):
        named = repair_pointer(container)
        if named is not None:
            repaired += 1
            print(f"{container}: restored the pointer to {named}, as recorded at the last close")
    if not repaired:
        print("nothing to repair automatically: run `tiered-memory verify` for what is wrong")
    return _cmd_verify(args)


def _flat(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={_flat(v)}" for k, v in value.items()) or "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return "-" if value is None else str(value)


# -- argument parsing -------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``tiered-memory``."""
    from langchain_tiered_memory import __version__

    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Working, episodic, semantic and procedural memory for LangChain agents.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    commands = {
        "demo": (_cmd_demo, "replay three stories with and without memory (offline)"),
        "inspect": (_cmd_inspect, "show a user's facts, episodes and tool statistics"),
        "export": (_cmd_export, "write every record of a user (all tiers) to a JSON Lines file"),
        "import": (
            _cmd_import,
            "load JSON Lines exports into a memory directory (created if missing)",
        ),
        "consolidate": (
            _cmd_consolidate,
            "run a consolidation pass for a user, with progress bars",
        ),
        "stats": (_cmd_stats, "sizes per user and tier, staleness, consolidation, write-back"),
        "verify": (
            _cmd_verify,
            "check a memory directory's files without opening or changing them",
        ),
        "repair": (_cmd_repair, "restore a lost pointer file from the manifest, then verify"),
    }
    cmd: dict[str, argparse.ArgumentParser] = {}
    for name, (func, help_text) in commands.items():
        p = cmd[name] = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(func=func)
        p.add_argument("--width", type=int, default=None, help="output width (default: terminal)")
        if name != "demo":
            p.add_argument("--path", required=True, help="memory directory")
        if name in ("inspect", "export", "consolidate"):
            p.add_argument("--user", required=True, help="user id")

    demo = cmd["demo"]
    demo.add_argument("--path", help="memory directory to create (default: a temporary one)")
    demo.add_argument("--model", default="offline", help="'offline' (default) or 'openai:<model>'")
    demo.add_argument("--budget", type=_positive, default=1000, help="memory tokens per turn")
    cmd["inspect"].add_argument("--limit", type=_positive, default=50, help="rows per table")
    cmd["export"].add_argument("--out", required=True, help="output file (.jsonl)")
    imp = cmd["import"]
    imp.add_argument("--user", help="import every record as this user (one-user files)")
    imp.add_argument(
        "--map",
        action="append",
        default=[],
        type=_user_pair,
        metavar="OLD=NEW",
        help="import the records of user OLD as user NEW (repeatable)",
    )
    imp.add_argument(
        "--keep-file-users",
        action="store_true",
        help="keep each record's own user (normalised); with --map, each user it does not name",
    )
    imp.add_argument("files", nargs="+", metavar="FILE", help="files from `tiered-memory export`")
    cmd["consolidate"].add_argument(
        "--quiet", action="store_true", help="no progress bars (drawn only on a terminal)"
    )
    cmd["stats"].add_argument("--json", action="store_true", help="print the figures as JSON")
    return parser


def _positive(text: str) -> int:
    value = 0
    with suppress(ValueError):
        value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``tiered-memory`` with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors
        return int(exc.code) if isinstance(exc.code, int) else 2
    try:
        code: int = args.func(args)
    except BrokenPipeError:
        return _closed_pipe()
    except (CliError, TieredMemoryError, OSError) as exc:
        print(f"{PROG}: error: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        return _closed_pipe()
    return code


def _closed_pipe() -> int:
    """``stdout``'s reader went away (``... | head``): later writes go to /dev/null; exit 141."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 141
