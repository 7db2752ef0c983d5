"""Shared fixtures of the reliability suites.

* ``engine`` is parametrized over the two Qdrant engines: ``embedded``
  (``QdrantMemoryStore.embedded`` on Qdrant Edge) and ``client`` (qdrant-client
  local mode, ``QdrantClient(":memory:")``).
* ``memory`` is a fresh ``TieredMemory`` on that engine (see
  ``reliability_helpers.open_memory``); ``workdir`` a temporary directory on
  tmpfs when the machine has one, removed afterwards.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from reliability_helpers import ENGINES, fast_dir, open_memory

from langchain_tiered_memory import TieredMemory


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A temporary directory (tmpfs when available), removed afterwards."""
    path = fast_dir()
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    """The name of a Qdrant engine: ``embedded`` or ``client``."""
    return str(request.param)


@pytest.fixture
def memory(engine: str, workdir: Path) -> Iterator[TieredMemory]:
    """A fresh ``TieredMemory`` on ``engine`` (no writer, no LLM)."""
    mem = open_memory(engine, workdir / "store")
    try:
        yield mem
    finally:
        mem.close()
