"""Fixtures shared by the episodic and procedural tests (imported by those modules).

``store`` is parametrized over LangGraph's ``InMemoryStore`` (fresh per test) and
the project's embedded Qdrant store (one per test module: opening one takes
seconds, so tests share it and stay apart through ``scope``, a fresh user per
test, which is also how real users are kept apart).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import BaseStore, IndexConfig, Op, Result
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory.fakes import FakeClock, HashingEmbeddings
from langchain_tiered_memory.tiers.scope import MemoryScope

DIMS = 384
STORE_KINDS = ["inmemory", "qdrant"]


def hashing_index() -> IndexConfig:
    return {"dims": DIMS, "embed": HashingEmbeddings(size=DIMS), "fields": ["text"]}


def open_qdrant(path: Path) -> Any:
    try:
        from langchain_tiered_memory.stores import QdrantMemoryStore
    except ImportError as exc:  # another helper's module; may not exist yet
        pytest.skip(f"QdrantMemoryStore is not importable yet: {exc}")
    return QdrantMemoryStore.embedded(path, index=hashing_index())


@pytest.fixture(scope="module")
def qdrant_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    store = open_qdrant(tmp_path_factory.mktemp("qdrant"))
    yield store
    store.close()


@pytest.fixture(params=STORE_KINDS)
def store(request: pytest.FixtureRequest) -> BaseStore:
    if request.param == "inmemory":
        return InMemoryStore(index=hashing_index())
    result: BaseStore = request.getfixturevalue("qdrant_store")
    return result


@pytest.fixture
def scope() -> MemoryScope:
    return MemoryScope(f"user-{uuid.uuid4().hex[:12]}")


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock()


class RecordingStore(BaseStore):
    """Wraps a store and records every operation and how many items searches returned."""

    def __init__(self, inner: BaseStore) -> None:
        self.inner = inner
        self.ops: list[Op] = []
        self.items_returned = 0

    def _note(self, ops: list[Op], results: list[Result]) -> list[Result]:
        self.ops.extend(ops)
        self.items_returned += sum(len(r) for r in results if isinstance(r, list))
        return results

    def batch(self, ops: Any) -> list[Result]:
        ops = list(ops)
        return self._note(ops, self.inner.batch(ops))

    async def abatch(self, ops: Any) -> list[Result]:
        ops = list(ops)
        return self._note(ops, await self.inner.abatch(ops))
