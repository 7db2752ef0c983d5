"""Write-side variants: extra memories besides the turns (no LLM).

* ``session_summaries``: one memory per session, the session's three most central
  turns (:func:`extractive_summary`, no model), standing for those turns.
* ``extracted_facts``: the facts ``tiers.extraction.HeuristicFactExtractor`` finds in
  each turn, one memory per fact, standing for the turn it came from.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from itertools import groupby

from benchmarks.locomo_data import Conversation
from benchmarks.locomo_pipelines import Memory
from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.text import analyze
from langchain_tiered_memory.tiers.turns.enrich import format_date


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


def session_summaries(conv: Conversation, k: int = 3) -> list[Memory]:
    out = []
    for _, group in groupby(conv.turns, key=lambda t: t.session):
        turns = list(group)
        picked = [turns[i] for i in extractive_summary([t.text for t in turns], k=k)]
        if not picked:
            continue
        body = " ".join(f"{t.speaker}: {t.text}" for t in picked)
        text = f"[{format_date(turns[0].date)}] Session summary. {body}"
        out.append(Memory(text, text, tuple(t.dia_id for t in picked), text))
    return out


def extracted_facts(conv: Conversation) -> list[Memory]:
    from langchain_tiered_memory.tiers.semantic.extraction import HeuristicFactExtractor

    out = []
    for t in conv.turns:
        facts = HeuristicFactExtractor(subject_name=t.speaker).extract_facts(t.text)
        for f in facts:
            text = f"[{format_date(t.date)}] {t.speaker}: {f.content}"
            out.append(Memory(text, text, (t.dia_id,), text))
    return out
