"""Fusing ranked lists from several retrievers (dense, lexical, ...) into one ranking.

Pure functions over ``{key: score}`` maps: rank fusion (:func:`weighted_rrf`, robust to
score scales but blind to margins) and score fusion (:func:`weighted_score_fusion`:
each list's scores put on a common scale by :func:`normalize_scores`, then weighted,
optionally by the inverse spread of each side's scores). The default,
:data:`DEFAULT_FUSION`, fuses the calibrated cosine and the BM25 score divided by the
query's best, in ``[0, 1]`` (``docs/store.md``, "What a search score means").

Examples:
    >>> from langchain_tiered_memory.stores.fusion import weighted_rrf
    >>> fused = weighted_rrf({"dense": ["a", "b"], "bm25": ["b", "c"]}, k=60)
    >>> [key for key, _ in fused]
    ['b', 'a', 'c']
"""

from __future__ import annotations

import math
from collections.abc import Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

from langchain_tiered_memory.errors import ConfigurationError

__all__ = [
    "BM25_SATURATION",
    "DEFAULT_CANDIDATES",
    "DEFAULT_FUSION",
    "MIN_SPREAD",
    "MISSING_GAP",
    "FusionConfig",
    "Normalization",
    "fuse",
    "normalize_scores",
    "weighted_rrf",
    "weighted_score_fusion",
]

K = TypeVar("K", bound=Hashable)
Normalization = Literal["cosine", "saturate", "minmax", "zscore", "max", "none"]
IN_UNIT: frozenset[str] = frozenset({"cosine", "saturate", "minmax", "max"})
"""Normalizations whose values lie in ``[0, 1]``."""

BM25_SATURATION = 6.0
"""``k`` of ``s / (s + k)``: the BM25 score that counts as half a full lexical match."""


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


def normalize_scores(
    scores: Mapping[K, float],
    method: Normalization = "minmax",
    *,
    saturation: float = BM25_SATURATION,
) -> dict[K, float]:
    """Put one retriever's scores on a common scale.

    Calibrated (each score alone, the same meaning in every query):
    ``"cosine"`` maps a cosine similarity to ``(1 + s) / 2`` (1 identical, 0.5
    unrelated, 0 opposite); ``"saturate"`` maps a score ``s >= 0`` such as BM25 to
    ``s / (s + saturation)`` (0 no match, 0.5 at ``saturation``, towards 1 above).

    Relative (over this list): ``"minmax"`` maps the list to [0, 1]; ``"zscore"``
    centres on the mean in units of the standard deviation; ``"max"`` divides by
    the best score; ``"none"`` keeps the scores. A constant list maps to 1.0
    everywhere (``"minmax"``/``"max"``) or 0.0 (``"zscore"``).

    Examples:
        >>> normalize_scores({"a": 2.0, "b": 1.0, "c": 0.0})
        {'a': 1.0, 'b': 0.5, 'c': 0.0}
        >>> normalize_scores({"a": 6.0, "b": 0.0}, "saturate", saturation=6.0)
        {'a': 0.5, 'b': 0.0}
    """
    if not scores:
        return {}
    vals = list(scores.values())
    if method == "cosine":
        return {key: cosine_unit(s) for key, s in scores.items()}
    if method == "saturate":
        return {key: saturate(s, saturation) for key, s in scores.items()}
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
        mean, std = sum(vals) / len(vals), _spread(scores)
        return {key: (s - mean) / std if std > 0 else 0.0 for key, s in scores.items()}
    raise ConfigurationError(
        f"unknown normalization {method!r}: use 'cosine', 'saturate', 'minmax', 'zscore', "
        "'max' or 'none'"
    )


def cosine_unit(similarity: float) -> float:
    """A cosine similarity mapped to ``[0, 1]``: ``(1 + s) / 2``, clipped for rounding."""
    return min(1.0, max(0.0, (1.0 + similarity) / 2.0))


def saturate(score: float, k: float = BM25_SATURATION) -> float:
    """A non-negative score (BM25) mapped to ``[0, 1)``: ``s / (s + k)``; 0 for ``s <= 0``."""
    return score / (score + k) if score > 0 else 0.0


