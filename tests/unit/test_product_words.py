"""Shipped text describes the product, never the story of its development.

Scanned: every file of the package (docstrings, messages, CLI text, demo output),
the docstrings of the tests, ``README.md``, ``docs/``, the markdown cells of the
notebooks, and the ``--help`` of the command line and of each of its commands.
Refused: the development notes' name for the design document (say "the
memory-architecture design this library implements"), work-session numbers,
issue numbers, repeated runs, host histories and past results (see ``WORDS``). Conversation sessions
are a product concept: the demo's "session 1" and "session 2" are two
conversations of one user, so only numbers from 3 up count as work sessions.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from langchain_tiered_memory.cli.commands import build_parser, main

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "langchain_tiered_memory"

WORDS = {
    "the design's old name (say: the memory-architecture design this library implements)": (
        r"\bthe seed\b|\bseed's\b|\bseed-style\b"
    ),
    "a work-session number": r"\bsession (?:[3-9]|\d{2,})\b|\bsessions \d+\b",
    "an issue number": r"\bissues? ?#?\d+\b|\bthe issue's\b",
    "a rerun": r"\bre-?runs?\b",
    "a host history": r"\bthis (?:session's )?host\b",
    "earlier runs": r"\bearlier runs?\b",
}
PATTERN = re.compile("|".join(f"(?P<w{i}>{p})" for i, p in enumerate(WORDS.values())), re.I)
LABELS = list(WORDS)


def offences(text: str, where: str) -> list[str]:
    """``where:line: "match" (what it is)`` for every refused word in ``text``."""
    found = []
    for match in PATTERN.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        label = LABELS[int(next(k for k, v in match.groupdict().items() if v)[1:])]
        found.append(f'{where}:{line}: "{match.group(0)}" ({label})')
    return found


def docstrings(source: str) -> Iterator[tuple[int, str]]:
    """``(line, docstring)`` of a module and of every class and function in it."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                yield (node.body[0].lineno, doc)


def markdown_cells(notebook: Path) -> Iterator[tuple[int, str]]:
    """``(cell number, text)`` of every markdown cell of a notebook."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    for number, cell in enumerate(cells, 1):
        if cell["cell_type"] == "markdown":
            yield number, "".join(cell["source"])


def scan_package(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        found += offences(path.read_text(encoding="utf-8"), str(path.relative_to(root.parent)))
    return found


def scan_test_docstrings(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        name = str(path.relative_to(root.parent))
        for line, doc in docstrings(path.read_text(encoding="utf-8")):
            found += [f"{name} (docstring at line {line}) {o}" for o in offences(doc, "")]
    return found


def scan_documents(paths: Iterable[Path]) -> list[str]:
    found = []
    for path in paths:
        found += offences(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
    return found


def scan_notebooks(root: Path) -> list[str]:
    found = []
    for notebook in sorted(root.glob("*.ipynb")):
        for number, text in markdown_cells(notebook):
            found += offences(text, f"{notebook.name} markdown cell {number}")
    return found


def help_texts() -> Iterator[tuple[str, str]]:
    """``(command line, output)`` of ``--help`` for the program and each command."""
    commands = [
        name
        for action in build_parser()._actions
        if isinstance(action, argparse._SubParsersAction)
        for name in action.choices
    ]
    assert commands, "the command line has no commands"
    for argv in [["--help"], *([command, "--help"] for command in commands)]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(argv) == 0
        yield " ".join(argv), out.getvalue()


def report(found: list[str]) -> None:
    if found:
        pytest.fail("development narrative in shipped text:\n" + "\n".join(found), pytrace=False)


def test_the_package() -> None:
    report(scan_package(PACKAGE))


def test_test_docstrings() -> None:
    report(scan_test_docstrings(REPO / "tests"))


def test_the_command_line_help() -> None:
    report([o for argv, text in help_texts() for o in offences(text, f"tiered-memory {argv}")])


def test_readme() -> None:
    report(scan_documents([REPO / "README.md"]))


def test_docs_pages() -> None:
    report(scan_documents(sorted((REPO / "docs").rglob("*.md"))))


def test_notebook_text() -> None:
    report(scan_notebooks(REPO / "notebooks"))


PLANTED = [
    "As in the seed, the buffer drops old turns.",
    "The seed's layout of an 8000-token window.",
    "measured in session 12 on this host",
    "fixed in issue #26",
    "see issue 9",
    "after a rerun the figures held",
    "unlike earlier runs",
]


@pytest.mark.parametrize("text", PLANTED)
def test_each_kind_of_word_is_found(text: str) -> None:
    assert offences(text, "planted")


@pytest.mark.parametrize(
    "text",
    [
        "session 1 writes memory; session 2 asks again",  # conversation sessions
        "rng = random.Random(seed)",
        "seed_tiktoken_cache() fills the cache",
        "the seeded operations agree",
        "What the user said in this session",
    ],
)
def test_product_words_pass(text: str) -> None:
    assert offences(text, "product") == []


def test_every_scanner_fails_on_a_planted_string(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "mod.py").write_text('"""Fine."""\n\nMESSAGE = "replay the seed\'s stories"\n')
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_x.py").write_text(
        '"""Checks."""\n\n\ndef test_x() -> None:\n    """From issue 6."""\n'
        "    # issue 7 in a comment is not a docstring\n"
    )
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    cells = [
        {"cell_type": "markdown", "source": ["## Results\n", "Better than earlier runs."]},
        {"cell_type": "code", "source": ["# rerun me"]},
    ]
    (notebooks / "n.ipynb").write_text(json.dumps({"cells": cells}))

    assert len(scan_package(package)) == 1
    [found] = scan_test_docstrings(tests)
    assert "line 5" in found and "issue 6" in found
    [cell] = scan_notebooks(notebooks)
    assert "markdown cell 1" in cell and "earlier runs" in cell
    with pytest.raises(pytest.fail.Exception, match="development narrative"):
        report(offences("session 14 on this host", "help"))
