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
from collections.abc import Callable, Coroutine
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import BaseStore, GetOp, InvalidNamespaceError, PutOp, SearchOp
from store_drivers import AsyncOps, Ops, SyncOps, run_sync, snapshot
from store_support import StoreFactory, hashing_index

from langchain_tiered_memory.errors import (
    ConfigurationError,
    InvalidInputError,
    NamespaceError,
    StoreLockedError,
    TieredMemoryError,
)
from langchain_tiered_memory.stores import MAX_VALUE_BYTES, QdrantMemoryStore

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

BAD_NAMESPACES: dict[str, Any] = {
    "empty": (),
    "empty-label": ("",),
    "empty-second-label": ("users", ""),
    "int-label": (1,),
    "none-label": ("users", None),
    "bytes-label": ("users", b"alice"),
    "list-label": ("users", ["alice"]),
    "bare-string": "users",
}


def check_each(cases: dict[str, Any], check: Callable[[Any], object]) -> None:
    """Run ``check`` on every case (one store for all: each must leave it unchanged)."""
    problems = []
    for name, case in cases.items():
        try:
            check(case)
        except (AssertionError, pytest.fail.Exception) as exc:
            problems.append(f"{name} {case!r}: {exc}")
        except Exception as exc:
            problems.append(f"{name} {case!r}: raised {type(exc).__name__}: {exc}")
    assert not problems, "\n".join(problems)


def test_bad_namespace_on_put(qdrant_factory: StoreFactory, mode: str) -> None:
    store = qdrant_factory()
    seed(store)

    def check(namespace: Any) -> None:
        async def put(ops: Ops) -> None:
            await ops.put(namespace, "k", {"text": "x"})

        assert_rejected(store, mode, put, NamespaceError, "namespace")

    check_each(BAD_NAMESPACES, check)


def test_bad_namespace_is_langgraphs_invalid_namespace_error(qdrant_factory: StoreFactory) -> None:
    """Code written for InMemoryStore catches LangGraph's InvalidNamespaceError: it still works."""
    store = qdrant_factory()
    for namespace in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "x")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(namespace, "k", {"text": "x"})
        with pytest.raises(InvalidNamespaceError):
            asyncio.run(store.aput(namespace, "k", {"text": "x"}))
    assert issubclass(NamespaceError, TieredMemoryError)


def test_bad_namespace_in_batch(qdrant_factory: StoreFactory, mode: str) -> None:
    store = qdrant_factory()
    seed(store)

    def check(namespace: Any) -> None:
        async def batch(ops: Ops) -> None:
            # The valid put must not land either: the batch is rejected as a whole.
            await ops.batch([PutOp(("users", "carol"), "k", {"v": 1}), PutOp(namespace, "k", {})])

        assert_rejected(store, mode, batch, NamespaceError, "namespace")
        assert store.get(("users", "carol"), "k") is None

    check_each(BAD_NAMESPACES, check)


def test_bad_namespace_on_reads(qdrant_factory: StoreFactory, mode: str) -> None:
    store = qdrant_factory()
    seed(store)

    def check(namespace: Any) -> None:
        async def get(ops: Ops) -> None:
            await ops.get(namespace, "pref")

        async def search(ops: Ops) -> None:
            await ops.search(namespace)

        async def delete(ops: Ops) -> None:
            await ops.delete(namespace, "pref")

        calls = (get, delete) if namespace == () else (get, search, delete)
        for call in calls:  # () is a valid search prefix: everything
            assert_rejected(store, mode, call, NamespaceError, "namespace")

    check_each(BAD_NAMESPACES, check)


# --------------------------------------------------------------------------- values


class Opaque:
    pass


NON_JSON: dict[str, Any] = {
    "object": {"x": Opaque()},
    "set": {"x": {1, 2}},
    "bytes": {"x": b"bytes"},
    "datetime": {"when": datetime(2026, 1, 1, tzinfo=timezone.utc)},
    "nan": {"x": math.nan},
    "inf-in-list": {"x": [1, math.inf]},
    "tuple-key": {("a", "b"): 1},
    "nested-object": {"deep": {"x": Opaque()}},
    "list-value": ["not", "a", "dict"],
    "str-value": "text",
}


def test_non_json_value(qdrant_factory: StoreFactory, mode: str) -> None:
    store = qdrant_factory()
    seed(store)

    def check(value: Any) -> None:
        async def put(ops: Ops) -> None:
            await ops.put(("users", "alice"), "pref", value)  # would overwrite an item

        async def batch(ops: Ops) -> None:
            await ops.batch([PutOp(("docs",), "new", {"ok": 1}), PutOp(("docs",), "bad", value)])

        for call in (put, batch):
            err = assert_rejected(store, mode, call, InvalidInputError)
            assert isinstance(err, ValueError)
        assert store.get(("docs",), "new") is None

    check_each(NON_JSON, check)


def test_non_string_keys_do_not_change_silently(qdrant_factory: StoreFactory, mode: str) -> None:
    """JSON object keys are strings: ``{1: "a"}`` cannot come back as it went in."""
    store = qdrant_factory()
    seed(store)

    async def put(ops: Ops) -> None:
        await ops.put(("docs",), "intkey", {1: "a"})

    assert_rejected(store, mode, put, InvalidInputError)


def _max_value_bytes() -> int:
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


def test_path_open_in_another_process(store_dir: Path) -> None:
    path = store_dir / "held"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert holder.stdout is not None and holder.stdin is not None
    try:
        line = holder.stdout.readline().strip()
        assert line == "ready", f"holder process failed: {line!r}"
        with pytest.raises(StoreLockedError) as info:
            QdrantMemoryStore.embedded(path)
        message = str(info.value)
        assert str(path) in message, f"the message should name the locked path: {message!r}"
    finally:
        holder.stdin.write("\n")
        holder.stdin.flush()
        out, err = holder.communicate(timeout=120)
    assert holder.returncode == 0 and "closed" in out, err
    # The failed open changed nothing, and the lock goes with the holder.
    with QdrantMemoryStore.embedded(path) as store:
        found = store.search(("held",), limit=100)
        assert sorted(i.value["i"] for i in found) == list(range(20))


def test_locked_path_loses_nothing(store_dir: Path) -> None:
    path = store_dir / "twice"
    first = QdrantMemoryStore.embedded(path)
    try:
        first.put(("docs",), "a", {"v": 1})
        before = snapshot(first)
        with pytest.raises(StoreLockedError) as info:
            QdrantMemoryStore.embedded(path)  # a second handle in the same process
        assert "open" in str(info.value).lower()
        first.put(("docs",), "b", {"v": 2})  # the first handle still works
        assert snapshot(first)[: len(before)] == before
    finally:
        first.close()
    with QdrantMemoryStore.embedded(path) as again:
        assert sorted(i.key for i in again.search(("docs",))) == ["a", "b"]


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
