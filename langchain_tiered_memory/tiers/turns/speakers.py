"""Speaker match: prefer the turns of the person a query asks about.

"What did Caroline research?" is usually answered by a turn Caroline said.
:func:`named_speakers` finds the speakers a query names; :func:`apply_speaker_boost`
adds a weight to their turns' scores (rules in ``docs/concepts/turns.md``).

Examples:
    >>> fused = [("t1", 1.0), ("t2", 0.9)]
    >>> speakers = {"t1": "Melanie", "t2": "Caroline"}
    >>> [k for k, _ in apply_speaker_boost(fused, speakers, "What is Caroline's job?", 0.3)]
    ['t2', 't1']
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from langchain_tiered_memory.text import STOPWORDS, words
from langchain_tiered_memory.tiers.turns.rerank import K, check_boost_weight, resort

__all__ = ["apply_speaker_boost", "name_tokens", "named_speakers"]

_POSSESSIVE = re.compile("'s?$")


def name_tokens(text: str) -> set[str]:
    """Lower-cased words of ``text`` without possessive endings or stopwords.

    Examples:
        >>> sorted(name_tokens("Did Jon's friends visit Gina?"))
        ['friends', 'gina', 'jon', 'visit']
    """
    names = (_POSSESSIVE.sub("", w) for w in words(text))
    return {w for w in names if len(w) > 1 and w not in STOPWORDS}


def named_speakers(query: str, speakers: Iterable[str]) -> set[str]:
    """The speakers (as given) that ``query`` names.

    Examples:
        >>> sorted(named_speakers("When did Jon's shop open?", ["Jon", "Gina", "Jon Smith"]))
        ['Jon', 'Jon Smith']
    """
    named = name_tokens(query)
    return {s for s in set(speakers) if s and name_tokens(s) & named}


def apply_speaker_boost(
    fused: Sequence[tuple[K, float]],
    speakers: Mapping[K, str],
    query: str,
    weight: float,
) -> list[tuple[K, float]]:
    """Add ``weight`` to the score of each candidate whose speaker ``query`` names.

    Args:
        fused: ``(key, score)`` best first, as :func:`.fusion.fuse` returns.
        speakers: Key -> the candidate's speaker (missing: no boost).
        query: The query text.
        weight: 0 keeps the order.

    Returns:
        ``(key, boosted score)`` best first; ties keep the input order. Unchanged
        when the query names no speaker of the candidates, or all of them.

    Raises:
        ConfigurationError: ``weight`` is negative or not finite.
    """
    check_boost_weight("speaker", weight)
    present = {speakers[k] for k, _ in fused if speakers.get(k)}
    named = named_speakers(query, present) if weight else set()
    if not named or named == present:
        return list(fused)
    return resort([(k, s + weight if speakers.get(k) in named else s) for k, s in fused])
