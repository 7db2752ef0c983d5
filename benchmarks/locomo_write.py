"""Write-side variants: extra memories besides the turns (no LLM).

* ``session_summaries``: one memory per session, the session's three most central
  turns (``retrieval.summarize.extractive_summary``), standing for those turns.
* ``extracted_facts``: the facts ``tiers.extraction.HeuristicFactExtractor`` finds in
  each turn, one memory per fact, standing for the turn it came from.
"""

from __future__ import annotations

from itertools import groupby

from benchmarks.locomo_data import Conversation
from benchmarks.locomo_pipelines import Memory
from langchain_tiered_memory.tiers.turns.enrich import format_date
from langchain_tiered_memory.tiers.turns.summarize import extractive_summary


def session_summaries(conv: Conversation, k: int = 3) -> list[Memory]:
    out = []
    for _, group in groupby(conv.turns, key=lambda t: t.session):
        turns = list(group)
        picked = [turns[i] for i in extractive_summary([t.text for t in turns], k=k)]
        if not picked:
            continue
        body = " ".join(f"{t.speaker}: {t.text}" for t in picked)
        text = f"[{format_date(turns[0].date)}] Session summary. {body}"
        out.append(Memory(text, text, tuple(t.dia_id for t in picked), text, turns[0].date))
    return out


def extracted_facts(conv: Conversation) -> list[Memory]:
    from langchain_tiered_memory.tiers.semantic.extraction import HeuristicFactExtractor

    out = []
    for t in conv.turns:
        facts = HeuristicFactExtractor(subject_name=t.speaker).extract_facts(t.text)
        for f in facts:
            text = f"[{format_date(t.date)}] {t.speaker}: {f.content}"
            out.append(Memory(text, text, (t.dia_id,), text, t.date))
    return out
