"""Fixtures for the store suites: one factory per store kind.

``store_factory`` is parametrized over:

* ``inmemory``: LangGraph's ``InMemoryStore``; it proves the suite itself.
* ``embedded``: ``QdrantMemoryStore.embedded`` on a temporary directory (Qdrant Edge).
* ``client-local``: ``QdrantMemoryStore.from_client(QdrantClient(":memory:"))``.
* ``client-server``: ``QdrantMemoryStore.from_client(QdrantClient(url=QDRANT_URL))``;
  skipped unless ``QDRANT_URL`` is set.

``qdrant_factory`` is the same without ``inmemory`` (for behaviour that only our
store promises, such as its error classes).

A factory call returns a fresh, empty store; every store it made is closed at
teardown. ``factory.location()`` returns a place (a directory, a client, a server
collection) that several calls can share, to reopen the same data.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from store_support import StoreFactory, fast_tmp_dir

# Helper modules hold the assertions of the shared cases: let pytest explain failures.
pytest.register_assert_rewrite("conformance_cases", "store_drivers", "store_support")

QDRANT_KINDS = ("embedded", "client-local", "client-server")
ALL_KINDS = ("inmemory", *QDRANT_KINDS)


@pytest.fixture
def store_dir(tmp_path: Path) -> Iterator[Path]:
    """A temporary directory for embedded stores, removed afterwards (see fast_tmp_dir)."""
    path = fast_tmp_dir(tmp_path / "stores")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _factory(request: pytest.FixtureRequest, directory: Path) -> Iterator[StoreFactory]:
    factory = StoreFactory(request.param, directory)
    try:
        yield factory
    finally:
        factory.close_all()


def _params(kinds: tuple[str, ...]) -> list[Any]:
    return [
        pytest.param(k, marks=(pytest.mark.server, pytest.mark.enable_socket))
        if k == "client-server"
        else pytest.param(k)
        for k in kinds
    ]


@pytest.fixture(params=_params(ALL_KINDS))
def store_factory(request: pytest.FixtureRequest, store_dir: Path) -> Iterator[StoreFactory]:
    """A factory of fresh stores, for every store kind (InMemoryStore included)."""
    yield from _factory(request, store_dir)


@pytest.fixture(params=_params(QDRANT_KINDS))
def qdrant_factory(request: pytest.FixtureRequest, store_dir: Path) -> Iterator[StoreFactory]:
    """A factory of fresh ``QdrantMemoryStore`` instances, for each engine."""
    yield from _factory(request, store_dir)
