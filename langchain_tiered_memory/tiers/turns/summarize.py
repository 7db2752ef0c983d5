"""Extractive summaries (no model): pick the most central turns of a session.

A session summary is an extra memory that answers "what was that conversation
about" questions in one hit. :func:`extractive_summary` picks the ``k`` texts whose
terms are most shared with the rest of the session (a TF-IDF centroid score), in
their original order. Deterministic and free; it copies sentences, it does not
paraphrase.

Examples:
    >>> texts = [
    ...     "I adopted a puppy named Max.",
    ...     "Max loves the park and the puppy class.",
    ...     "Lunch was fine.",
    ...     "The puppy class teaches Max to sit.",
    ... ]
    >>> extractive_summary(texts, k=2)
    [1, 3]
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.tiers.turns.lexical import analyze

__all__ = ["extractive_summary"]


def extractive_summary(texts: Sequence[str], k: int = 3, *, min_terms: int = 3) -> list[int]:
    """Indices of the ``k`` most central texts, in their original order.

    Args:
        texts: The session's turns (or sentences).
        k: How many to keep.
        min_terms: Texts with fewer content terms ("Thanks!") are never picked.

    Returns:
        Up to ``k`` indices into ``texts``, ascending.

    Raises:
        ConfigurationError: ``k`` < 1.
    """
    if k < 1:
        raise ConfigurationError(f"summary size k must be >= 1, got {k}")
    bags = [Counter(analyze(t)) for t in texts]
    n = len(bags)
    df = Counter(term for bag in bags for term in bag)
    idf = {t: math.log(1 + n / c) for t, c in df.items()}
    centroid: dict[str, float] = {}
    for bag in bags:
        for term, tf in bag.items():
            centroid[term] = centroid.get(term, 0.0) + tf * idf[term]
    scored = []
    for i, bag in enumerate(bags):
        if sum(bag.values()) < min_terms:
            continue
        vec = {t: tf * idf[t] for t, tf in bag.items()}
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        # Shared weight with the rest of the session (the text's own share removed).
        score = sum(v * (centroid[t] - v) for t, v in vec.items()) / norm
        scored.append((score, i))
    best = sorted(scored, key=lambda si: (-si[0], si[1]))[:k]
    return sorted(i for _, i in best)
