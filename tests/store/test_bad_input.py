"""Bad input gets a precise TieredMemoryError subclass, a helpful message, and changes nothing.

Every rejected call is checked twice: the exception class and message, and a
snapshot of the store's whole content (read through the public API) taken before
and after, which must be identical. Each call goes through the sync and the
async API.
"""

from __future__ import annotations

import asyncio
import math
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Coroutine, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from conftest import StoreFactory, hashing_index, import_store_class
from langgraph.store.base import BaseStore, GetOp, PutOp, SearchOp
from store_drivers import AsyncOps, Ops, SyncOps, run_sync, snapshot

from langchain_tiered_memory.errors import (
    ConfigurationError,
    InvalidInputError,
    NamespaceError,
    StoreLockedError,
    TieredMemoryError,
)

Call = Callable[[Ops], Coroutine[Any, Any, Any]]


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def drive(mode: str, store: BaseStore, call: Call) -> Any:
    """Run ``call`` through the sync API (no event loop) or the async API."""
    if mode == "sync":
        return run_sync(call(SyncOps(store)))
    return asyncio.run(call(AsyncOps(store)))


def seed(store: BaseStore) -> None:
    store.put(("users", "alice"), "pref", {"text": "likes green tea", "n": 1})
    store.put(("users", "bob"), "pref", {"text": "likes coffee", "n": 2})
    store.put(("docs",), "readme", {"text": "hello", "nested": {"a": [1, 2]}})


def assert_rejected(
    store: BaseStore,
    mode: str,
    call: Call,
    error: type[TieredMemoryError],
    *words: str,
) -> TieredMemoryError:
    """``call`` raises ``error`` whose message has ``words``; the store is unchanged."""
    before = snapshot(store)
    with pytest.raises(error) as info:
        drive(mode, store, call)
    message = str(info.value)
    for word in words:
        assert word.lower() in message.lower(), f"{word!r} not in message {message!r}"
    assert len(message) >= 30, f"message too terse to act on: {message!r}"
    assert snapshot(store) == before, "a rejected call changed the store"
    return info.value


# --------------------------------------------------------------------------- namespaces

BAD_NAMESPACES: list[Any] = [
    pytest.param((), id="empty"),
    pytest.param(("",), id="empty-label"),
    pytest.param(("users", ""), id="empty-second-label"),
    pytest.param((1,), id="int-label"),
    pytest.param(("users", None), id="none-label"),
    pytest.param(("users", b"alice"), id="bytes-label"),
    pytest.param("users", id="bare-string"),
]


@pytest.mark.parametrize("namespace", BAD_NAMESPACES)
def test_bad_namespace_on_put(qdrant_factory: StoreFactory, mode: str, namespace: Any) -> None:
    store = qdrant_factory()
    seed(store)

    async def put(ops: Ops) -> None:
        await ops.put(namespace, "k", {"text": "x"})

    assert_rejected(store, mode, put, NamespaceError, "namespace")


@pytest.mark.parametrize("namespace", BAD_NAMESPACES)
def test_bad_namespace_in_batch(qdrant_factory: StoreFactory, mode: str, namespace: Any) -> None:
    store = qdrant_factory()
    seed(store)

    async def batch(ops: Ops) -> None:
        # The valid put must not land either: the batch is rejected as a whole.
        await ops.batch([PutOp(("users", "carol"), "k", {"v": 1}), PutOp(namespace, "k", {})])

    assert_rejected(store, mode, batch, NamespaceError, "namespace")
    assert store.get(("users", "carol"), "k") is None


@pytest.mark.parametrize(
    "namespace",
    [p for p in BAD_NAMESPACES if p.id != "empty"],  # () is a valid search prefix
)
def test_bad_namespace_on_reads(qdrant_factory: StoreFactory, mode: str, namespace: Any) -> None:
    store = qdrant_factory()
    seed(store)

    async def get(ops: Ops) -> None:
        await ops.get(namespace, "pref")

    async def search(ops: Ops) -> None:
        await ops.search(namespace)

    async def delete(ops: Ops) -> None:
        await ops.delete(namespace, "pref")

    for call in (get, search, delete):
        assert_rejected(store, mode, call, NamespaceError, "namespace")


