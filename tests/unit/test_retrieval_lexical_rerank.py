import pytest

from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.text import analyze, stem
from langchain_tiered_memory.tiers.turns.rerank import apply_neighbour_boost


@pytest.mark.parametrize(
    ("word", "root"),
    [
        ("paintings", "paint"),
        ("painted", "paint"),
        ("hiking", "hike"),
        ("running", "run"),
        ("stories", "story"),
        ("classes", "class"),
        ("glass", "glass"),
        ("bus", "bus"),
        ("2023", "2023"),
    ],
)
def test_stem_joins_inflections(word: str, root: str) -> None:
    assert stem(word) == root


def test_analyze_drops_stopwords_and_punctuation() -> None:
    assert analyze("What did she paint? Sunsets!") == ["paint", "sunset"]
    assert analyze("I'm Caroline's friend", stemming=False) == ["caroline", "friend"]
    assert analyze("What did she", stopwords=None, stemming=False) == ["what", "did", "she"]


def test_neighbour_boost_lifts_an_answer_next_to_its_question() -> None:

    fused = [("question", 2.0), ("stray", 1.5), ("answer", 1.2), ("far", 1.1)]
    adjacent = {"answer": ["question", "other"], "question": ["answer"], "far": ["nobody"]}
    boosted = dict(apply_neighbour_boost(fused, adjacent, weight=0.6))
    assert boosted["answer"] == pytest.approx(1.2 + 0.6 * 2.0 / 2)
    assert boosted["question"] == pytest.approx(2.0 + 0.6 * 1.2 / 2)
    assert boosted["stray"] == 1.5 and boosted["far"] == 1.1  # no candidate neighbours
    assert [k for k, _ in apply_neighbour_boost(fused, adjacent, 0.6)][:3] == [
        "question",
        "answer",
        "stray",
    ]


def test_neighbour_boost_ignores_negative_neighbours_and_weight_zero() -> None:

    fused = [("a", 0.5), ("b", -3.0)]
    assert dict(apply_neighbour_boost(fused, {"a": ["b"]}, 1.0))["a"] == 0.5
    assert apply_neighbour_boost(fused, {"a": ["b"]}, 0.0) == fused
    with pytest.raises(ConfigurationError):
        apply_neighbour_boost(fused, {}, float("nan"))
