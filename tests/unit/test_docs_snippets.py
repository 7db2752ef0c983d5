"""Every Python snippet in the README and the documentation site runs as written.

The fences of one page run in order in one namespace, as a reader would paste them,
in a temporary working directory (so ``./memory`` is created there). A fence whose
info string is ``python notest`` needs something the test run does not have (a real
model, a server, an API key) and is only checked to compile.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
FENCE = re.compile(r"^```(?P<info>[^\n`]*)\n(?P<body>.*?)^```\s*$", re.M | re.S)


def python_fences(page: Path) -> list[tuple[str, int, bool]]:
    """The page's Python fences: (code, first line, runnable)."""
    text = page.read_text(encoding="utf-8")
    fences = []
    for match in FENCE.finditer(text):
        words = match["info"].split()
        if not words or words[0] not in {"python", "py"}:
            continue
        line = text.count("\n", 0, match.start("body")) + 1
        fences.append((match["body"], line, "notest" not in words[1:]))
    return fences


def close_all(namespace: dict[str, Any]) -> None:
    """Close what a snippet left open, so the next page can open the same paths."""
    for value in namespace.values():
        close = getattr(value, "close", None)
        module = type(value).__module__ or ""
        if callable(close) and module.startswith("langchain_tiered_memory"):
            close()


@pytest.mark.integration
@pytest.mark.parametrize(
    "page", [p for p in PAGES if python_fences(p)], ids=lambda p: str(p.relative_to(ROOT))
)
def test_page_snippets_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    try:
        for code, line, runnable in python_fences(page):
            compiled = compile("\n" * (line - 1) + code, str(page), "exec")
            if runnable:
                exec(compiled, namespace)
    finally:
        close_all(namespace)


def test_pages_have_snippets() -> None:
    """The README's interface table has a runnable snippet for each interface."""
    runnable = [f for f in python_fences(ROOT / "README.md") if f[2]]
    assert len(runnable) >= 7
