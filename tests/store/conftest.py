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

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import BaseStore, IndexConfig
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory.fakes import HashingEmbeddings

# Helper modules hold the assertions of the shared cases: let pytest explain failures.
pytest.register_assert_rewrite("conformance_cases", "store_drivers")

QDRANT_KINDS = ("embedded", "client-local", "client-server")
ALL_KINDS = ("inmemory", *QDRANT_KINDS)
DIMS = 384


def hashing_index(dims: int = DIMS, fields: list[str] | None = None) -> IndexConfig:
    """An index config on the deterministic hashing embeddings."""
    return {"dims": dims, "embed": HashingEmbeddings(size=dims), "fields": fields or ["text"]}


def fast_tmp_dir(fallback: Path) -> Path:
    """A fresh directory on tmpfs (``/dev/shm``) when there is one, else ``fallback``.

    Opening an embedded store fsyncs a few times; on slow disks that costs seconds
    per store, which the suite would pay hundreds of times. Durability is not what
    these tests check, so they use memory-backed storage when the machine has it.
    """
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        return Path(tempfile.mkdtemp(prefix="ltm-store-test-", dir=shm))
    fallback.mkdir(parents=True, exist_ok=True)
    return fallback


@pytest.fixture
def store_dir(tmp_path: Path) -> Iterator[Path]:
    """A temporary directory for embedded stores, removed afterwards (see fast_tmp_dir)."""
    path = fast_tmp_dir(tmp_path / "stores")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def import_store_class() -> Any:
    """``QdrantMemoryStore``, or skip the test with the reason it cannot be imported."""
    try:
        from langchain_tiered_memory.stores import QdrantMemoryStore
    except ImportError as exc:
        pytest.skip(f"langchain_tiered_memory.stores.QdrantMemoryStore is not importable: {exc}")
    return QdrantMemoryStore


def _close(store: Any) -> None:
    close = getattr(store, "close", None)
    if close is not None:
        close()


class StoreFactory:
    """Makes stores of one kind; closes them (and server collections) at teardown."""

    def __init__(self, kind: str, directory: Path) -> None:
        self.kind = kind
        self.directory = directory
        self.is_qdrant = kind != "inmemory"
        self._stores: list[Any] = []
        self._clients: list[Any] = []
        self._collections: list[tuple[Any, str]] = []
        self._counter = 0
        self._store_cls = import_store_class() if self.is_qdrant else None
        if kind == "client-server" and not os.environ.get("QDRANT_URL"):
            pytest.skip("client-server needs a Qdrant server: set QDRANT_URL to run it")

    def location(self) -> Any:
        """A new, empty place to keep data; pass it as ``location=`` to share it."""
        self._counter += 1
        if self.kind == "embedded":
            path = self.directory / f"store-{self._counter}"
            return path
        from qdrant_client import QdrantClient

        if self.kind == "client-local":
            client = QdrantClient(":memory:")
            self._clients.append(client)
            return client
        if self.kind == "client-server":
            client = QdrantClient(url=os.environ["QDRANT_URL"])
            self._clients.append(client)
            collection = f"test-{uuid.uuid4().hex[:12]}"
            self._collections.append((client, collection))
            return (client, collection)
        raise ValueError(f"{self.kind} has no location")

    def __call__(
        self, *, index: IndexConfig | None = None, location: Any = None, **kwargs: Any
    ) -> BaseStore:
        """Open a store; a new location unless ``location`` is given."""
        if not self.is_qdrant:
            store: BaseStore = InMemoryStore(index=index)
            self._stores.append(store)
            return store
        cls = self._store_cls
        if location is None:
            location = self.location()
        if self.kind == "embedded":
            store = cls.embedded(location, index=index, **kwargs)
        elif self.kind == "client-local":
            store = cls.from_client(location, index=index, **kwargs)
        else:
            client, collection = location
            store = cls.from_client(client, index=index, collection=collection, **kwargs)
        self._stores.append(store)
        return store

    def close_all(self) -> None:
        errors: list[BaseException] = []
        for store in reversed(self._stores):
            try:
                _close(store)
            except Exception as exc:  # keep closing the others, then report
                errors.append(exc)
        for client, collection in self._collections:
            try:
                client.delete_collection(collection)
            except Exception as exc:
                errors.append(exc)
        for client in self._clients:
            client.close()
        if errors:
            raise errors[0]


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