# --------------------------------------------------------------------------- values


class Opaque:
    pass


NON_JSON: list[Any] = [
    pytest.param({"x": Opaque()}, id="object"),
    pytest.param({"x": {1, 2}}, id="set"),
    pytest.param({"x": b"bytes"}, id="bytes"),
    pytest.param({"when": datetime(2026, 1, 1, tzinfo=timezone.utc)}, id="datetime"),
    pytest.param({"x": math.nan}, id="nan"),
    pytest.param({"x": [1, math.inf]}, id="inf-in-list"),
    pytest.param({("a", "b"): 1}, id="tuple-key"),
    pytest.param({"deep": {"x": Opaque()}}, id="nested-object"),
    pytest.param(["not", "a", "dict"], id="list-value"),
    pytest.param("text", id="str-value"),
]


@pytest.mark.parametrize("value", NON_JSON)
def test_non_json_value(qdrant_factory: StoreFactory, mode: str, value: Any) -> None:
    store = qdrant_factory()
    seed(store)

    async def put(ops: Ops) -> None:
        await ops.put(("users", "alice"), "pref", value)  # would overwrite an item

    async def batch(ops: Ops) -> None:
        await ops.batch([PutOp(("docs",), "new", {"ok": 1}), PutOp(("docs",), "bad", value)])

    for call in (put, batch):
        err = assert_rejected(store, mode, call, InvalidInputError)
        assert isinstance(err, ValueError)
    assert store.get(("docs",), "new") is None


def test_non_string_keys_do_not_change_silently(qdrant_factory: StoreFactory, mode: str) -> None:
    """JSON object keys are strings: ``{1: "a"}`` cannot come back as it went in."""
    store = qdrant_factory()
    seed(store)

    async def put(ops: Ops) -> None:
        await ops.put(("docs",), "intkey", {1: "a"})

    assert_rejected(store, mode, put, InvalidInputError)


def _max_value_bytes() -> int:
    import_store_class()
    from langchain_tiered_memory.stores import MAX_VALUE_BYTES

    return int(MAX_VALUE_BYTES)


def test_value_over_size_limit(qdrant_factory: StoreFactory, mode: str) -> None:
    limit = _max_value_bytes()
    store = qdrant_factory()
    seed(store)
    too_big = {"text": "x" * (limit + 1)}

    async def put(ops: Ops) -> None:
        await ops.put(("users", "alice"), "pref", too_big)

    async def put_new(ops: Ops) -> None:
        await ops.put(("docs",), "huge", too_big)

    for call in (put, put_new):
        assert_rejected(store, mode, call, InvalidInputError, str(limit))
    # Just under the limit is accepted and reads back whole.
    fits = {"text": "y" * (limit - 100)}
    store.put(("docs",), "fits", fits)
    item = store.get(("docs",), "fits")
    assert item is not None and item.value == fits


