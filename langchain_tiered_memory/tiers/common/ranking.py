"""Relevance + recency + importance ranking (as in Generative Agents), explained per item.

Each component is a number in ``[0, 1]``:

* **relevance**: the store's similarity score made comparable across stores.
  ``QdrantMemoryStore`` scores in ``[0, 1]`` in every mode; other stores may not
  (LangGraph's ``InMemoryStore`` returns cosine in ``[-1, 1]``), so by default
  (``relevance_scale="relative"``) each score is divided by the best score among
  the candidates: the best match gets 1.
  With ``"absolute"`` the score is taken as a cosine similarity and clipped to
  ``[0, 1]`` (below zero means unrelated);
* **recency**: ``0.5 ** (age_hours / half_life_hours)``: 1 now, 0.5 after one
  half-life, 0.25 after two;
* **importance**: as given by the memory (an episode's reflection, a fact's
  confidence), clipped to ``[0, 1]``.

The total is the weighted mean ``sum(w_i * c_i) / sum(w_i)``, so it stays in
``[0, 1]`` and a caller can read how much each component contributed from the
:class:`ScoreBreakdown`. Pure functions, no I/O: any tier can use them.

Examples:
    >>> from datetime import datetime, timedelta, timezone
    >>> now = datetime(2026, 1, 8, tzinfo=timezone.utc)
    >>> config = RankingConfig(recency_half_life_hours=24 * 7)
    >>> relevance_scores([0.4, 0.2], "relative")
    [1.0, 0.5]
    >>> s = score_item(0.8, now - timedelta(days=7), 0.5, now=now, config=config)
    >>> (round(s.relevance, 2), round(s.recency, 2), round(s.total, 3))
    (0.8, 0.5, 0.6)
    >>> s.explain()
    '0.600 = (1.0*relevance 0.800 + 1.0*recency 0.500 + 1.0*importance 0.500) / 3.0'
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Literal, TypeVar

from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.text import STOPWORDS
from langchain_tiered_memory.types import ensure_aware

__all__ = [
    "MATCH_SATURATION",
    "QUERY_FILLER",
    "RankingConfig",
    "RelevanceScale",
    "ScoreBreakdown",
    "UtilityConfig",
    "UtilityScore",
    "lexical_relevance",
    "query_terms",
    "rank_candidates",
    "recency_score",
    "relevance_scores",
    "score_item",
    "term_set",
    "utility_score",
]

T = TypeVar("T")

RelevanceScale = Literal["relative", "absolute"]
"""How store scores become relevance: divided by the best candidate, or clipped cosine."""


@dataclass(frozen=True)
class RankingConfig:
    """Weights of the three components and the recency half-life.

    Args:
        relevance_weight: Weight of similarity to the query (>= 0).
        recency_weight: Weight of how recent the memory is (>= 0).
        importance_weight: Weight of the memory's importance (>= 0).
        recency_half_life_hours: Age at which recency falls to 0.5 (> 0).
        relevance_scale: ``"relative"`` (divide by the best candidate's score; works
            with any store's scores) or ``"absolute"`` (a cosine, clipped to [0, 1]).

    Raises:
        ConfigurationError: A weight is negative or not finite, all weights
            are zero, or the half-life is not positive.

    Examples:
        >>> RankingConfig(recency_weight=0.0).weights
        (1.0, 0.0, 1.0)
    """

    relevance_weight: float = 1.0
    recency_weight: float = 1.0
    importance_weight: float = 1.0
    recency_half_life_hours: float = 24.0 * 7
    relevance_scale: RelevanceScale = "relative"

    def __post_init__(self) -> None:
        if self.relevance_scale not in ("relative", "absolute"):
            raise ConfigurationError(
                f"relevance_scale is {self.relevance_scale!r}: use 'relative' or 'absolute'"
            )
        for name in ("relevance_weight", "recency_weight", "importance_weight"):
            weight = getattr(self, name)
            if not math.isfinite(weight) or weight < 0:
                raise ConfigurationError(f"{name} is {weight!r}: use a finite number >= 0")
        if sum(self.weights) <= 0:
            raise ConfigurationError(
                "all ranking weights are zero: give at least one of relevance_weight, "
                "recency_weight, importance_weight a positive value"
            )
        hl = self.recency_half_life_hours
        if not math.isfinite(hl) or hl <= 0:
            raise ConfigurationError(
                f"recency_half_life_hours is {hl!r}: use a positive number of hours, e.g. 168"
            )

    @property
    def weights(self) -> tuple[float, float, float]:
        """``(relevance, recency, importance)`` weights."""
        return (self.relevance_weight, self.recency_weight, self.importance_weight)


@dataclass(frozen=True)
class ScoreBreakdown:
    """How one item's score was made; every component is in ``[0, 1]``.

    Attributes:
        relevance: Similarity to the query, scaled to ``[0, 1]`` (see ``relevance_scale``).
        recency: ``0.5 ** (age / half-life)``.
        importance: The item's importance.
        total: The weighted mean of the three; items rank by it.
        weights: ``(relevance, recency, importance)`` weights used.
        raw_similarity: The store's score before clipping (``None``: no query).
    """

    relevance: float
    recency: float
    importance: float
    total: float
    weights: tuple[float, float, float]
    raw_similarity: float | None = None

    def contributions(self) -> dict[str, float]:
        """Each component's share of :attr:`total` (they sum to ``total``)."""
        denom = sum(self.weights)
        parts = (self.relevance, self.recency, self.importance)
        names = ("relevance", "recency", "importance")
        return {n: w * c / denom for n, w, c in zip(names, self.weights, parts, strict=True)}

    def explain(self) -> str:
        """A one-line formula a person can check."""
        w_rel, w_rec, w_imp = self.weights
        return (
            f"{self.total:.3f} = ({w_rel}*relevance {self.relevance:.3f} + "
            f"{w_rec}*recency {self.recency:.3f} + {w_imp}*importance {self.importance:.3f})"
            f" / {sum(self.weights)}"
        )


def _clip(value: float) -> float:
    if math.isnan(value):
        return 0.0
    return min(1.0, max(0.0, value))


def relevance_scores(
    similarities: Sequence[float | None], scale: RelevanceScale = "relative"
) -> list[float]:
    """Relevance in ``[0, 1]`` for each candidate's store score (``None`` gives 0).

    ``"relative"`` divides by the best positive score of the candidates (all zero
    if none is positive); ``"absolute"`` clips each score as a cosine similarity.
    """
    if scale == "absolute":
        return [0.0 if s is None else _clip(float(s)) for s in similarities]
    best = max((float(s) for s in similarities if s is not None), default=0.0)
    if best <= 0 or math.isnan(best):
        return [0.0 for _ in similarities]
    return [0.0 if s is None else _clip(float(s) / best) for s in similarities]


def recency_score(timestamp: datetime, now: datetime, half_life_hours: float) -> float:
    """``0.5 ** (age_hours / half_life_hours)``; a future timestamp counts as now."""
    age_hours = (ensure_aware(now) - ensure_aware(timestamp)).total_seconds() / 3600.0
    return float(0.5 ** (max(0.0, age_hours) / half_life_hours))


def score_item(
    relevance: float,
    timestamp: datetime,
    importance: float,
    *,
    now: datetime,
    config: RankingConfig,
    raw_similarity: float | None = None,
) -> ScoreBreakdown:
    """Score one item from its relevance (already in ``[0, 1]``, see :func:`relevance_scores`).

    See the module docstring for the formula.
    """
    rel = _clip(float(relevance))
    rec = recency_score(timestamp, now, config.recency_half_life_hours)
    imp = _clip(float(importance))
    weights = config.weights
    total = (weights[0] * rel + weights[1] * rec + weights[2] * imp) / sum(weights)
    raw = None if raw_similarity is None else float(raw_similarity)
    return ScoreBreakdown(rel, rec, imp, total, weights, raw)


def rank_candidates(
    candidates: Sequence[T],
    *,
    similarity: Callable[[T], float | None],
    timestamp: Callable[[T], datetime],
    importance: Callable[[T], float],
    now: datetime,
    config: RankingConfig,
) -> list[tuple[T, ScoreBreakdown]]:
    """Score a candidate set (relevance scaled across it) and rank it, best first.

    Examples:
        >>> from datetime import datetime, timezone
        >>> now = datetime(2026, 1, 1, tzinfo=timezone.utc)
        >>> ranked = rank_candidates(["a", "b"], similarity={"a": 0.2, "b": 0.4}.get,
        ...                          timestamp=lambda _: now, importance=lambda _: 0.5,
        ...                          now=now, config=RankingConfig())
        >>> [(c, round(s.relevance, 2)) for c, s in ranked]
        [('b', 1.0), ('a', 0.5)]
    """
    sims = [similarity(c) for c in candidates]
    rels = relevance_scores(sims, config.relevance_scale)
    scored = [
        (c, score_item(r, timestamp(c), importance(c), now=now, config=config, raw_similarity=s))
        for c, s, r in zip(candidates, sims, rels, strict=True)
    ]
    return sorted(scored, key=lambda pair: pair[1].total, reverse=True)  # stable for ties


# ---------------------------------------------------------------- one utility across tiers

_TERM = re.compile(r"[^\W_]+", re.UNICODE)
_STEM_CHARS = 5


QUERY_FILLER = frozenset(
    """again also any anything after before could current currently did does get give
    going help just know last let like make need new next now one
    start still tell thing things today want would yes""".split()  # noqa: SIM905
)
"""Words that say what a request wants done, not what it is about; they weigh nothing."""


def _stem(word: str) -> str:
    """A crude stem: a plural or verb ending off, then the first five characters.

    ``deployment`` and ``deploy`` meet, and so do ``lives`` and ``live``.
    """
    for suffix in ("ing", "ed", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix) and not word.endswith("ss"):
            word = word[: -len(suffix)]
            break
    return word[:_STEM_CHARS]


def term_set(text: str) -> frozenset[str]:
    """Stemmed content terms of ``text`` (identifiers split on ``_``, ``-`` and ``.``).

    Example:
        >>> sorted(term_set("payments-api pods in CrashLoopBackOff"))
        ['api', 'crash', 'payme', 'pod']
    """
    return frozenset(
        _stem(w) for w in _TERM.findall(text.lower()) if w not in STOPWORDS and len(w) > 1
    )


def query_terms(query: str, documents: Sequence[frozenset[str]]) -> dict[str, float]:
    """The query's terms weighted by inverse document frequency over ``documents``.

    ``idf = log(1 + (n + 1) / (df + 0.5))``: a term most candidates share (``user``,
    ``answer``) weighs little, a term one candidate has weighs most. Terms no
    candidate has keep the full weight, so a query about something nothing
    mentions gives every candidate a low coverage.
    """
    n = len(documents)
    weights: dict[str, float] = {}
    words = (w for w in _TERM.findall(query.lower()) if w not in QUERY_FILLER)
    for term in term_set(" ".join(words)):
        df = sum(1 for d in documents if term in d)
        weights[term] = math.log(1.0 + (n + 1) / (df + 0.5))
    return weights


MATCH_SATURATION = 3
"""Matching this many of the query's most informative terms is full lexical evidence."""


def lexical_relevance(terms: Mapping[str, float], document: frozenset[str]) -> float:
    """Query term weight found in ``document``, in ``[0, 1]``.

    The weight matched is divided by the weight of the query's
    :data:`MATCH_SATURATION` heaviest terms (or of all of them when fewer), so
    a memory that answers one part of a long, many-part question can still be
    fully relevant, and one that shares a single common word is not.

    Example:
        >>> docs = [term_set("pods in CrashLoopBackOff"), term_set("Owns a drone")]
        >>> terms = query_terms("payments-api pods CrashLoopBackOff", docs)
        >>> round(lexical_relevance(terms, docs[0]), 2), lexical_relevance(terms, docs[1])
        (0.44, 0.0)
    """
    top = sorted(terms.values(), reverse=True)[:MATCH_SATURATION]
    matched = sum(w for t, w in terms.items() if t in document)
    return min(1.0, matched / sum(top)) if sum(top) > 0 else 0.0


TIER_PRIORS: dict[str, float] = {
    "warnings": 0.9,
    "strategies": 0.7,
    "profile": 0.6,
    "knowledge": 0.6,
    "experiences": 0.7,
    "conversation": 0.5,
}
"""Default prior of each section: how much a memory of that kind is worth, all else equal."""


@dataclass(frozen=True)
class UtilityConfig:
    """How one utility in ``[0, 1]`` is made from a memory's parts.

    ``quality`` is the weighted mean of importance, recency, confidence and the
    section's prior; ``utility = relevance * ((1 - quality_share) + quality_share * quality)``.
    Relevance gates the rest: an irrelevant memory has utility 0 however
    important, recent or confident it is, and between equally relevant memories
    the better one wins.

    Args:
        quality_share: How much of the utility the quality decides (0: relevance
            alone; 1: relevance times quality).
        importance_weight: Weight of importance in quality.
        recency_weight: Weight of recency in quality.
        confidence_weight: Weight of confidence in quality.
        prior_weight: Weight of the section's prior in quality.
        recency_half_life_hours: Age at which recency falls to 0.5.
        priors: Prior per section (missing sections get 0.5).
        similarity_weight: How much the tier's own similarity score (taken as
            calibrated to ``[0, 1]``) may stand in for lexical evidence:
            ``relevance = max(lexical, similarity_weight * similarity)``.
        rank_share: How much the tier's own order counts: the utility is
            multiplied by ``(1 - rank_share) + rank_share * tier_rank``, where
            ``tier_rank`` is 1 for a tier's best match and falls linearly to
            its last (1 for memories a tier did not rank by the query).
        tier_scored: Sections whose tier's own score (calibrated to ``[0, 1]``) is
            the relevance of a memory sharing at least one term with the query (one
            sharing none has relevance 0): the turn tier sees evidence lexical
            overlap does not, and the shared term keeps out turns lifted only by a
            matching neighbour.

    Raises:
        ConfigurationError: A weight or share is negative, not finite or above its bound.
    """

    quality_share: float = 0.4
    importance_weight: float = 1.0
    recency_weight: float = 0.5
    confidence_weight: float = 1.0
    prior_weight: float = 1.0
    recency_half_life_hours: float = 24.0 * 30
    priors: Mapping[str, float] = field(default_factory=lambda: dict(TIER_PRIORS))
    similarity_weight: float = 0.0
    rank_share: float = 0.5
    tier_scored: frozenset[str] = frozenset({"conversation"})

    def __post_init__(self) -> None:
        for name in ("quality_share", "similarity_weight", "rank_share"):
            value = getattr(self, name)
            if not math.isfinite(value) or not 0.0 <= value <= 1.0:
                raise ConfigurationError(
                    f"UtilityConfig.{name} is {value!r}: use a number in [0, 1]"
                )
        for name in ("importance_weight", "recency_weight", "confidence_weight", "prior_weight"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ConfigurationError(f"UtilityConfig.{name} is {value!r}: use a number >= 0")
        hl = self.recency_half_life_hours
        if not math.isfinite(hl) or hl <= 0:
            raise ConfigurationError(
                f"UtilityConfig.recency_half_life_hours is {hl!r}: use a positive number of hours"
            )
        for section, prior in self.priors.items():
            if not math.isfinite(prior) or not 0.0 <= prior <= 1.0:
                raise ConfigurationError(
                    f"UtilityConfig.priors[{section!r}] is {prior!r}: use a number in [0, 1]"
                )


@dataclass(frozen=True)
class UtilityScore:
    """One memory's utility and every part of it (each in ``[0, 1]``)."""

    relevance: float
    lexical: float
    similarity: float
    importance: float
    recency: float
    confidence: float
    prior: float
    quality: float
    tier_rank: float
    utility: float

    def as_dict(self) -> dict[str, float]:
        """The parts, for ``MemoryItem.score_breakdown``."""
        return asdict(self)


def utility_score(
    *,
    lexical: float,
    similarity: float | None,
    importance: float,
    recency: float,
    confidence: float,
    prior: float,
    config: UtilityConfig,
    tier_rank: float = 1.0,
) -> UtilityScore:
    """Combine a memory's parts into its utility (see :class:`UtilityConfig`).

    Example:
        >>> s = utility_score(lexical=0.8, similarity=None, importance=0.5, recency=1.0,
        ...                   confidence=0.9, prior=0.6, config=UtilityConfig())
        >>> round(s.relevance, 2), round(s.utility, 3)
        (0.8, 0.709)
    """
    sim = 0.0 if similarity is None else _clip(float(similarity))
    lex = _clip(float(lexical))
    rel = max(lex, config.similarity_weight * sim)
    parts = (_clip(importance), _clip(recency), _clip(confidence), _clip(prior))
    weights = (
        config.importance_weight,
        config.recency_weight,
        config.confidence_weight,
        config.prior_weight,
    )
    total_w = sum(weights)
    quality = sum(w * p for w, p in zip(weights, parts, strict=True)) / total_w if total_w else 1.0
    share = config.quality_share
    rank = _clip(tier_rank)
    utility = rel * ((1.0 - share) + share * quality)
    utility *= (1.0 - config.rank_share) + config.rank_share * rank
    return UtilityScore(rel, lex, sim, *parts, quality=quality, tier_rank=rank, utility=utility)
