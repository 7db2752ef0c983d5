"""The documentation site builds without a warning.

``mkdocs build --strict`` fails on a broken link, a page missing from the navigation's
targets, or a docstring the API reference cannot render (griffe warnings), so a change
that breaks the site fails here, not after release.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.integration
def test_mkdocs_build_strict(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "reference" / "memory" / "index.html").is_file()


def test_every_page_is_in_the_navigation() -> None:
    """A page outside the navigation is unreachable from the site's menus."""
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = sorted(str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md"))
    missing = [p for p in pages if p not in nav]
    assert not missing, f"add these pages to the nav of mkdocs.yml: {missing}"
