"""BM25 sparse vectors, computed in-process and identical for both engines.

Qdrant Edge's BM25 model (tokeniser, stop words, Snowball stemmer, token hashing)
needs no server and no download. Document vectors carry BM25's term-frequency part;
the collection's sparse vector has ``modifier=IDF``, so each engine applies inverse
document frequency at query time, and lexical scores agree across engines.

Examples:
    >>> vec = bm25_document("Alice is allergic to shellfish")
    >>> len(vec.indices) == len(vec.values) > 0
    True
    >>> bm25_query("shellfish").values
    (1.0,)
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import qdrant_edge

__all__ = ["BM25_AVG_LEN", "SparseVec", "bm25_document", "bm25_query"]

BM25_AVG_LEN = 40.0
"""Expected document length in tokens (memories are short; Qdrant's default is 256)."""

_local = threading.local()


@dataclass(frozen=True)
class SparseVec:
    """A sparse vector as parallel index and weight tuples."""

    indices: tuple[int, ...]
    values: tuple[float, ...]

    def __bool__(self) -> bool:
        return bool(self.indices)


def _model() -> qdrant_edge.Bm25:
    model = getattr(_local, "model", None)
    if model is None:
        config = qdrant_edge.Bm25Config(
            avg_len=BM25_AVG_LEN, tokenizer=qdrant_edge.TokenizerType.Multilingual
        )
        model = _local.model = qdrant_edge.Bm25(config)
    return model


def bm25_document(text: str) -> SparseVec:
    """Term-frequency BM25 weights of a stored text."""
    vec = _model().embed_document(text)
    return SparseVec(tuple(vec.indices), tuple(vec.values))


def bm25_query(text: str) -> SparseVec:
    """Query vector: weight 1.0 per distinct token (IDF is applied by the engine)."""
    vec = _model().embed_query(text)
    return SparseVec(tuple(vec.indices), tuple(vec.values))
