"""LangGraph's TTL store cases: expiry, refresh on read, default TTL, sweeping.

The cases mirror the behaviour the TTL tests of LangGraph's store suites check
(``libs/checkpoint-sqlite/tests/test_ttl.py`` and ``test_store_ttl`` of the Postgres
store tests, sync and async, in the langgraph repository, MIT licence), rewritten
against ``QdrantMemoryStore``. Those sleep through real seconds; here the store reads an
injected fake clock, which each case moves forward instead, so no case waits and
none depends on timing. TTLs are in minutes, as in LangGraph's ``ttl`` arguments.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from langgraph.store.base import BaseStore, TTLConfig
from upstream_support import MakeStore, by_design

from langchain_tiered_memory.testing.fakes import FakeClock

SECOND = 1 / 60  # one second, in minutes

MakeTTLStore = Callable[..., tuple[Any, FakeClock]]


@pytest.fixture
def make_ttl_store(make_store: MakeStore) -> MakeTTLStore:
    """``make_ttl_store(ttl=...)``: a store without a vector index and the fake clock it reads."""

    def make(ttl: TTLConfig | None = None) -> tuple[Any, FakeClock]:
        clock = FakeClock()
        return make_store(indexed=False, ttl=ttl, clock=clock), clock

    return make


def rewind(clock: FakeClock, **delta: float) -> None:
    """Move the clock back: an item expired but still stored shows again, a swept one does not."""
    clock.set(clock() - __import__("datetime").timedelta(**delta))


# --- SQLite store suite: test_ttl_basic and its async twin --------------------------------


def test_ttl_basic(make_ttl_store: MakeTTLStore) -> None:
    store, clock = make_ttl_store({"default_ttl": 1 * SECOND})
    store.put(("test",), "item1", {"value": "test"})
    item = store.get(("test",), "item1")
    assert item is not None
    assert item.value["value"] == "test"
    clock.advance(seconds=2)
    store.sweep_ttl()
    assert store.get(("test",), "item1") is None


def test_async_ttl_basic(make_ttl_store: MakeTTLStore) -> None:
    store, clock = make_ttl_store({"default_ttl": 1 * SECOND})

    async def case() -> None:
        await store.aput(("test",), "item1", {"value": "test"})
        item = await store.aget(("test",), "item1")
        assert item is not None
        assert item.value["value"] == "test"
        clock.advance(seconds=2)
        await store.asweep_ttl()
        assert await store.aget(("test",), "item1") is None

    asyncio.run(case())


# --- test_ttl_refresh / test_async_ttl_refresh ---------------------------------------------


def test_ttl_refresh(make_ttl_store: MakeTTLStore) -> None:
    store, clock = make_ttl_store({"default_ttl": 1 * SECOND, "refresh_on_read": True})
    store.put(("test",), "item1", {"value": "test"})
    clock.advance(seconds=0.5)
    assert store.sweep_ttl() == 0
    assert store.get(("test",), "item1", refresh_ttl=True) is not None  # expires at 1.5 s
    clock.advance(seconds=0.75)  # past the first expiry (1 s), before the refreshed one
    assert store.sweep_ttl() == 0
    item = store.get(("test",), "item1")  # refresh_on_read: expires at 2.25 s
    assert item is not None
    assert item.value["value"] == "test"
    clock.advance(seconds=1.75)
    assert store.sweep_ttl() == 1
    assert store.get(("test",), "item1") is None


def test_async_ttl_refresh(make_ttl_store: MakeTTLStore) -> None:
    store, clock = make_ttl_store({"default_ttl": 1 * SECOND, "refresh_on_read": True})

    async def case() -> None:
        await store.aput(("test",), "item1", {"value": "test"})
        clock.advance(seconds=0.5)
        assert await store.aget(("test",), "item1", refresh_ttl=True) is not None
        clock.advance(seconds=0.75)
        item = await store.aget(("test",), "item1")
        assert item is not None
        assert item.value["value"] == "test"
        clock.advance(seconds=2)
        assert await store.asweep_ttl() == 1
        assert await store.aget(("test",), "item1") is None

    asyncio.run(case())


# --- test_ttl_sweeper / test_async_ttl_sweeper ---------------------------------------------
# LangGraph's stores sweep in a background thread started by start_ttl_sweeper().
# This store sweeps from the calls themselves: the first call after
# sweep_interval_minutes have passed deletes what has expired.


def test_ttl_sweeper(make_ttl_store: MakeTTLStore) -> None:
    store, clock = make_ttl_store({"default_ttl": 2 * SECOND, "sweep_interval_minutes": 1})
    store.put(("test",), "item1", {"value": "test"})
    assert store.get(("test",), "item1") is not None
    clock.advance(minutes=1, seconds=1)
    assert store.get(("test",), "item1") is None  # this call sweeps
    rewind(clock, minutes=1)
    assert store.get(("test",), "item1") is None  # deleted, not only hidden


def test_async_ttl_sweeper(make_ttl_store: MakeTTLStore) -> None:
    store, clock = make_ttl_store({"default_ttl": 2 * SECOND, "sweep_interval_minutes": 1})

    async def case() -> None:
        await store.aput(("test",), "item1", {"value": "test"})
        assert await store.aget(("test",), "item1") is not None
        clock.advance(minutes=1, seconds=1)
        assert await store.aget(("test",), "item1") is None
        rewind(clock, minutes=1)
        assert await store.aget(("test",), "item1") is None

    asyncio.run(case())


def test_without_sweep_an_expired_item_is_hidden_but_kept(make_ttl_store: MakeTTLStore) -> None:
    store, clock = make_ttl_store({"default_ttl": 2 * SECOND})
    store.put(("test",), "item1", {"value": "test"})
    clock.advance(seconds=3)
    assert store.get(("test",), "item1") is None
    rewind(clock, seconds=3)
    assert store.get(("test",), "item1") is not None  # no sweep ran: the item is still stored


# --- test_ttl_custom_value, test_ttl_override_default -------------------------------------


def test_ttl_custom_value(make_ttl_store: MakeTTLStore) -> None:
    store, clock = make_ttl_store()
    store.put(("test",), "item1", {"value": "short"}, ttl=1 * SECOND)
    store.put(("test",), "item2", {"value": "long"}, ttl=3 * SECOND)
    clock.advance(seconds=2)
    store.sweep_ttl()
    assert store.get(("test",), "item1") is None
    assert store.get(("test",), "item2") is not None
    clock.advance(seconds=4)
    store.sweep_ttl()
    assert store.get(("test",), "item2") is None


def test_ttl_override_default(make_ttl_store: MakeTTLStore) -> None:
    store, clock = make_ttl_store({"default_ttl": 5 * SECOND})
    store.put(("test",), "item1", {"value": "override"}, ttl=1 * SECOND)
    store.put(("test",), "item2", {"value": "default"})
    store.put(("test",), "item3", {"value": "permanent"}, ttl=None)
    clock.advance(seconds=2)
    store.sweep_ttl()
    assert store.get(("test",), "item1") is None
    assert store.get(("test",), "item2") is not None
    assert store.get(("test",), "item3") is not None
    # That read refreshed item2 (refresh_on_read defaults to true): it now runs until 7 s.
    clock.advance(seconds=6)
    store.sweep_ttl()
    assert store.get(("test",), "item2") is None
    assert store.get(("test",), "item3") is not None


# --- test_search_with_ttl / test_async_search_with_ttl -------------------------------------


def test_search_with_ttl(make_ttl_store: MakeTTLStore) -> None:
    store, clock = make_ttl_store({"default_ttl": 1 * SECOND})
    store.put(("test",), "item1", {"value": "apple"})
    store.put(("test",), "item2", {"value": "banana"})
    results = store.search(("test",), filter={"value": "apple"})
    assert len(results) == 1
    assert results[0].key == "item1"
    clock.advance(seconds=2)
    store.sweep_ttl()
    assert len(store.search(("test",), filter={"value": "apple"})) == 0


def test_async_search_with_ttl(make_ttl_store: MakeTTLStore) -> None:
    store, clock = make_ttl_store({"default_ttl": 1 * SECOND})

    async def case() -> None:
        await store.aput(("test",), "item1", {"value": "apple"})
        await store.aput(("test",), "item2", {"value": "banana"})
        results = await store.asearch(("test",), filter={"value": "apple"})
        assert len(results) == 1
        assert results[0].key == "item1"
        clock.advance(seconds=2)
        await store.asweep_ttl()
        assert len(await store.asearch(("test",), filter={"value": "apple"})) == 0

    asyncio.run(case())


# --- test_async_asearch_refresh_ttl --------------------------------------------------------


def test_async_asearch_refresh_ttl(make_ttl_store: MakeTTLStore) -> None:
    store, clock = make_ttl_store({"default_ttl": 4 * SECOND, "refresh_on_read": True})
    namespace = ("docs", "user1")

    async def case() -> None:
        await store.aput(namespace, "item1", {"text": "content1", "id": 1})
        await store.aput(namespace, "item2", {"text": "content2", "id": 2})
        clock.advance(seconds=3)
        found = await store.asearch(namespace, filter={"id": 1}, refresh_ttl=True)
        assert len(found) == 1
        assert found[0].key == "item1"  # now expires at 7 s; item2 still at 4 s
        clock.advance(seconds=2)
        await store.asweep_ttl()
        item1 = await store.aget(namespace, "item1", refresh_ttl=False)
        assert item1 is not None
        assert item1.value["text"] == "content1"
        assert await store.aget(namespace, "item2", refresh_ttl=False) is None
        clock.advance(seconds=2.5)
        await store.asweep_ttl()
        assert await store.aget(namespace, "item1", refresh_ttl=False) is None

    asyncio.run(case())


# --- omit_expired cases of the SQLite suite ------------------------------------------------
# Those backdate a row's expiry in SQL; here the clock moves past a long TTL instead,
# and no sweep runs, so the expired item is still stored when it is read.

LONG = 5.0  # minutes


def test_omit_expired_filters_read_paths(make_ttl_store: MakeTTLStore) -> None:
    store, clock = make_ttl_store({"default_ttl": LONG, "omit_expired": True})
    expired_ns, control_ns = ("omit", "expired"), ("omit", "control")
    store.put(expired_ns, "e", {"data": "gone"}, ttl=LONG)
    store.put(control_ns, "c", {"data": "keep"}, ttl=None)
    clock.advance(minutes=LONG + 1)
    assert store.get(expired_ns, "e") is None
    assert store.get(control_ns, "c") is not None
    assert store.search(expired_ns) == []
    assert [i.key for i in store.search(control_ns)] == ["c"]
    namespaces = store.list_namespaces(prefix=("omit",))
    assert expired_ns not in namespaces
    assert control_ns in namespaces


def test_async_omit_expired_filters_read_paths(make_ttl_store: MakeTTLStore) -> None:
    store, clock = make_ttl_store({"default_ttl": LONG, "omit_expired": True})
    expired_ns, control_ns = ("omit", "expired"), ("omit", "control")

    async def case() -> None:
        await store.aput(expired_ns, "e", {"data": "gone"}, ttl=LONG)
        await store.aput(control_ns, "c", {"data": "keep"}, ttl=None)
        clock.advance(minutes=LONG + 1)
        assert await store.aget(expired_ns, "e") is None
        assert await store.aget(control_ns, "c") is not None
        assert await store.asearch(expired_ns) == []
        assert [i.key for i in await store.asearch(control_ns)] == ["c"]
        namespaces = await store.alist_namespaces(prefix=("omit",))
        assert expired_ns not in namespaces
        assert control_ns in namespaces

    asyncio.run(case())


@by_design("expired items are hidden from every read whatever omit_expired says")
@pytest.mark.parametrize("omit", [None, False], ids=["default", "explicit-false"])
def test_omit_expired_disabled_preserves_expired_rows(
    make_ttl_store: MakeTTLStore, omit: bool | None
) -> None:
    ttl: TTLConfig = {"default_ttl": LONG}
    if omit is not None:
        ttl["omit_expired"] = omit
    store, clock = make_ttl_store(ttl)
    store.put(("keep",), "k", {"data": "still-here"}, ttl=LONG)
    clock.advance(minutes=LONG + 1)
    assert store.get(("keep",), "k", refresh_ttl=False) is not None
    assert [i.key for i in store.search(("keep",), refresh_ttl=False)] == ["k"]
    assert ("keep",) in store.list_namespaces(prefix=("keep",))


def test_omit_expired_refresh_ttl_only_refreshes_live_rows(make_ttl_store: MakeTTLStore) -> None:
    store, clock = make_ttl_store(
        {"default_ttl": LONG, "omit_expired": True, "refresh_on_read": True}
    )
    ns = ("refresh",)
    store.put(ns, "expired", {"n": 0}, ttl=1.0)
    store.put(ns, "live_get", {"n": 1}, ttl=LONG)
    store.put(ns, "live_search", {"n": 2}, ttl=LONG)
    clock.advance(minutes=2)  # "expired" ran out at minute 1; the others run until minute 5
    assert store.get(ns, "expired", refresh_ttl=True) is None
    assert "expired" not in [i.key for i in store.search(ns, refresh_ttl=True)]
    assert store.get(ns, "live_get", refresh_ttl=True) is not None
    clock.advance(minutes=4)  # minute 6: past the first expiry, before the refreshed (7)
    assert store.get(ns, "live_get", refresh_ttl=False) is not None
    assert store.get(ns, "live_search", refresh_ttl=False) is not None
    assert store.get(ns, "expired", refresh_ttl=False) is None  # the reads did not revive it


def test_omit_expired_search_pagination(make_ttl_store: MakeTTLStore) -> None:
    store, clock = make_ttl_store({"default_ttl": LONG, "omit_expired": True})
    ns = ("page",)
    # Written oldest first, so the most recently updated order is a, expired, b, c:
    # the expired item sits inside the first page of two.
    for key in ("c", "b"):
        store.put(ns, key, {"k": key}, ttl=LONG)
        clock.advance(seconds=1)
    store.put(ns, "expired", {"k": "x"}, ttl=1.0)
    clock.advance(seconds=1)
    store.put(ns, "a", {"k": "a"}, ttl=LONG)
    clock.advance(minutes=2)
    assert [i.key for i in store.search(ns, limit=2, offset=0)] == ["a", "b"]
    assert [i.key for i in store.search(ns, limit=2, offset=2)] == ["c"]


# --- Postgres store suites: test_store_ttl (sync and async) --------------------------------
# Their store fixture sets default_ttl, refresh_on_read and a sweep interval of half
# the TTL, and runs the sweeper; the vector search runs with an index.

PG_TTL_SECONDS = 6
PG_TTL: TTLConfig = {
    "default_ttl": PG_TTL_SECONDS * SECOND,
    "refresh_on_read": True,
    "sweep_interval_minutes": 1,
}


def _pg_store(make_store: MakeStore) -> tuple[BaseStore, FakeClock]:
    clock = FakeClock()
    return make_store(ttl=PG_TTL, clock=clock), clock


def test_store_ttl(make_store: MakeStore) -> None:
    store, clock = _pg_store(make_store)
    ns = ("foo",)
    store.put(ns, key="item1", value={"foo": "bar"}, ttl=PG_TTL_SECONDS * SECOND)
    clock.advance(seconds=PG_TTL_SECONDS - 2)
    assert store.get(ns, key="item1", refresh_ttl=True) is not None
    clock.advance(seconds=PG_TTL_SECONDS - 2)
    assert len(store.search(ns, query="foo", refresh_ttl=True)) == 1
    clock.advance(seconds=PG_TTL_SECONDS - 2)
    assert store.get(ns, key="item1", refresh_ttl=False) is not None
    clock.advance(seconds=PG_TTL_SECONDS - 1)
    assert len(store.search(ns, query="bar", refresh_ttl=False)) == 0


def test_async_store_ttl(make_store: MakeStore) -> None:
    store, clock = _pg_store(make_store)
    ns = ("foo",)

    async def case() -> None:
        await store.aput(ns, key="item1", value={"foo": "bar"}, ttl=PG_TTL_SECONDS * SECOND)
        clock.advance(seconds=PG_TTL_SECONDS - 2)
        assert await store.aget(ns, key="item1", refresh_ttl=True) is not None
        clock.advance(seconds=PG_TTL_SECONDS - 2)
        assert len(await store.asearch(ns, query="foo", refresh_ttl=True)) == 1
        clock.advance(seconds=PG_TTL_SECONDS - 2)
        assert await store.aget(ns, key="item1", refresh_ttl=False) is not None
        clock.advance(seconds=PG_TTL_SECONDS - 1)
        assert len(await store.asearch(ns, query="bar", refresh_ttl=False)) == 0

    asyncio.run(case())
