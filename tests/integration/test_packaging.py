"""The built wheel: what a ``pip install`` of the package puts on a user's machine."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (path,) = out.glob("langchain_tiered_memory-*.whl")
    return zipfile.ZipFile(path)


def test_the_wheel_ships_the_mit_license(wheel: zipfile.ZipFile) -> None:
    names = [n for n in wheel.namelist() if n.endswith("/licenses/LICENSE")]
    assert len(names) == 1
    assert wheel.read(names[0]).decode().startswith("MIT License")


def test_the_wheel_ships_py_typed_and_the_embedding_tokenizer(wheel: zipfile.ZipFile) -> None:
    names = wheel.namelist()
    assert "langchain_tiered_memory/py.typed" in names
    assert "langchain_tiered_memory/_data/minilm/tokenizer.json" in names
