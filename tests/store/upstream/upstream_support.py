"""Helpers of the LangGraph store cases (imported by name: ``from upstream_support import ...``)."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable

import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore

ENGINES = ("embedded", "client-local")
MODES = ("hybrid", "dense")


class CharacterEmbeddings(Embeddings):
    """Deterministic embeddings from character frequencies (texts sharing letters are close).

    Each character gets a fixed random direction; a text is the frequency-weighted
    sum of its characters' directions, normalised. The same kind of fake the
    upstream suites embed with, so their ranking expectations carry over.
    """

    def __init__(self, dims: int = 500, seed: int = 42) -> None:
        self.dims = dims
        self._seed = seed
        self._directions: dict[str, list[float]] = {}

    def _direction(self, char: str) -> list[float]:
        if char not in self._directions:
            rng = random.Random(f"{self._seed}:{ord(char)}")
            self._directions[char] = [rng.gauss(0, 1) for _ in range(self.dims)]
        return self._directions[char]

    def _embed(self, text: str) -> list[float]:
        counts = Counter(text)
        total = sum(counts.values())
        vector = [0.0] * self.dims
        for char, count in counts.items():
            for i, x in enumerate(self._direction(char)):
                vector[i] += count / total * x
        norm = math.sqrt(sum(x * x for x in vector))
        return [x / norm for x in vector] if norm else vector

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


MakeStore = Callable[..., BaseStore]


def by_design(reason: str) -> pytest.MarkDecorator:
    """A case this store fails on purpose; ``docs/store.md`` states the same reason."""
    return pytest.mark.xfail(strict=True, reason=f"by design: {reason}")
