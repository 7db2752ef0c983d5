"""The benchmarks' baselines behave as the figures they print assume."""

from __future__ import annotations

import pytest

from benchmarks.bm25 import BM25Index
from benchmarks.locomo_write import extractive_summary
from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.text import analyze


def test_bm25_ranks_the_matching_document_first_and_scores_zero_elsewhere() -> None:
    docs = [analyze(t) for t in ["I painted a sunset", "We went hiking", "Sunset hikes rock"]]
    idx = BM25Index(docs)
    s = idx.scores(analyze("painting the sunset"))
    assert s.argmax() == 0
    assert s[1] == 0.0
    assert len(idx) == 3
    assert idx.scores(["unknown"]).tolist() == [0.0, 0.0, 0.0]


def test_bm25_rarer_terms_weigh_more() -> None:
    idx = BM25Index([["cat", "dog"], ["cat"], ["cat"], ["dog", "x"]])
    s = idx.scores(["cat", "x"])
    assert s[3] > s[1]


def test_extractive_summary_picks_central_turns_in_order() -> None:
    texts = [
        "I adopted a puppy named Max.",
        "Max loves the park and the puppy class.",
        "Thanks!",
        "Lunch was fine today.",
        "The puppy class teaches Max to sit.",
    ]
    assert extractive_summary(texts, k=2) == [1, 4]
    assert extractive_summary(["ok", "thanks"], k=3) == []
    with pytest.raises(ConfigurationError):
        extractive_summary(texts, k=0)
