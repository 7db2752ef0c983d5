"""Store test helpers shared by the store suites (imported by name, not via conftest).

A module name of its own keeps ``from store_support import ...`` unambiguous when
several test folders, each with a ``conftest.py``, are collected in one run.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import BaseStore, IndexConfig
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory.stores import QdrantMemoryStore
from langchain_tiered_memory.testing.fakes import HashingEmbeddings

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
        self._store_cls = QdrantMemoryStore if self.is_qdrant else None
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


def record_queries(monkeypatch: pytest.MonkeyPatch, engine_module: Any) -> list[Any]:
    """Record every ``Query`` an engine module translates (``engine_edge`` or ``engine_client``)."""
    seen: list[Any] = []
    translate = engine_module._query

    def recording(q: Any) -> Any:
        seen.append(q)
        return translate(q)

    monkeypatch.setattr(engine_module, "_query", recording)
    return seen


def legacy_payload(
    namespace: tuple[str, ...], key: str, value: dict[str, Any], *, order_us: int, version: int
) -> dict[str, Any]:
    """An item's payload as a store of payload format 2 or 3 wrote it (no TTL)."""
    from langchain_tiered_memory.stores.payload import (
        dumps,
        encode_ns,
        numeric_view,
        value_marks,
    )

    when = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=order_us)
    depths = range(1, len(namespace) + 1)
    payload: dict[str, Any] = {
        "ns_path": encode_ns(namespace),
        "ns_prefixes": [encode_ns(namespace[:d]) for d in depths],
        "ns_suffixes": [encode_ns(namespace[-d:]) for d in depths],
        "ns_depth": len(namespace),
        "key": key,
        "value": numeric_view(value) or {},
        "value_json": dumps(value),
        "value_marks": value_marks(value),
        "created_at": when.isoformat(),
        "updated_at": when.isoformat(),
        "updated_us": order_us,
        "ttl_minutes": None,
        "expires_us": None,
    }
    if version == 2:
        payload.update(namespace=list(namespace), value=value)
    return payload
