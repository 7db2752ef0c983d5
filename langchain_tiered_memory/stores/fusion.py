"""Fusing ranked lists from several retrievers (dense, lexical, ...) into one ranking.

Two families, both pure functions over ``{key: score}`` maps:

* **Rank fusion** (:func:`weighted_rrf`): each list contributes ``w / (k + rank)``.
  Robust to score scales, but it throws away how *much* better the first hit was.
* **Score fusion** (:func:`weighted_score_fusion`): each list's scores are normalised
  (``"minmax"`` over its candidates, ``"zscore"``, or ``"max"``: divide by the best
  score) and combined with weights. It keeps the margins, which is what lets a very
  confident lexical match beat a lukewarm dense one.

Examples:
    >>> from langchain_tiered_memory.stores.fusion import weighted_rrf
    >>> fused = weighted_rrf({"dense": ["a", "b"], "bm25": ["b", "c"]}, k=60)
    >>> [key for key, _ in fused]
    ['b', 'a', 'c']
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

from langchain_tiered_memory.errors import ConfigurationError

__all__ = [
    "FusionConfig",
    "Normalization",
    "fuse",
    "normalize_scores",
    "weighted_rrf",
    "weighted_score_fusion",
]

K = TypeVar("K", bound=Hashable)
Normalization = Literal["minmax", "zscore", "max", "none"]


def _weights(names: Sequence[str], weights: Mapping[str, float] | None) -> dict[str, float]:
    if weights is None:
        return dict.fromkeys(names, 1.0)
    unknown = set(weights) - set(names)
    if unknown:
        raise ConfigurationError(
            f"fusion weights name retrievers {sorted(unknown)} that produced no results; "
            f"the results came from {sorted(names)}: use those names"
        )
    bad = {n: w for n, w in weights.items() if not math.isfinite(w) or w < 0}
    if bad:
        raise ConfigurationError(f"fusion weights must be finite and >= 0, got {bad}")
    return {n: float(weights.get(n, 1.0)) for n in names}


def _sorted(totals: Mapping[K, float], order: Mapping[K, int]) -> list[tuple[K, float]]:
    # Ties keep first-seen order, so fusion is deterministic for equal scores.
    return sorted(totals.items(), key=lambda kv: (-kv[1], order[kv[0]]))


def weighted_rrf(
    rankings: Mapping[str, Sequence[K]],
    *,
    weights: Mapping[str, float] | None = None,
    k: float = 60.0,
) -> list[tuple[K, float]]:
    """Weighted reciprocal-rank fusion.

    Args:
        rankings: Retriever name -> keys, best first.
        weights: Retriever name -> weight (default 1 each); names must be in ``rankings``.
        k: The RRF constant; smaller values favour the top ranks more.

    Returns:
        ``(key, fused score)`` pairs, best first.

    Raises:
        ConfigurationError: ``k`` is negative, or a weight is negative, not finite, or
            names a retriever missing from ``rankings``.
    """
    if k < 0:
        raise ConfigurationError(f"RRF constant k must be >= 0, got {k}")
    w = _weights(list(rankings), weights)
    totals: dict[K, float] = {}
    order: dict[K, int] = {}
    for name, keys in rankings.items():
        for rank, key in enumerate(keys, start=1):
            order.setdefault(key, len(order))
            totals[key] = totals.get(key, 0.0) + w[name] / (k + rank)
    return _sorted(totals, order)


def normalize_scores(scores: Mapping[K, float], method: Normalization = "minmax") -> dict[K, float]:
    """Put one retriever's scores on a common scale.

    ``"minmax"`` maps the list to [0, 1]; ``"zscore"`` centres on the mean in units of
    the standard deviation; ``"max"`` divides by the best score (keeps 0 at 0, which
    suits BM25); ``"none"`` keeps the scores (suits cosine similarity, already on a
    fixed scale, when the list is a truncated top-k whose minimum means little). A
    constant list maps to 1.0 everywhere (``"minmax"``/``"max"``) or 0.0 (``"zscore"``).

    Examples:
        >>> normalize_scores({"a": 2.0, "b": 1.0, "c": 0.0})
        {'a': 1.0, 'b': 0.5, 'c': 0.0}
    """
    if not scores:
        return {}
    vals = list(scores.values())
    if method == "minmax":
        lo, hi = min(vals), max(vals)
        span = hi - lo
        return {key: (s - lo) / span if span > 0 else 1.0 for key, s in scores.items()}
    if method == "max":
        hi = max(vals)
        return {key: s / hi if hi > 0 else 1.0 for key, s in scores.items()}
    if method == "none":
        return dict(scores)
    if method == "zscore":
        mean = sum(vals) / len(vals)
        std = math.sqrt(sum((v - mean) ** 2 for v in vals) / len(vals))
        return {key: (s - mean) / std if std > 0 else 0.0 for key, s in scores.items()}
    raise ConfigurationError(
        f"unknown normalization {method!r}: use 'minmax', 'zscore', 'max' or 'none'"
    )


def weighted_score_fusion(
    scores: Mapping[str, Mapping[K, float]],
    *,
    weights: Mapping[str, float] | None = None,
    normalization: Normalization | Mapping[str, Normalization] = "minmax",
    missing: float | None = None,
) -> list[tuple[K, float]]:
    """Fuse retrievers by a weighted sum of normalised scores.

    Args:
        scores: Retriever name -> {key: raw score} over that retriever's candidates.
        weights: Retriever name -> weight (default 1 each).
        normalization: How each retriever's scores are scaled first (see
            :func:`normalize_scores`): one method for all, or retriever name -> method
            (retrievers not named use ``"minmax"``).
        missing: Normalised score for a key a retriever did not return; default is
            that retriever's lowest normalised score (the key ranked below its list).

    Returns:
        ``(key, fused score)`` pairs, best first.
    """
    w = _weights(list(scores), weights)
    methods = (
        dict.fromkeys(scores, normalization)
        if isinstance(normalization, str)
        else {name: normalization.get(name, "minmax") for name in scores}
    )
    normed = {name: normalize_scores(s, methods[name]) for name, s in scores.items()}
    order: dict[K, int] = {}
    for s in scores.values():
        for key in s:
            order.setdefault(key, len(order))
    totals: dict[K, float] = dict.fromkeys(order, 0.0)
    for name, ns in normed.items():
        floor = missing if missing is not None else min(ns.values(), default=0.0)
        for key in totals:
            totals[key] += w[name] * ns.get(key, floor)
    return _sorted(totals, order)


@dataclass(frozen=True)
class FusionConfig:
    """How a hybrid search combines its retrievers.

    Attributes:
        method: ``"score"`` (weighted normalised scores) or ``"rrf"``.
        weights: Retriever name -> weight, e.g. ``{"dense": 1.0, "lexical": 0.6}``.
        normalization: Score scaling for ``method="score"``: one method, or retriever
            name -> method.
        rrf_k: The constant for ``method="rrf"``.

    Examples:
        >>> cfg = FusionConfig(weights={"dense": 1.0, "lexical": 2.0})
        >>> scores = {"dense": {"a": 0.9, "b": 0.8}, "lexical": {"b": 3.0, "a": 1.0}}
        >>> [k for k, _ in fuse(scores, cfg)]
        ['b', 'a']
    """

    method: Literal["score", "rrf"] = "score"
    weights: Mapping[str, float] | None = None
    normalization: Normalization | Mapping[str, Normalization] = "minmax"
    rrf_k: float = 60.0


def fuse(scores: Mapping[str, Mapping[K, float]], config: FusionConfig) -> list[tuple[K, float]]:
    """Fuse per-retriever ``{key: score}`` maps as ``config`` says (best first)."""
    if config.method == "rrf":
        rankings = {
            name: [key for key, _ in sorted(s.items(), key=lambda kv: -kv[1])]
            for name, s in scores.items()
        }
        return weighted_rrf(rankings, weights=config.weights, k=config.rrf_k)
    if config.method == "score":
        return weighted_score_fusion(
            scores, weights=config.weights, normalization=config.normalization
        )
    raise ConfigurationError(f"unknown fusion method {config.method!r}: use 'score' or 'rrf'")


DEFAULT_FUSION = FusionConfig(
    method="score", weights={"lexical": 1.0, "dense": 0.75}, normalization="zscore"
)
"""Hybrid search: z-scored BM25 + 0.75 x z-scored cosine over each retriever's top 100."""

DEFAULT_CANDIDATES = 100
"""Candidates fetched per retriever before fusion."""
