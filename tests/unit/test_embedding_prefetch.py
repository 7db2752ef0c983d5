"""A query embedded in the background is embedded once and waited for, never lost or leaked."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings

from langchain_tiered_memory import QdrantMemoryStore, TieredMemory, ToolUsageRecord
from langchain_tiered_memory.embedding_cache import CachedEmbeddings
from langchain_tiered_memory.testing.fakes import HashingEmbeddings

DIMS = 32


class GatedEmbeddings(Embeddings):
    """Hashing embeddings whose ``embed_query`` can be held until a gate opens."""

    def __init__(self, *, gated: bool = False, failures: int = 0, delay: float = 0.0) -> None:
        self.inner = HashingEmbeddings(size=DIMS)
        self.delay = delay  # seconds per query: a real model takes milliseconds
        self.gate = threading.Event()
        if not gated:
            self.gate.set()
        self.failures = failures
        self.query_calls = 0
        self.running = False
        self.started = threading.Event()
        self.active = 0
        self.most_active = 0
        self._count_lock = threading.Lock()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        with self._count_lock:
            self.query_calls += 1
            self.active += 1
            self.most_active = max(self.most_active, self.active)
        self.running = True
        self.started.set()
        try:
            self.gate.wait(5)
            time.sleep(self.delay)
            if self.failures:
                self.failures -= 1
                raise RuntimeError("embedding service hiccup")
            return self.inner.embed_query(text)
        finally:
            self.running = False
            with self._count_lock:
                self.active -= 1


def _settle(emb: CachedEmbeddings) -> None:
    for future in list(emb._pending.values()):
        future.result(5)


def test_a_prefetched_query_is_embedded_once() -> None:
    inner = GatedEmbeddings()
    emb = CachedEmbeddings(inner)
    emb.prefetch("shellfish allergy")
    emb.prefetch("shellfish allergy")  # already in flight or cached: nothing new
    assert emb.embed_query("shellfish allergy") == inner.inner.embed_query("shellfish allergy")
    emb.prefetch("shellfish allergy")
    assert inner.query_calls == 1
    assert (emb.hits, emb.misses) == (1, 1)


def test_embed_query_waits_for_the_prefetch_in_flight() -> None:
    inner = GatedEmbeddings(gated=True)
    emb = CachedEmbeddings(inner)
    emb.prefetch("q")
    threading.Timer(0.05, inner.gate.set).start()
    started = time.perf_counter()
    vec = emb.embed_query("q")
    assert time.perf_counter() - started >= 0.04  # it waited rather than embedding again
    assert vec == inner.inner.embed_query("q") and inner.query_calls == 1


def test_prefetches_of_different_queries_run_side_by_side() -> None:
    # A remote embedding API mostly waits on the network: one user's context must not
    # queue behind another's prefetch (the pool has min(32, CPUs + 4) threads).
    inner = GatedEmbeddings(gated=True)
    emb = CachedEmbeddings(inner)
    texts = [f"question {i}" for i in range(5)]
    for text in texts:
        emb.prefetch(text)
    deadline = time.monotonic() + 5
    while inner.most_active < len(texts) and time.monotonic() < deadline:
        time.sleep(0.005)
    inner.gate.set()
    assert [emb.embed_query(t) for t in texts] == inner.inner.embed_documents(texts)
    assert inner.most_active == len(texts) and inner.query_calls == len(texts)


async def test_aembed_query_waits_for_the_prefetch_in_flight() -> None:
    inner = GatedEmbeddings(gated=True)
    emb = CachedEmbeddings(inner)
    emb.prefetch("q")
    threading.Timer(0.05, inner.gate.set).start()
    assert await emb.aembed_query("q") == inner.inner.embed_query("q")
    assert inner.query_calls == 1


def test_a_prefetch_running_when_the_cache_is_cleared_is_not_kept() -> None:
    # forget_user clears the cache: a query text embedded meanwhile must not come back.
    inner = GatedEmbeddings(gated=True)
    emb = CachedEmbeddings(inner)
    emb.prefetch("where does my ex live")
    future = emb._pending["where does my ex live"]
    emb.clear()
    inner.gate.set()
    future.result(5)
    assert len(emb) == 0 and "where does my ex live" not in emb._cache


def test_a_failed_prefetch_is_logged_and_the_query_embedded_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    inner = GatedEmbeddings(gated=True, failures=1)
    emb = CachedEmbeddings(inner)
    emb.prefetch("q")
    inner.gate.set()
    with caplog.at_level(logging.WARNING, logger="langchain_tiered_memory.embedding_cache"):
        assert emb.embed_query("q") == inner.inner.embed_query("q")
    assert inner.query_calls == 2
    assert "embedding service hiccup" in caplog.text


def test_a_persistent_embedding_failure_reaches_the_caller() -> None:
    inner = GatedEmbeddings(gated=True, failures=2)
    emb = CachedEmbeddings(inner)
    emb.prefetch("q")
    inner.gate.set()
    with pytest.raises(RuntimeError, match="hiccup"):
        emb.embed_query("q")
    assert len(emb) == 0


def test_the_store_prefetches_only_what_its_searches_would_embed(tmp_path: Path) -> None:
    cached = CachedEmbeddings(GatedEmbeddings())
    index: Any = {"dims": DIMS, "embed": cached, "fields": ["text"]}
    with QdrantMemoryStore.embedded(tmp_path / "hybrid", index=index) as store:
        assert store.prefetch_query("q") is True
        _settle(cached)
        assert cached.embed_query("q") and cached.inner.query_calls == 1  # type: ignore[attr-defined]
    lexical = QdrantMemoryStore.embedded(tmp_path / "lexical", index=index, retrieval="lexical")
    plain: Any = {"dims": DIMS, "embed": GatedEmbeddings(), "fields": ["text"]}
    with lexical, QdrantMemoryStore.embedded(tmp_path / "plain", index=plain) as no_cache:
        assert lexical.prefetch_query("q2") is False  # lexical searches embed nothing
        assert no_cache.prefetch_query("q2") is False  # no cache to put the vector in
    with QdrantMemoryStore.embedded(tmp_path / "no-index") as store:
        assert store.prefetch_query("q") is False


def _memory_with_tool_and_fact(store: Any) -> TieredMemory:
    memory = TieredMemory(store, embeddings=store.index_config["embed"])
    alice = memory.for_user("alice")
    alice.semantic.store_fact("alice", "Allergic to shellfish", confidence=0.95)
    alice.procedural.record_tool_use(
        ToolUsageRecord(
            tool_name="orders_v1",
            parameters={},
            context="order lookup",
            success=False,
            execution_time_ms=120,
            error_message="410 Gone: use orders_v2",
        )
    )
    return memory


def _index(inner: GatedEmbeddings) -> Any:
    return {"dims": DIMS, "embed": CachedEmbeddings(inner), "fields": ["text"]}


async def test_an_async_context_embeds_its_query_once() -> None:
    # asyncio.gather starts every tier's search at once: each missed the cache
    # and embedded the query (4 embeddings per context before the prefetch).
    from qdrant_client import QdrantClient

    inner = GatedEmbeddings(delay=0.02)
    client = QdrantClient(":memory:")  # a client engine: reads overlap, tiers are gathered
    store = QdrantMemoryStore.from_client(client, index=_index(inner))
    memory = _memory_with_tool_and_fact(store)
    try:
        alice = memory.for_user("alice")
        for i in range(3):
            before = inner.query_calls
            ctx = await alice.abuild_memory_context(
                f"dinner with seafood, then my orders {i}", token_budget=500
            )
            assert "shellfish" in ctx.text and "orders_v1" in ctx.text and not ctx.errors
            assert inner.query_calls - before == 1
    finally:
        memory.close()
        client.close()


def test_tiers_read_from_threads_share_one_query_embedding() -> None:
    from qdrant_client import QdrantClient

    inner = GatedEmbeddings(delay=0.02)
    client = QdrantClient(":memory:")  # a client engine: reads overlap, tiers use threads
    store = QdrantMemoryStore.from_client(client, index=_index(inner))
    assert store.concurrent_reads
    memory = _memory_with_tool_and_fact(store)
    try:
        alice = memory.for_user("alice")
        for i in range(3):
            before = inner.query_calls
            ctx = alice.build_memory_context(
                f"dinner with seafood, then my orders {i}", token_budget=500
            )
            assert "shellfish" in ctx.text and not ctx.errors
            assert inner.query_calls - before == 1
    finally:
        memory.close()
        client.close()
