"""Writing items back with their own timestamps: ``restore_items`` and the import adapter."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory import InvalidInputError
from langchain_tiered_memory.export_import import (
    awrite_records,
    export_record,
    parse_record,
    write_records,
)
from langchain_tiered_memory.stores import QdrantMemoryStore
from langchain_tiered_memory.stores.restore import RestoreOp
from langchain_tiered_memory.testing.fakes import HashingEmbeddings

NS = ("tiered_memory", "alice", "semantic", "facts")
T0 = datetime(2024, 3, 1, 12, 0, tzinfo=timezone.utc)
INDEX: Any = {"dims": 64, "embed": HashingEmbeddings(size=64), "fields": ["text"]}


def ops() -> list[RestoreOp]:
    texts = ["Allergic to shellfish", "Lives in Lyon", "Plays the cello"]
    return [
        RestoreOp(
            NS,
            f"k{i}",
            {"text": text, "n": i},
            created_at=T0 + timedelta(days=i),
            updated_at=T0 + timedelta(days=i, hours=5),
            index=["text"],
        )
        for i, text in enumerate(texts)
    ]


@pytest.fixture(params=["embedded", "client"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[QdrantMemoryStore]:
    if request.param == "embedded":
        qdrant = QdrantMemoryStore.embedded(tmp_path, index=INDEX)
    else:
        from qdrant_client import QdrantClient

        qdrant = QdrantMemoryStore.from_client(QdrantClient(":memory:"), index=INDEX)
        qdrant._owns_engine = True
    with qdrant:
        yield qdrant


def stamps(store: BaseStore) -> dict[str, tuple[datetime, datetime]]:
    return {i.key: (i.created_at, i.updated_at) for i in store.search(NS, limit=10)}


def test_restore_items_keeps_times_order_and_search(store: QdrantMemoryStore) -> None:
    assert store.restore_items(ops()) == 3
    assert stamps(store) == {op.key: (op.created_at, op.updated_at) for op in ops()}
    assert [i.key for i in store.search(NS, limit=10)] == ["k2", "k1", "k0"]  # newest first
    assert store.search(NS, query="shellfish allergy", limit=1)[0].key == "k0"  # embedded
    later = T0 + timedelta(days=10)
    assert [i.key for i in store.search(NS, filter={"n": 1})] == ["k1"]
    store.put(NS, "k0", {"text": "Allergic to peanuts", "n": 0})  # a normal write: stamped now
    item = store.get(NS, "k0")
    assert item is not None and item.updated_at > later
    assert item.created_at == T0  # and keeps the restored creation time


@pytest.mark.parametrize("retrieval", ["hybrid", "dense", "lexical"])
def test_restored_items_score_like_put_items(
    store: QdrantMemoryStore, tmp_path: Path, retrieval: Any
) -> None:
    store.restore_items(ops())
    with QdrantMemoryStore.embedded(tmp_path / "put", index=INDEX) as other:
        for op in ops():
            other.put(op.namespace, op.key, op.value, index=op.index)
        for query in ("shellfish allergy", "cello", "Lyon"):
            restored = store.search(NS, query=query, retrieval=retrieval)
            put = other.search(NS, query=query, retrieval=retrieval)
            assert [(i.key, pytest.approx(i.score, abs=1e-5)) for i in restored] == [
                (i.key, i.score) for i in put
            ]


async def test_arestore_items_is_the_async_twin(store: QdrantMemoryStore) -> None:
    assert await store.arestore_items(ops()) == 3
    assert stamps(store) == {op.key: (op.created_at, op.updated_at) for op in ops()}


BAD_FIELDS: list[tuple[str, Any]] = [
    ("created_at", "2024-03-01"),
    ("updated_at", None),
    ("value", {"x": float("nan")}),
    ("namespace", ("a.b",)),
    ("key", 7),
]


def test_a_bad_op_writes_nothing(store: QdrantMemoryStore) -> None:
    good = ops()
    for field, bad in BAD_FIELDS:
        with pytest.raises(InvalidInputError):
            store.restore_items([*good[:2], good[2]._replace(**{field: bad})])
        assert store.search(NS) == [], field


def test_naive_times_are_taken_as_utc_and_the_last_op_per_key_wins(
    store: QdrantMemoryStore,
) -> None:
    naive = datetime(2024, 3, 1, 12, 0)
    first, second = ops()[0], ops()[0]._replace(value={"text": "Second"}, updated_at=naive)
    assert store.restore_items([first, second]) == 1
    item = store.get(NS, "k0")
    assert item is not None and item.value == {"text": "Second"} and item.updated_at == T0


def test_export_records_round_trip_through_an_in_memory_store() -> None:
    source = InMemoryStore()
    source.put(NS, "k", {"text": "hello"})
    record = export_record(source.get(NS, "k"))  # type: ignore[arg-type]
    record["created_at"] = T0.isoformat()
    record["updated_at"] = (T0 + timedelta(hours=1)).isoformat()
    target = InMemoryStore(index=INDEX)
    write_records(target, [parse_record(record)])
    item = target.get(NS, "k")
    assert item is not None and (item.created_at, item.updated_at) == (
        T0,
        T0 + timedelta(hours=1),
    )
    assert target.search(NS, query="hello")[0].key == "k"  # still indexed


class _ForwardingStore(BaseStore):
    """Any other BaseStore: no restore_items, not an InMemoryStore."""

    def __init__(self) -> None:
        self.inner = InMemoryStore()

    def batch(self, ops: Any) -> Any:
        return self.inner.batch(ops)

    async def abatch(self, ops: Any) -> Any:
        return await self.inner.abatch(ops)


async def test_other_stores_are_stamped_now_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = _ForwardingStore()
    with caplog.at_level(logging.WARNING, logger="langchain_tiered_memory.export_import"):
        await awrite_records(store, ops())
    assert "_ForwardingStore has no restore_items() method" in caplog.text
    item = store.get(NS, "k0")
    assert item is not None and item.updated_at > T0 + timedelta(days=30)


@pytest.mark.parametrize(
    "record",
    [
        {"created_at": 5},
        {"updated_at": "yesterday"},
        {"format": "langchain-tiered-memory/v0"},
        {"namespace": ["other", "alice"]},
    ],
)
def test_parse_record_rejects_bad_fields(record: dict[str, Any]) -> None:
    good = {
        "format": "langchain-tiered-memory/v1",
        "namespace": list(NS),
        "key": "k",
        "value": {"text": "x"},
        "created_at": T0.isoformat(),
        "updated_at": T0.isoformat(),
    }
    parse_record(good)
    with pytest.raises((ValueError, TypeError)):
        parse_record({**good, **record})
    missing = dict(good)
    del missing["updated_at"]
    with pytest.raises(KeyError):
        parse_record(missing)


def test_restored_times_keep_their_utc_offset(store: QdrantMemoryStore) -> None:
    lisbon = timezone(timedelta(hours=1))
    created = datetime(2024, 3, 1, 9, 30, tzinfo=lisbon)
    updated = datetime(2024, 3, 2, 18, 0, 0, 5, tzinfo=timezone(timedelta(hours=-11)))
    store.restore_items([RestoreOp(NS, "tz", {"text": "Moved to Lisbon"}, created, updated)])
    item = store.get(NS, "tz")
    assert item is not None
    assert item.created_at.isoformat() == created.isoformat()  # the offset too, as exported
    assert item.updated_at.isoformat() == updated.isoformat()
    assert export_record(item)["updated_at"] == updated.isoformat()
