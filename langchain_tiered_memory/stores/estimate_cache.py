"""Cardinality estimates kept until the store is written: one engine request less per search.

Each dense search with a namespace or a value filter first asks the engine how
many points its filters keep (:mod:`.search_walk`), to choose between an exact
scan and the HNSW graph. The answer only changes when points are written, so a
store that sees every write (the embedded engine: see
:meth:`~langchain_tiered_memory.stores.QdrantMemoryStore.namespace_version`)
keeps each filter's estimate under the version of the whole store and asks the
engine only for filters it has not kept since the last write. On the 100k
assembly store that saves the 4 estimate requests of a context (0.5 ms of
about 15, ``README.md``, Benchmarks). A store whose versions are unknown (a
server, or a store with TTL items) asks every time.

Examples:
    >>> from langchain_tiered_memory.stores.filters import Match, Where
    >>> cache, asked = EstimateCache(), []
    >>> def engine(filters):
    ...     asked.append(len(filters))
    ...     return [7] * len(filters)
    >>> w = Where(must=(Match("ns_path", "a"),))
    >>> cache.sizes([w], "v1", engine), cache.sizes([w], "v1", engine), asked
    ([7], [7], [1])
    >>> cache.sizes([w], "v2", engine), asked  # written since: asked again
    ([7], [1, 1])
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence

from langchain_tiered_memory.stores.filters import Where

__all__ = ["MAX_KEPT", "EstimateCache"]

MAX_KEPT = 4096
"""Filters kept before the cache is emptied (a bound on memory, not a policy)."""


class EstimateCache:
    """Estimates of filters' sizes, kept while the store's version stays the same.

    Thread-safe. The version must be read *before* the engine is asked (as
    :class:`~.versions.NamespaceVersions` requires), so an estimate that
    overlaps a write is kept under the older version and asked again next time.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._version: Hashable = None
        self._sizes: dict[Where, int] = {}

    def sizes(
        self,
        filters: Sequence[Where],
        version: Hashable,
        ask: Callable[[list[Where]], Sequence[int]],
    ) -> list[int]:
        """The estimate of each filter; ``ask`` (the engine) gets only those not kept.

        Args:
            filters: The filters to size.
            version: The store's version, read before this call; ``None`` keeps nothing.
            ask: Returns the engine's estimates of the filters it is given, in order.
        """
        if version is None:
            return list(ask(list(filters)))
        with self._lock:
            if self._version != version:
                self._version, self._sizes = version, {}
            kept = {w: self._sizes[w] for w in filters if w in self._sizes}
        missing = list(dict.fromkeys(w for w in filters if w not in kept))
        if missing:
            answers = list(ask(missing))
            kept.update(zip(missing, answers, strict=True))
            with self._lock:
                if self._version == version:
                    if len(self._sizes) + len(missing) > MAX_KEPT:
                        self._sizes = {}
                    self._sizes.update(zip(missing, answers, strict=True))
        return [kept[w] for w in filters]
