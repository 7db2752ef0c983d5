"""Fixtures for the LangGraph store cases: each case runs on both engines in both modes.

The cases in this folder mirror the behaviour LangGraph's own store suites check
(``libs/checkpoint/tests/test_store.py`` and the SQLite and Postgres store tests
of the langgraph repository, MIT licence), rewritten against
``QdrantMemoryStore``: the stores are built here, the assertions are LangGraph's.
Cases this store fails by design are ``xfail(strict=True)`` with the reason that
``docs/store.md`` states.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import BaseStore
from store_support import StoreFactory, fast_tmp_dir
from upstream_support import ENGINES, MODES, CharacterEmbeddings, MakeStore


@pytest.fixture(params=[(e, m) for e in ENGINES for m in MODES], ids=lambda p: f"{p[0]}-{p[1]}")
def setting(request: pytest.FixtureRequest) -> tuple[str, str]:
    """(engine, retrieval mode) of this run."""
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def make_store(setting: tuple[str, str], tmp_path: Path) -> Iterator[MakeStore]:
    """Open a fresh store: ``make_store()`` plain, ``make_store(fields=[...])`` with an index."""
    engine, mode = setting
    directory = fast_tmp_dir(tmp_path / "stores")
    factory = StoreFactory(engine, directory)

    def make(*, fields: list[str] | None = None, indexed: bool = True, **kw: Any) -> BaseStore:
        index = None
        if indexed:
            embed = CharacterEmbeddings(dims=500)
            index = {"dims": 500, "embed": embed, "fields": fields or ["$"]}
        return factory(index=index, retrieval=mode, **kw)

    try:
        yield make
    finally:
        factory.close_all()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def store(make_store: MakeStore) -> BaseStore:
    """A store with a vector index over the whole value."""
    return make_store()
