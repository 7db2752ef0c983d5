"""Pure, store-independent retrieval helpers used as defaults by the store and tiers.

* :mod:`langchain_tiered_memory.text`: the analyzer (words, stopwords, light stemming).
* :mod:`.enrich`: index-side text for conversation turns (speaker, date, image
  caption, previous turns as context).
* :mod:`.fusion`: weighted reciprocal-rank and score fusion of several retrievers.
* :mod:`.temporal`: time expressions in queries -> date ranges, and a match score.
* :mod:`.rerank`: time, neighbouring-turn and same-session boosts, and blending with any pairwise
  re-scorer.
* :mod:`.speakers`: boost the turns of the person a query names.

The defaults (:data:`DEFAULT_FUSION`, :data:`DEFAULT_LEXICAL_ENRICH`,
:data:`DEFAULT_DENSE_ENRICH`, :data:`DEFAULT_TIME_BOOST`, :data:`DEFAULT_CANDIDATES`)
are the settings measured best on LoCoMo (``benchmarks/locomo.py``).

Examples:
    >>> from langchain_tiered_memory.tiers.turns.defaults import DEFAULT_FUSION, fuse
    >>> fused = fuse({"lexical": {"a": 3.0, "b": 1.0}, "dense": {"b": 0.6, "a": 0.5}},
    ...              DEFAULT_FUSION)
    >>> fused[0][0]
    'a'
"""

from __future__ import annotations

from datetime import timedelta

from langchain_tiered_memory.stores.fusion import (
    DEFAULT_CANDIDATES,
    DEFAULT_FUSION,
    FusionConfig,
    fuse,
    normalize_scores,
    weighted_rrf,
    weighted_score_fusion,
)
from langchain_tiered_memory.text import STOPWORDS, analyze, stem
from langchain_tiered_memory.tiers.turns.enrich import (
    EnrichConfig,
    Utterance,
    format_date,
    format_utterance,
    index_texts,
)
from langchain_tiered_memory.tiers.turns.rerank import (
    TimeBoost,
    apply_neighbour_boost,
    apply_session_boost,
    apply_time_boost,
    candidate_spread,
    rerank,
)
from langchain_tiered_memory.tiers.turns.speakers import (
    apply_speaker_boost,
    name_tokens,
    named_speakers,
)
from langchain_tiered_memory.tiers.turns.temporal import (
    TimeRange,
    parse_time_expressions,
    strip_time_expressions,
    time_match,
)

__all__ = [
    "DEFAULT_CANDIDATES",
    "DEFAULT_DENSE_ENRICH",
    "DEFAULT_FUSION",
    "DEFAULT_LEXICAL_ENRICH",
    "DEFAULT_NEIGHBOUR_BOOST",
    "DEFAULT_SESSION_BOOST",
    "DEFAULT_SPEAKER_BOOST",
    "DEFAULT_TIME_BOOST",
    "STOPWORDS",
    "EnrichConfig",
    "FusionConfig",
    "TimeBoost",
    "TimeRange",
    "Utterance",
    "analyze",
    "apply_neighbour_boost",
    "apply_session_boost",
    "apply_speaker_boost",
    "apply_time_boost",
    "candidate_spread",
    "format_date",
    "format_utterance",
    "fuse",
    "index_texts",
    "name_tokens",
    "named_speakers",
    "normalize_scores",
    "parse_time_expressions",
    "rerank",
    "stem",
    "strip_time_expressions",
    "time_match",
    "weighted_rrf",
    "weighted_score_fusion",
]


DEFAULT_LEXICAL_ENRICH = EnrichConfig(context_before=2, turn_weight=2)
"""BM25 text of a turn: two previous turns of the session, date, speaker, caption, turn x2."""

DEFAULT_DENSE_ENRICH = EnrichConfig(context_before=0, include_caption=False, include_time=True)
"""Embedded text of a turn: ``[1:56 pm on 8 May, 2023] speaker: text``."""

DEFAULT_NEIGHBOUR_BOOST = 0.6
"""Weight of :func:`apply_neighbour_boost`: a turn gains this share of the mean lead of
its previous and next turn over the candidates' mean score, when they are candidates
too. All boosts are relative to the query's candidates (see :func:`candidate_spread`):
one query's candidates may lie close together on the store's ``[0, 1]`` scale and
another's far apart, so a fixed addition would count for much in one and little in
the other."""

DEFAULT_SESSION_BOOST = 0.2
"""Weight of :func:`apply_session_boost`: a turn gains this share of the lead of the
best other candidate of its session over the candidates' mean score."""

DEFAULT_SPEAKER_BOOST = 1.0
"""Added, in spreads (standard deviations) of the candidates' scores, when the query
names the turn's speaker (:func:`apply_speaker_boost`)."""

DEFAULT_TIME_BOOST = TimeBoost(weight=1.0, slack=timedelta(days=30))
"""Added (times the time match), in spreads of the candidates' scores, when the query
names a time."""
