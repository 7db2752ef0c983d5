"""Exact Okapi BM25 over a fixed list of documents: the plain-BM25 baseline of the benchmarks.

The package's own lexical search runs in the store (BM25 sparse vectors, see
``langchain_tiered_memory.stores.sparse``); this in-memory index is the textbook
baseline it is compared with, over terms from ``langchain_tiered_memory.text.analyze``.

Example:
    >>> from langchain_tiered_memory.text import analyze
    >>> index = BM25Index([analyze(t) for t in ["I paint sunsets", "I run marathons"]])
    >>> [round(float(s), 3) for s in index.scores(analyze("painting"))]
    [0.693, 0.0]
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["BM25Index"]


@dataclass
class BM25Index:
    """Okapi BM25 over pre-analyzed documents.

    Args:
        documents: One list of terms per document (see :func:`analyze`).
        k1: Term-frequency saturation.
        b: Length normalisation.

    Example:
        >>> idx = BM25Index([["cat", "sat"], ["dog"]])
        >>> int(idx.scores(["dog"]).argmax())
        1
    """

    documents: Sequence[Sequence[str]]
    k1: float = 1.2
    b: float = 0.75
    _postings: dict[str, list[tuple[int, int]]] = field(init=False, repr=False)
    _idf: dict[str, float] = field(init=False, repr=False)
    _norm: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        n = len(self.documents)
        lengths = np.array([len(d) for d in self.documents], dtype=np.float64)
        avg = float(lengths.mean()) if n and lengths.sum() else 1.0
        self._norm = self.k1 * (1 - self.b + self.b * lengths / avg)
        self._postings = {}
        for i, doc in enumerate(self.documents):
            for term, tf in Counter(doc).items():
                self._postings.setdefault(term, []).append((i, tf))
        # Lucene's idf: always positive, so very common terms still count a little.
        self._idf = {
            t: math.log(1 + (n - len(p) + 0.5) / (len(p) + 0.5)) for t, p in self._postings.items()
        }

    def __len__(self) -> int:
        return len(self.documents)

    def scores(self, query: Iterable[str]) -> np.ndarray:
        """BM25 score of every document for the query terms (0 where none match)."""
        out = np.zeros(len(self.documents), dtype=np.float64)
        for term, qtf in Counter(query).items():
            postings = self._postings.get(term)
            if not postings:
                continue
            idx = np.fromiter((i for i, _ in postings), dtype=np.int64, count=len(postings))
            tf = np.fromiter((f for _, f in postings), dtype=np.float64, count=len(postings))
            out[idx] += qtf * self._idf[term] * tf * (self.k1 + 1) / (tf + self._norm[idx])
        return out
