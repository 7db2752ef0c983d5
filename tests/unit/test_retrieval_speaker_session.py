"""Speaker match and same-session boost: which turns a query's person and sitting favour."""

from __future__ import annotations

import pytest

from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.tiers.turns.rerank import apply_session_boost
from langchain_tiered_memory.tiers.turns.speakers import (
    apply_speaker_boost,
    name_tokens,
    named_speakers,
)


def test_name_tokens_drop_possessives_stopwords_and_case() -> None:
    assert name_tokens("What is Caroline's job?") == {"caroline", "job"}
    assert name_tokens("Jon\u2019s shop, JON") == {"jon", "shop"}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What did Caroline research?", {"Caroline"}),
        ("What is caroline's job?", {"Caroline"}),
        ("When did Mel and Caroline meet?", {"Caroline", "Mel"}),
        ("What did she paint?", set()),
        ("Did Carol go?", set()),  # whole words only
        ("What did Smith buy?", {"Anna Smith"}),
    ],
)
def test_named_speakers(query: str, expected: set[str]) -> None:
    assert named_speakers(query, ["Caroline", "Mel", "Anna Smith", ""]) == expected


def test_boost_reorders_and_keeps_ties_stable() -> None:
    fused = [("a", 1.0), ("b", 0.8), ("c", 0.8)]
    speakers = {"a": "Mel", "b": "Caroline", "c": "Caroline"}
    out = apply_speaker_boost(fused, speakers, "Where did Caroline go?", 0.5)
    assert out == [("b", 1.3), ("c", 1.3), ("a", 1.0)]


def test_boost_is_a_no_op_when_nobody_or_everybody_is_named() -> None:
    fused = [("a", 1.0), ("b", 0.8)]
    speakers = {"a": "Mel", "b": "Caroline"}
    assert apply_speaker_boost(fused, speakers, "Where did they go?", 0.5) == fused
    assert apply_speaker_boost(fused, speakers, "Did Mel and Caroline meet?", 0.5) == fused
    assert apply_speaker_boost(fused, speakers, "Where did Caroline go?", 0.0) == fused
    assert apply_speaker_boost([], {}, "Caroline", 0.5) == []


@pytest.mark.parametrize("weight", [-0.1, float("inf"), float("nan")])
def test_bad_weight(weight: float) -> None:
    with pytest.raises(ConfigurationError):
        apply_speaker_boost([("a", 1.0)], {"a": "Mel"}, "Mel", weight)


def test_session_boost_adds_the_best_other_positive_score_of_the_session() -> None:
    fused = [("a", 2.0), ("b", 1.0), ("c", -0.5), ("x", 1.9), ("y", 0.1)]
    sessions = {"a": 1, "b": 1, "c": 1, "x": 2}  # y has no session
    out = apply_session_boost(fused, sessions, 0.5)
    assert out == [("a", 2.5), ("b", 2.0), ("x", 1.9), ("c", 0.5), ("y", 0.1)]


def test_session_boost_ties_and_no_ops() -> None:
    fused = [("a", 1.0), ("b", 1.0), ("z", 0.5)]
    assert apply_session_boost(fused, {"a": 1, "b": 1}, 0.5) == [("a", 1.5), ("b", 1.5), ("z", 0.5)]
    assert apply_session_boost(fused, {"a": 1, "b": 1}, 0.0) == fused
    negative = [("a", -1.0), ("b", -2.0)]
    assert apply_session_boost(negative, {"a": 1, "b": 1}, 0.5) == negative


@pytest.mark.parametrize("weight", [-0.1, float("inf"), float("nan")])
def test_bad_session_weight(weight: float) -> None:
    with pytest.raises(ConfigurationError):
        apply_session_boost([("a", 1.0)], {"a": 1}, weight)
