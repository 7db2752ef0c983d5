"""The turn tier's retrieval settings measured best on LoCoMo (``benchmarks/locomo.py``).

The helpers they configure live in their own modules: :mod:`.enrich` (index-side
text of a turn), :mod:`~langchain_tiered_memory.stores.fusion` (fusion of several
retrievers), :mod:`.rerank` (neighbouring-turn and same-session boosts) and
:mod:`.speakers` (speaker match).

Examples:
    >>> from langchain_tiered_memory.stores.fusion import fuse
    >>> fused = fuse({"lexical": {"a": 3.0, "b": 1.0}, "dense": {"b": 0.6, "a": 0.5}},
    ...              DEFAULT_FUSION)
    >>> fused[0][0]
    'a'
"""

from __future__ import annotations

from langchain_tiered_memory.stores.fusion import DEFAULT_CANDIDATES, DEFAULT_FUSION
from langchain_tiered_memory.tiers.turns.enrich import EnrichConfig

__all__ = [
    "DEFAULT_CANDIDATES",
    "DEFAULT_DENSE_ENRICH",
    "DEFAULT_FUSION",
    "DEFAULT_LEXICAL_ENRICH",
    "DEFAULT_NEIGHBOUR_BOOST",
    "DEFAULT_SESSION_BOOST",
    "DEFAULT_SPEAKER_BOOST",
]


DEFAULT_LEXICAL_ENRICH = EnrichConfig(context_before=2, turn_weight=2)
"""BM25 text of a turn: two previous turns of the session, date, speaker, caption, turn x2."""

DEFAULT_DENSE_ENRICH = EnrichConfig(context_before=0, include_caption=False, include_time=True)
"""Embedded text of a turn: ``[1:56 pm on 8 May, 2023] speaker: text``."""

DEFAULT_NEIGHBOUR_BOOST = 0.6
"""Weight of :func:`.rerank.apply_neighbour_boost`: a turn gains this share of the mean lead
of its previous and next turn over the candidates' mean score, when they are candidates
too (every boost is relative to the query's candidates, see :func:`.rerank.candidate_spread`)."""

DEFAULT_SESSION_BOOST = 0.2
"""Weight of :func:`.rerank.apply_session_boost`: a turn gains this share of the lead of the
best other candidate of its session over the candidates' mean score."""

DEFAULT_SPEAKER_BOOST = 1.0
"""Added, in spreads (standard deviations) of the candidates' scores, when the query
names the turn's speaker (:func:`.speakers.apply_speaker_boost`)."""
