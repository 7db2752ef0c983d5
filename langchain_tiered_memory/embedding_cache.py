"""Cache query embeddings so one query is embedded once, however many tiers search it.

Assembling a context runs several searches with the same query text (facts,
episodes, strategies). :class:`CachedEmbeddings` wraps any LangChain
``Embeddings`` and keeps the most recent query vectors in a small LRU cache;
document embeddings pass straight through.

Example:
    >>> from langchain_tiered_memory.fakes import HashingEmbeddings
    >>> emb = CachedEmbeddings(HashingEmbeddings(size=8))
    >>> emb.embed_query("hello") == emb.embed_query("hello"), emb.hits
    (True, 1)
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from langchain_core.embeddings import Embeddings

__all__ = ["CachedEmbeddings"]


class CachedEmbeddings(Embeddings):
    """An LRU cache of query embeddings in front of another ``Embeddings``.

    Args:
        inner: The embeddings to wrap.
        maxsize: How many query vectors to keep.
    """

    def __init__(self, inner: Embeddings, maxsize: int = 512) -> None:
        self.inner = inner
        self.maxsize = maxsize
        self.hits = 0
        self.misses = 0
        self._cache: OrderedDict[str, list[float]] = OrderedDict()
        self._lock = threading.Lock()

    def _lookup(self, text: str) -> list[float] | None:
        with self._lock:
            vec = self._cache.get(text)
            if vec is not None:
                self._cache.move_to_end(text)
                self.hits += 1
            else:
                self.misses += 1
            return vec

    def _keep(self, text: str, vec: list[float]) -> list[float]:
        with self._lock:
            self._cache[text] = vec
            self._cache.move_to_end(text)
            while len(self._cache) > self.maxsize:
                self._cache.popitem(last=False)
        return vec

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents with the wrapped model (not cached)."""
        return self.inner.embed_documents(texts)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Async twin of :meth:`embed_documents`."""
        return await self.inner.aembed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        """Embed a query, from the cache when it was seen recently."""
        vec = self._lookup(text)
        return (
            list(vec) if vec is not None else list(self._keep(text, self.inner.embed_query(text)))
        )

    async def aembed_query(self, text: str) -> list[float]:
        """Async twin of :meth:`embed_query`."""
        vec = self._lookup(text)
        if vec is not None:
            return list(vec)
        return list(self._keep(text, await self.inner.aembed_query(text)))