def weighted_score_fusion(
    scores: Mapping[str, Mapping[K, float]],
    *,
    weights: Mapping[str, float] | None = None,
    normalization: Normalization | Mapping[str, Normalization] = "minmax",
    missing: float | None = None,
    saturation: float = BM25_SATURATION,
    convex: bool = False,
    spread_floor: float | None = None,
    complete: Collection[str] = (),
) -> list[tuple[K, float]]:
    """Fuse retrievers by a weighted sum of normalised scores.

    Args:
        scores: Retriever name -> {key: raw score} over that retriever's candidates.
        weights: Retriever name -> weight (default 1 each).
        normalization: How each retriever's scores are scaled first (see
            :func:`normalize_scores`): one method for all, or retriever name -> method
            (retrievers not named use ``"minmax"``).
        missing: Normalised score for a key a retriever did not return; by default
            its lowest score, or below it on the ``[0, 1]`` scales (0 when ``complete``).
        saturation: ``k`` of the ``"saturate"`` normalization.
        convex: Divide by the sum of the weights, so ``[0, 1]`` scores fuse into ``[0, 1]``.
        spread_floor: When set, each retriever's weight is divided by the spread
            (standard deviation) of its normalised scores, at least ``spread_floor``:
            over every key when the retriever is ``complete`` (the others at 0), else
            over the keys it returned. None: the weights as given.
        complete: Retrievers that returned every match they have (fewer candidates
            than asked for): a key they did not return has no match there.

    Returns:
        ``(key, fused score)`` pairs, best first.
    """
    w = _weights(list(scores), weights)
    methods = (
        dict.fromkeys(scores, normalization)
        if isinstance(normalization, str)
        else {name: normalization.get(name, "minmax") for name in scores}
    )
    normed = {
        name: normalize_scores(s, methods[name], saturation=saturation)
        for name, s in scores.items()
    }
    first_seen = dict.fromkeys(key for s in scores.values() for key in s)
    order = {key: i for i, key in enumerate(first_seen)}
    if spread_floor is not None:
        spreads = {
            # A side that returned every match ranks all candidates: the rest at 0.
            name: _spread({key: ns.get(key, 0.0) for key in order} if name in complete else ns)
            for name, ns in normed.items()
        }
        w = {name: w[name] / max(spreads[name], spread_floor) for name in w}
    totals: dict[K, float] = dict.fromkeys(order, 0.0)
    for name, ns in normed.items():
        floor = missing
        if floor is None:
            floor = _missing(methods[name], ns, complete=name in complete)
        for key in totals:
            totals[key] += w[name] * ns.get(key, floor)
    total_weight = sum(w.values())
    if convex and total_weight > 0:
        totals = {key: t / total_weight for key, t in totals.items()}
    return _sorted(totals, order)


def _spread(values: Mapping[K, float]) -> float:
    """The population standard deviation of ``values`` (0 for fewer than two)."""
    vals = list(values.values())
    if len(vals) < 2:
        return 0.0
    mean = sum(vals) / len(vals)
    return math.sqrt(sum((v - mean) ** 2 for v in vals) / len(vals))


MISSING_GAP = 0.1
"""How far below a retriever's lowest returned score a candidate it did not return is
put, in spreads (standard deviations) of its returned scores."""

MIN_SPREAD = 1e-3
"""The smallest spread a retriever's scores are taken to have (one or equal candidates)."""


def _missing(method: str, normalized: Mapping[K, float], *, complete: bool) -> float:
    """The normalised score of a candidate a retriever did not return (``missing`` above)."""
    lowest = min(normalized.values(), default=0.0)
    if method not in IN_UNIT or method == "minmax":
        return lowest
    if complete or not normalized:
        return 0.0
    return max(0.0, lowest - MISSING_GAP * max(_spread(normalized), MIN_SPREAD))


@dataclass(frozen=True)
class FusionConfig:
    """How a hybrid search combines its retrievers.

    Attributes:
        method: ``"score"`` (weighted normalised scores, divided by the weights' sum)
            or ``"rrf"``.
        weights: Retriever name -> weight, e.g. ``{"dense": 1.0, "lexical": 0.6}``.
        normalization: Score scaling for ``method="score"``: one method, or retriever
            name -> method.
        rrf_k: The constant for ``method="rrf"``.
        saturation: ``k`` of the ``"saturate"`` scaling ``s / (s + k)`` (also the
            scale of a store's lexical-mode scores).
        spread_floor: When set, each retriever's weight is divided by the spread of
            its normalised scores (see :func:`weighted_score_fusion`).

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
    saturation: float = BM25_SATURATION
    spread_floor: float | None = None

    def method_of(self, name: str) -> Normalization:
        """The normalization of retriever ``name`` (``"minmax"`` when not named)."""
        if isinstance(self.normalization, str):
            return self.normalization
        return self.normalization.get(name, "minmax")


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
            scores,
            weights=config.weights,
            normalization=config.normalization,
            saturation=config.saturation,
            convex=True,
            spread_floor=config.spread_floor,
        )
    raise ConfigurationError(f"unknown fusion method {config.method!r}: use 'score' or 'rrf'")


DEFAULT_FUSION = FusionConfig(
    method="score",
    weights={"dense": 0.75, "lexical": 1.0},
    normalization={"dense": "cosine", "lexical": "max"},
    spread_floor=MIN_SPREAD,
)
"""Hybrid search: a weighted mean of ``(1 + cosine) / 2`` and ``bm25 / best bm25``, in [0, 1].

Each side's weight (dense 0.75, lexical 1.0) is divided by the spread of that side's
scores over its candidates (at least :data:`MIN_SPREAD`); see ``docs/store.md``."""

DEFAULT_CANDIDATES = 100
"""Candidates fetched per retriever before fusion."""
