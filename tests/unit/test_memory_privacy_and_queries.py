"""Blank queries are rejected up front; forgetting a user also empties the query cache."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory import InvalidInputError, TieredMemory
from langchain_tiered_memory.embedding_cache import CachedEmbeddings, clear_embedding_cache
from langchain_tiered_memory.memory import DELETIONS_NAMESPACE
from langchain_tiered_memory.testing.fakes import HashingEmbeddings

BLANK = ["", "   ", "\n\t ", "\u2028"]
SECRET_QUERY = "where does my ex-partner Zorblatt live now"


def in_memory(embeddings: Any = None) -> TieredMemory:
    emb = embeddings or HashingEmbeddings(size=64)
    store = InMemoryStore(index={"dims": 64, "embed": emb, "fields": ["text"]})
    return TieredMemory(store, embeddings=emb)


@pytest.fixture
def memory() -> Iterator[TieredMemory]:
    mem = in_memory()
    mem.for_user("alice").remember("I'm allergic to shellfish.")
    yield mem
    mem.close()


# -- blank queries --------------------------------------------------------------------


@pytest.mark.parametrize("query", BLANK)
async def test_blank_queries_are_rejected_before_any_retrieval(
    memory: TieredMemory, query: str
) -> None:
    alice = memory.for_user("alice")
    calls = [
        lambda: alice.build_memory_context(query, 500),
        lambda: alice.search(query),
    ]
    for call in calls:
        with pytest.raises(InvalidInputError, match="non-empty query"):
            call()
    with pytest.raises(InvalidInputError, match="abuild_memory_context needs a non-empty query"):
        await alice.abuild_memory_context(query, 500)
    with pytest.raises(InvalidInputError, match="asearch needs a non-empty query"):
        await alice.asearch(query)
    assert memory.stats()["errors"] == {}  # rejected up front, not recorded as retrieval failures


@pytest.mark.parametrize("query", [None, 42, b"dinner"])
async def test_non_text_queries_are_rejected(memory: TieredMemory, query: Any) -> None:
    alice = memory.for_user("alice")
    with pytest.raises(InvalidInputError, match="as a string"):
        alice.build_memory_context(query)
    with pytest.raises(InvalidInputError, match="as a string"):
        await alice.asearch(query)


def test_a_real_query_still_works(memory: TieredMemory) -> None:
    alice = memory.for_user("alice")
    assert "shellfish" in alice.build_memory_context("dinner ideas", 500).text
    assert alice.search("  shellfish  ")  # surrounding blanks are fine
    with pytest.raises(InvalidInputError, match="top_k"):
        alice.search("", top_k=0)  # top_k is still checked


# -- the query embedding cache ---------------------------------------------------------


def test_cached_embeddings_clear_drops_every_query_text() -> None:
    emb = CachedEmbeddings(HashingEmbeddings(size=16), maxsize=8)
    first = emb.embed_query(SECRET_QUERY)
    emb.embed_query("another question")
    assert len(emb) == 2
    assert emb.clear() == 2
    assert len(emb) == 0 and SECRET_QUERY not in emb._cache
    assert emb.embed_query(SECRET_QUERY) == first  # still works, recomputed
    assert (emb.hits, emb.misses) == (0, 3)


async def test_clear_embedding_cache_follows_the_protocol() -> None:
    class ClearCache:
        cleared = 0

        def clear_cache(self) -> int:
            self.cleared += 1
            return 5

    inner = CachedEmbeddings(HashingEmbeddings(size=16))
    outer = CachedEmbeddings(inner)
    other = ClearCache()
    await outer.aembed_query("a")  # cached by outer and inner
    inner.embed_query("b")
    # Nested caches are cleared through ``inner``; duplicates and None are ignored.
    assert clear_embedding_cache(outer, None, other, inner, other, HashingEmbeddings()) == 3 + 5
    assert len(outer) == len(inner) == 0
    assert other.cleared == 1


def _cached_memory(where: str, path: Path) -> tuple[TieredMemory, CachedEmbeddings]:
    from langchain_tiered_memory.stores import QdrantMemoryStore

    # The Qdrant store embeds queries with embed_query (cached); InMemoryStore
    # embeds them with embed_documents, which the cache passes through.
    cached = CachedEmbeddings(HashingEmbeddings(size=64))
    store = QdrantMemoryStore.embedded(
        path, index={"dims": 64, "embed": cached, "fields": ["text"]}
    )
    memory = TieredMemory(store, embeddings=cached if where == "memory" else None)
    memory._owns_store = True
    return memory, cached  # "store": only the store's index knows the cache


def test_forget_user_clears_the_query_cache_of_the_store_index(tmp_path: Path) -> None:
    memory, cached = _cached_memory("store", tmp_path)
    with memory:
        alice = memory.for_user("alice")
        alice.remember("I'm allergic to shellfish.")
        alice.search(SECRET_QUERY)
        assert SECRET_QUERY in cached._cache
        assert memory.forget_user("alice") > 0
        assert len(cached) == 0
        assert list(memory.export_user("alice")) == []


async def test_aforget_user_deletes_like_forget_user_and_clears_the_cache(
    tmp_path: Path,
) -> None:
    memory, cached = _cached_memory("memory", tmp_path)
    async with memory:
        for user in ("alice", "bob"):
            u = memory.for_user(user)
            await u.aremember("I'm allergic to shellfish and I live in Lyon.")
            await u.asearch(SECRET_QUERY)
        assert SECRET_QUERY in cached._cache
        before = len(list(memory.export_user("alice")))
        assert await memory.aforget_user("Alice") == before > 0
        assert list(memory.export_user("alice")) == []
        assert list(memory.export_user("bob"))  # untouched
        assert len(cached) == 0
        [record] = [i.value for i in await memory.store.asearch(DELETIONS_NAMESPACE)]
        assert record["records"] == before and "alice" not in str(record)


def test_forget_user_clears_the_cache_of_the_default_memory(tmp_path: Path) -> None:
    with TieredMemory.open(tmp_path / "mem", embeddings=HashingEmbeddings(size=64)) as memory:
        memory.for_user("alice").remember("I'm allergic to shellfish.")
        memory.for_user("alice").search(SECRET_QUERY)
        assert isinstance(memory.embeddings, CachedEmbeddings)
        assert SECRET_QUERY in memory.embeddings._cache
        assert memory.forget_user("alice") > 0
        assert list(memory.export_user("alice")) == []
        assert len(memory.embeddings) == 0
