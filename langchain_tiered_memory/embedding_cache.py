"""Cache query embeddings so one query is embedded once, however many tiers search it.

:class:`CachedEmbeddings` keeps the most recent query vectors of any LangChain
``Embeddings`` in a small LRU cache (documents pass straight through), and
:meth:`~CachedEmbeddings.prefetch` embeds a query on a background thread so the
tiers searched at the same time share one embedding. The cache holds recent
query *texts* in process memory: ``TieredMemory.forget_user`` empties it with
:func:`clear_embedding_cache`.

Examples:
    >>> from langchain_tiered_memory.testing.fakes import HashingEmbeddings
    >>> emb = CachedEmbeddings(HashingEmbeddings(size=8))
    >>> emb.embed_query("hello") == emb.embed_query("hello"), emb.hits
    (True, 1)
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from langchain_core.embeddings import Embeddings

__all__ = ["CachedEmbeddings", "clear_embedding_cache"]

logger = logging.getLogger(__name__)

# Default size (min(32, CPUs + 4)): a remote embedding API waits on the network, and a
# small pool would queue one user's context behind another's prefetch.
_PREFETCH = ThreadPoolExecutor(thread_name_prefix="tiered-memory-embed")


class CachedEmbeddings(Embeddings):
    """An LRU cache of query embeddings in front of another ``Embeddings``.

    Args:
        inner: The embeddings to wrap.
        maxsize: How many query vectors to keep.

    Examples:
        >>> from langchain_tiered_memory.testing.fakes import HashingEmbeddings
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
        self._pending: dict[str, Future[list[float]]] = {}
        self._generation = 0  # bumped by clear(): a prefetch started before it is not kept
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
            self._pending.clear()
            self._generation += 1
        return dropped

    def prefetch(self, text: str) -> None:
        """Start embedding ``text`` as a query on a background thread; returns at once.

        A later :meth:`embed_query` (or :meth:`aembed_query`) of ``text`` waits
        for this result. Nothing happens when ``text`` is cached or already
        being embedded. A failed prefetch is logged and the later call embeds
        again, so its error (if it persists) reaches the caller.
        """
        with self._lock:
            if text in self._cache or text in self._pending:
                return
            self.misses += 1  # the one embedding of this text
            self._pending[text] = _PREFETCH.submit(self._embed_and_keep, text, self._generation)

    def _embed_and_keep(self, text: str, generation: int) -> list[float]:
        try:
            vec = self.inner.embed_query(text)
        except BaseException:
            with self._lock:
                self._pending.pop(text, None)
            raise
        with self._lock:  # cache and pending change together: a lookup sees one of them
            if generation == self._generation:
                self._store(text, vec)
            self._pending.pop(text, None)
        return vec

    def _lookup(self, text: str) -> tuple[list[float] | None, Future[list[float]] | None]:
        """The cached vector of ``text``, else the prefetch embedding it (if any)."""
        with self._lock:
            vec = self._cache.get(text)
            if vec is not None:
                self._cache.move_to_end(text)
                self.hits += 1
                return vec, None
            pending = self._pending.get(text)
            if pending is not None:
                self.hits += 1
            else:
                self.misses += 1
            return None, pending

    def _store(self, text: str, vec: list[float]) -> None:
        self._cache[text] = vec
        self._cache.move_to_end(text)
        while len(self._cache) > self.maxsize:
            self._cache.popitem(last=False)

    def _keep(self, text: str, vec: list[float]) -> list[float]:
        with self._lock:
            self._store(text, vec)
        return vec

    @staticmethod
    def _prefetch_failed(text: str, exc: BaseException) -> None:
        logger.warning(
            "prefetching the embedding of a query (%d chars) failed, embedding it again: %r",
            len(text),
            exc,
        )

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents with the wrapped model (not cached)."""
        return self.inner.embed_documents(texts)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Async twin of :meth:`embed_documents`."""
        return await self.inner.aembed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        """Embed a query, from the cache when it was seen recently (or is being prefetched)."""
        vec, pending = self._lookup(text)
        if pending is not None:
            try:
                vec = pending.result()
            except Exception as exc:
                self._prefetch_failed(text, exc)
        if vec is None:
            vec = self._keep(text, self.inner.embed_query(text))
        return list(vec)

    async def aembed_query(self, text: str) -> list[float]:
        """Async twin of :meth:`embed_query`."""
        vec, pending = self._lookup(text)
        if pending is not None:
            try:
                vec = await asyncio.wrap_future(pending)
            except Exception as exc:
                self._prefetch_failed(text, exc)
        if vec is None:
            vec = self._keep(text, await self.inner.aembed_query(text))
        return list(vec)


def clear_embedding_cache(*embeddings: Any) -> int:
    """Empty the query caches of ``embeddings``; returns how many cached queries were dropped.

    The protocol: a :class:`CachedEmbeddings` (and any ``CachedEmbeddings`` it
    wraps, through ``inner``) is cleared with :meth:`CachedEmbeddings.clear`; any
    other object with a callable ``clear_cache()`` method has it called (its
    return value counts when it is an int). ``None`` and objects without a
    cache are ignored; each object is cleared once.

    Examples:
        >>> from langchain_tiered_memory.testing.fakes import HashingEmbeddings
        >>> emb = CachedEmbeddings(HashingEmbeddings(size=8))
        >>> _ = emb.embed_query("hello")
        >>> clear_embedding_cache(emb, None, HashingEmbeddings(size=8))
        1
    """
    dropped = 0
    seen: set[int] = set()
    for current in embeddings:
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
