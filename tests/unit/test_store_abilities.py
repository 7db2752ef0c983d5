"""Optional store abilities are Protocols: the embedded store has each, InMemoryStore none."""

from __future__ import annotations

from pathlib import Path

from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.stores.abilities import (
    Closable,
    NamespaceVersioned,
    Purging,
    QueryPrefetching,
    ReadConcurrency,
    Restoring,
)
from langchain_tiered_memory.testing.fakes import HashingEmbeddings

ABILITIES = (Closable, NamespaceVersioned, Purging, QueryPrefetching, ReadConcurrency, Restoring)


def test_the_embedded_store_has_every_ability(tmp_path: Path) -> None:
    with TieredMemory.open(tmp_path, embeddings=HashingEmbeddings()) as memory:
        missing = [a.__name__ for a in ABILITIES if not isinstance(memory.store, a)]
        assert missing == []


def test_langgraphs_in_memory_store_has_none() -> None:
    store = InMemoryStore()
    assert [a.__name__ for a in ABILITIES if isinstance(store, a)] == []
