"""``namespace_version``: a token that moves exactly when items under a prefix change.

Callers (the procedural tier's tool guidance) keep results computed from a
namespace under its token, so a token that failed to move after a write would
serve stale memories. Only the embedded engine answers with tokens: its
directory lock makes this process the only writer. Stores that cannot see every
write (a client engine, items that expire without a write) answer None.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from qdrant_client import QdrantClient
from store_support import hashing_index

from langchain_tiered_memory.stores import QdrantMemoryStore
from langchain_tiered_memory.stores import versions as versions_module
from langchain_tiered_memory.stores.restore import RestoreOp
from langchain_tiered_memory.stores.versions import NamespaceVersions

ALICE = ("users", "alice")
BOB = ("users", "bob")


def _embedded(path: Path, **kw: Any) -> QdrantMemoryStore:
    return QdrantMemoryStore.embedded(path, index=hashing_index(32), **kw)


def test_counters_move_for_every_prefix_of_a_written_namespace() -> None:
    versions = NamespaceVersions()
    tokens = {p: versions.token(p) for p in [(), ("users",), ALICE, (*ALICE, "facts"), BOB]}
    versions.bump([(*ALICE, "facts")])
    moved = {p for p, t in tokens.items() if versions.token(p) != t}
    assert moved == {(), ("users",), ALICE, (*ALICE, "facts")}
    before = versions.token(BOB)
    versions.bump_all()
    assert versions.token(BOB) != before
    assert NamespaceVersions().token(BOB) != NamespaceVersions().token(BOB)  # never shared


def test_counters_stay_bounded_and_dropping_them_moves_every_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(versions_module, "MAX_PREFIXES", 10)
    versions = NamespaceVersions()
    before = versions.token(BOB)
    for i in range(20):
        versions.bump([("users", f"u{i}")])
        assert len(versions._counts) <= 10
    assert versions.token(BOB) != before  # BOB was never written, yet its token moved


def test_puts_and_deletes_move_the_token_of_their_namespace_only(tmp_path: Path) -> None:
    with _embedded(tmp_path / "s") as store:
        store.setup()
        alice, bob = store.namespace_version(ALICE), store.namespace_version(BOB)
        assert alice is not None and bob is not None
        store.put((*ALICE, "facts"), "f1", {"text": "likes tea"})
        assert store.namespace_version(ALICE) != alice
        assert store.namespace_version(BOB) == bob
        alice = store.namespace_version(ALICE)
        store.search(ALICE, query="tea")  # reads move nothing
        store.get((*ALICE, "facts"), "f1")
        store.list_namespaces(prefix=ALICE)
        assert store.namespace_version(ALICE) == alice
        store.delete((*ALICE, "facts"), "f1")
        assert store.namespace_version(ALICE) != alice
        assert store.namespace_version(BOB) == bob


async def test_async_writes_and_restores_move_the_token(tmp_path: Path) -> None:
    with _embedded(tmp_path / "s") as store:
        await store.asetup()
        before = store.namespace_version(ALICE)
        assert before is not None
        await store.aput((*ALICE, "notes"), "n1", {"text": "hi"})
        after_put = store.namespace_version(ALICE)
        assert after_put != before
        when = datetime(2025, 1, 1, tzinfo=timezone.utc)
        store.restore_items([RestoreOp((*ALICE, "notes"), "n2", {"text": "old"}, when, when)])
        after_restore = store.namespace_version(ALICE)
        assert after_restore != after_put
        await store.arestore_items([RestoreOp((*ALICE, "notes"), "n3", {"t": 1}, when, when)])
        assert store.namespace_version(ALICE) != after_restore


def test_a_failed_batch_still_moves_the_token(tmp_path: Path) -> None:
    with _embedded(tmp_path / "s") as store:
        store.setup()
        before = store.namespace_version(ALICE)
        assert before is not None
        with pytest.raises(Exception):  # noqa: B017 (the error class is not the point)
            store.put((*ALICE, "notes"), "n1", {"bad": float("nan")})
        assert store.namespace_version(ALICE) != before


def test_stores_that_cannot_see_every_change_give_no_token(tmp_path: Path) -> None:
    now = [datetime(2026, 12, 2, tzinfo=timezone.utc)]
    with _embedded(tmp_path / "ttl", clock=lambda: now[0]) as store:
        store.setup()
        assert store.namespace_version(ALICE) is not None
        store.put((*BOB, "notes"), "short", {"text": "soon gone"}, ttl=1)
        now[0] += timedelta(minutes=2)  # it expires without a write
        assert store.namespace_version(ALICE) is None
    with _embedded(tmp_path / "ttl") as reopened:  # the item with a TTL is still there
        reopened.setup()
        assert reopened.namespace_version(ALICE) is None
    client = QdrantClient(":memory:")
    with QdrantMemoryStore.from_client(client, index=hashing_index(32)) as remote:
        remote.setup()
        assert remote.namespace_version(ALICE) is None  # a server has other writers
    client.close()
