"""Cache query embeddings so one query is embedded once, however many tiers search it.

Assembling a context runs several searches with the same query text (facts,
episodes, strategies). :class:`CachedEmbeddings` wraps any LangChain
``Embeddings`` and keeps the most recent query vectors in a small LRU cache;
document embeddings pass straight through.

The cache holds recent query *texts* in process memory. :meth:`CachedEmbeddings.clear`
empties it; :func:`clear_embedding_cache` does so for any embeddings that
follow the protocol (a :class:`CachedEmbeddings`, or any object with a
``clear_cache()`` method), and ``TieredMemory.forget_user`` calls it so a
forgotten user's queries do not stay in memory.

Example:
    >>> from langchain_tiered_memory.fakes import HashingEmbeddings
    >>> emb = CachedEmbeddings(HashingEmbeddings(size=8))
    >>> emb.embed_query("hello") == emb.embed_query("hello"), emb.hits
    (True, 1)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from langchain_core.embeddings import Embeddings

__all__ = ["CachedEmbeddings", "clear_embedding_cache"]


class CachedEmbeddings(Embeddings):
    """An LRU cache of query embeddings in front of another ``Embeddings``.

    Args:
        inner: The embeddings to wrap.
        maxsize: How many query vectors to keep.

    Example:
        >>> from langchain_tiered_memory.fakes import HashingEmbeddings
        >>> emb = CachedEmbeddings(HashingEmbeddings(size=8))
        >>> _ = emb.embed_query("my address is 1 Main St")
        >>> emb.clear(), len(emb)
        (1, 0)
    """

    def __init__(self, inner: Embeddings, maxsize: int = 512) -> None:
        self.inner = inner
        self.maxsize = maxsize
        self.hits = 0
        self.misses = 0
        self._cache: OrderedDict[str, list[float]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """How many query vectors are cached."""
        with self._lock:
            return len(self._cache)

    def clear(self) -> int:
        """Forget every cached query text and vector; returns how many were dropped.

        The hit and miss counters are kept (they hold no text).
        """
        with self._lock:
            dropped = len(self._cache)
            self._cache.clear()
        return dropped

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


def clear_embedding_cache(*embeddings: Any) -> int:
    """Empty the query caches of ``embeddings``; returns how many cached queries were dropped.

    The protocol: a :class:`CachedEmbeddings` (and any ``CachedEmbeddings`` it
    wraps, through ``inner``) is cleared with :meth:`CachedEmbeddings.clear`; any
    other object with a callable ``clear_cache()`` method has it called (its
    return value counts when it is an int). ``None`` and objects without a
    cache are ignored; each object is cleared once.

    Example:
        >>> from langchain_tiered_memory.fakes import HashingEmbeddings
        >>> emb = CachedEmbeddings(HashingEmbeddings(size=8))
        >>> _ = emb.embed_query("hello")
        >>> clear_embedding_cache(emb, None, HashingEmbeddings(size=8))
        1
    """
    dropped = 0
    seen: set[int] = set()
    for start in embeddings:
        current = start
        while current is not None and id(current) not in seen:
            seen.add(id(current))
            if isinstance(current, CachedEmbeddings):
                dropped += current.clear()
                current = current.inner
                continue
            clear_cache = getattr(current, "clear_cache", None)
            if callable(clear_cache):
                result = clear_cache()
                dropped += result if isinstance(result, int) and not isinstance(result, bool) else 0
            break
    return dropped
