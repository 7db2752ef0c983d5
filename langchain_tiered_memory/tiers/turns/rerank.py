"""Re-scoring a small, already fused candidate list, with no model at query time.

:func:`apply_neighbour_boost` lets adjacent turns lend each other score and
:func:`apply_session_boost` lets turns share in their session's best match.

Examples:
    >>> fused = [("a", 1.0), ("b", 0.95), ("c", 0.9)]
    >>> boosted = apply_neighbour_boost(fused, {"c": ["a"], "a": ["c"]}, weight=0.6)
    >>> [k for k, _ in boosted]
    ['a', 'c', 'b']
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

from langchain_tiered_memory.errors import ConfigurationError

__all__ = [
    "apply_neighbour_boost",
    "apply_session_boost",
    "candidate_spread",
    "check_boost_weight",
    "resort",
]

K = TypeVar("K", bound=Hashable)


def apply_neighbour_boost(
    fused: Sequence[tuple[K, float]],
    neighbours: Mapping[K, Sequence[K]],
    weight: float,
) -> list[tuple[K, float]]:
    """Add ``weight`` times the mean positive score of each candidate's neighbours.

    An answer ("Yes, twice!") rarely names its topic; the turn before it does. Neighbours
    that are not candidates, or score 0 or less, add nothing.

    Args:
        fused: ``(key, score)`` best first, as :func:`.fusion.fuse` returns.
        neighbours: Key -> the keys adjacent to it (e.g. the previous and next turn
            of the same session); keys missing here have no neighbours.
        weight: 0 keeps the order; 0.6 was best on LoCoMo (``benchmarks/locomo.py``).

    Returns:
        ``(key, boosted score)`` best first; ties keep the input order.

    Raises:
        ConfigurationError: ``weight`` is negative or not finite.

    Examples:
        >>> fused = [("q", 2.0), ("x", 1.5), ("a", 1.2)]
        >>> boosted = apply_neighbour_boost(fused, {"a": ["q"], "q": ["a"]}, weight=0.6)
        >>> [k for k, _ in boosted]
        ['q', 'a', 'x']
    """
    if check_boost_weight("neighbour", weight) == 0:
        return list(fused)
    scores = dict(fused)
    out = []
    for key, score in fused:
        near = [max(0.0, scores[n]) for n in neighbours.get(key, ()) if n in scores]
        bonus = sum(near) / 2 if near else 0.0  # mean over a turn's two sides
        out.append((key, score + weight * bonus))
    return resort(out)


def apply_session_boost(
    fused: Sequence[tuple[K, float]],
    sessions: Mapping[K, Hashable],
    weight: float,
) -> list[tuple[K, float]]:
    """Add ``weight`` times the best positive score of the other candidates of the session.

    Turns of the sitting a question is about then outrank isolated near-misses of other
    sessions. Candidates alone in their session, or whose best other score is 0 or
    less, gain nothing.

    Args:
        fused: ``(key, score)`` best first, as :func:`.fusion.fuse` returns.
        sessions: Key -> its session (missing or None: no boost).
        weight: 0 keeps the order; on scores in [0, 1] (see
            :data:`~langchain_tiered_memory.tiers.turns.defaults.DEFAULT_SESSION_BOOST`).

    Returns:
        ``(key, boosted score)`` best first; ties keep the input order.

    Raises:
        ConfigurationError: ``weight`` is negative or not finite.

    Examples:
        >>> fused = [("x", 1.0), ("a", 0.9), ("b", 0.8)]
        >>> boosted = apply_session_boost(fused, {"x": 1, "a": 2, "b": 2}, weight=0.5)
        >>> [k for k, _ in boosted]
        ['a', 'b', 'x']
    """
    if check_boost_weight("session", weight) == 0:
        return list(fused)
    positive: dict[Hashable, list[float]] = {}  # session -> its candidates' positive scores
    for key, score in fused:
        if (session := sessions.get(key)) is not None:
            positive.setdefault(session, []).append(max(0.0, score))
    best = {session: sorted(top, reverse=True)[:2] for session, top in positive.items()}
    out = []
    for key, score in fused:
        session = sessions.get(key)
        bonus = 0.0
        if session is not None and len(best[session]) > 1:
            first, second = best[session]
            bonus = second if max(0.0, score) == first else first  # best of the others
        out.append((key, score + weight * bonus))
    return resort(out)


SPREAD_FLOOR = 1e-3
"""The smallest spread :func:`candidate_spread` reports, so boosts still break ties."""


def candidate_spread(scores: Sequence[float]) -> tuple[float, float]:
    """The mean of a query's candidate scores and their spread (standard deviation).

    Boosts are measured in the spread (at least :data:`SPREAD_FLOOR`), so a boost of one
    spread moves a turn past about a third of the candidates whatever the query.

    Examples:
        >>> candidate_spread([0.6, 0.4])
        (0.5, 0.1)
        >>> candidate_spread([0.7])
        (0.7, 0.001)
    """
    if not scores:
        return 0.0, SPREAD_FLOOR
    mean = sum(scores) / len(scores)
    var = sum((s - mean) ** 2 for s in scores) / len(scores)
    return mean, max(SPREAD_FLOOR, round(var**0.5, 12))


def check_boost_weight(name: str, weight: float) -> float:
    """``weight`` if it is a finite number >= 0 (a boost's weight), else a clear error."""
    if not 0 <= weight < float("inf"):
        raise ConfigurationError(f"{name} boost weight must be finite and >= 0, got {weight}")
    return weight


def resort(items: list[tuple[K, float]]) -> list[tuple[K, float]]:
    """``items`` best score first; ties keep their order in ``items``."""
    order = {k: i for i, (k, _) in enumerate(items)}
    return sorted(items, key=lambda kv: (-kv[1], order[kv[0]]))