def test_size_is_measured_in_utf8_bytes(qdrant_factory: StoreFactory) -> None:
    limit = _max_value_bytes()
    store = qdrant_factory()
    emoji = {"text": "🧠" * (limit // 4 + 10)}  # under the limit in characters, over in bytes
    assert len(emoji["text"]) < limit
    with pytest.raises(InvalidInputError):
        store.put(("docs",), "emoji", emoji)
    assert store.get(("docs",), "emoji") is None


# --------------------------------------------------------------------------- vector size


def _reopen(factory: StoreFactory, location: Any, dims: int) -> BaseStore:
    return factory(index=hashing_index(dims), location=location)


def test_wrong_vector_size_for_existing_store(qdrant_factory: StoreFactory) -> None:
    location = qdrant_factory.location()
    store = _reopen(qdrant_factory, location, 384)
    store.put(("docs",), "a", {"text": "green tea in the morning"})
    store.put(("docs",), "b", {"text": "black coffee at night"})
    before = snapshot(store)
    if qdrant_factory.kind == "embedded":
        store.close()  # type: ignore[attr-defined]
    with pytest.raises(ConfigurationError) as info:
        _reopen(qdrant_factory, location, 128)
    message = str(info.value)
    assert "384" in message and "128" in message, message
    if qdrant_factory.kind == "embedded":
        store = _reopen(qdrant_factory, location, 384)
    assert snapshot(store) == before
    found = store.search(("docs",), query="green tea morning", limit=1)
    assert [i.key for i in found] == ["a"]


def test_embedder_returning_wrong_size(qdrant_factory: StoreFactory, mode: str) -> None:
    """An index whose model returns vectors of another size than ``dims`` stores nothing."""
    index = hashing_index(384)
    index["embed"] = hashing_index(100)["embed"]
    store = qdrant_factory(index=index)
    store.put(("docs",), "plain", {"text": "kept"}, index=False)

    async def put(ops: Ops) -> None:
        await ops.put(("docs",), "a", {"text": "green tea"})

    assert_rejected(store, mode, put, ConfigurationError, "384", "100")


# --------------------------------------------------------------------------- locking

HOLDER = textwrap.dedent(
    """
    import sys
    from langchain_tiered_memory.stores import QdrantMemoryStore
    store = QdrantMemoryStore.embedded(sys.argv[1])
    for i in range(20):
        store.put(("held",), f"k{i}", {"i": i})
    print("ready", flush=True)
    sys.stdin.readline()
    store.close()
    print("closed", flush=True)
    """
)


@pytest.fixture
def held_path(tmp_path: Path) -> Iterator[Path]:
    """An embedded store path held open by another process with 20 items in it."""
    import_store_class()
    path = tmp_path / "held"
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None and proc.stdin is not None
    line = proc.stdout.readline().strip()
    if line != "ready":
        proc.kill()
        raise AssertionError(f"holder process failed: {line!r} {proc.stderr.read()!r}")
    try:
        yield path
    finally:
        proc.stdin.write("\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert "closed" in out


def test_path_open_in_another_process(held_path: Path) -> None:
    cls = import_store_class()
    with pytest.raises(StoreLockedError) as info:
        cls.embedded(held_path)
    assert str(held_path) in str(info.value) or held_path.name in str(info.value)


def test_locked_path_loses_nothing(tmp_path: Path) -> None:
    cls = import_store_class()
    path = tmp_path / "twice"
    first = cls.embedded(path)
    try:
        first.put(("docs",), "a", {"v": 1})
        before = snapshot(first)
        with pytest.raises(StoreLockedError) as info:
            cls.embedded(path)  # a second handle in the same process
        assert "open" in str(info.value).lower()
        first.put(("docs",), "b", {"v": 2})  # the first handle still works
        assert snapshot(first)[: len(before)] == before
    finally:
        first.close()
    with cls.embedded(path) as again:
        assert sorted(i.key for i in again.search(("docs",))) == ["a", "b"]


def test_lock_released_when_holder_closes(tmp_path: Path) -> None:
    cls = import_store_class()
    path = tmp_path / "held"
    proc = subprocess.run(
        [sys.executable, "-c", HOLDER, str(path)], input="\n", text=True, capture_output=True
    )
    assert proc.returncode == 0, proc.stderr
    with cls.embedded(path) as store:
        assert len(store.search(("held",), limit=100)) == 20


# --------------------------------------------------------------------------- reads


def test_errors_are_library_errors_not_backend_leaks(qdrant_factory: StoreFactory) -> None:
    """Unknown filter operators and non-numeric ranges are the caller's mistake."""
    store = qdrant_factory()
    seed(store)
    before = snapshot(store)
    for kwargs in (
        {"filter": {"n": {"$regex": "x"}}},
        {"filter": {"n": {"$gt": "not a number"}}},
    ):
        with pytest.raises(InvalidInputError):
            store.search(("users",), **kwargs)
    with pytest.raises(InvalidInputError):
        store.batch([GetOp(("users", "alice"), "pref"), SearchOp(("users",), {"n": {"$in": 1}})])
    assert snapshot(store) == before
