import math

import pytest

from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.stores.fusion import (
    FusionConfig,
    fuse,
    normalize_scores,
    weighted_rrf,
    weighted_score_fusion,
)
from langchain_tiered_memory.tiers.turns.defaults import DEFAULT_FUSION


def test_rrf_adds_weighted_reciprocal_ranks() -> None:
    fused = dict(weighted_rrf({"d": ["a", "b"], "l": ["b", "c"]}, weights={"d": 2.0}, k=10))
    assert fused["a"] == pytest.approx(2 / 11)
    assert fused["b"] == pytest.approx(2 / 12 + 1 / 11)
    assert fused["c"] == pytest.approx(1 / 12)


def test_rrf_ties_keep_first_seen_order() -> None:
    fused = weighted_rrf({"x": ["a"], "y": ["b"]})
    assert [k for k, _ in fused] == ["a", "b"]


def test_zero_weight_silences_a_retriever() -> None:
    fused = weighted_rrf({"d": ["a"], "l": ["b"]}, weights={"d": 0.0})
    assert fused[0][0] == "b"


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("minmax", {"a": 1.0, "b": 0.5, "c": 0.0}),
        ("max", {"a": 1.0, "b": 0.5, "c": 0.0}),
        ("none", {"a": 4.0, "b": 2.0, "c": 0.0}),
    ],
)
def test_normalize_scores(method: str, expected: dict[str, float]) -> None:
    assert normalize_scores({"a": 4.0, "b": 2.0, "c": 0.0}, method) == expected  # type: ignore[arg-type]


def test_zscore_has_zero_mean_and_unit_spread() -> None:
    z = normalize_scores({"a": 1.0, "b": 2.0, "c": 3.0}, "zscore")
    assert sum(z.values()) == pytest.approx(0.0)
    assert math.sqrt(sum(v * v for v in z.values()) / 3) == pytest.approx(1.0)


def test_constant_scores_do_not_divide_by_zero() -> None:
    assert normalize_scores({"a": 2.0, "b": 2.0}, "minmax") == {"a": 1.0, "b": 1.0}
    assert normalize_scores({"a": 2.0, "b": 2.0}, "zscore") == {"a": 0.0, "b": 0.0}
    assert normalize_scores({}, "minmax") == {}


def test_score_fusion_keeps_margins_that_rrf_loses() -> None:
    # Lexical is very sure about "a"; dense barely prefers "b".
    scores = {"lexical": {"a": 10.0, "b": 1.0, "c": 0.5}, "dense": {"b": 0.52, "a": 0.50, "c": 0.1}}
    assert weighted_score_fusion(scores)[0][0] == "a"
    rrf = weighted_rrf({n: sorted(s, key=lambda k: -s[k]) for n, s in scores.items()})
    assert rrf[0][0] in {"a", "b"} and rrf[0][1] == pytest.approx(rrf[1][1])


def test_score_fusion_gives_missing_keys_the_retrievers_floor() -> None:
    scores = {"l": {"a": 2.0, "b": 1.0, "e": 0.0}, "d": {"a": 0.9, "c": 0.1}}
    # b is missing from "d": it gets d's lowest normalised score (0.0); c likewise from "l".
    assert dict(weighted_score_fusion(scores)) == {"a": 2.0, "b": 0.5, "c": 0.0, "e": 0.0}
    assert dict(weighted_score_fusion(scores, missing=-1.0))["c"] == -1.0


def test_per_retriever_normalization() -> None:
    fused = dict(
        weighted_score_fusion(
            {"l": {"a": 4.0, "b": 2.0}, "d": {"a": 0.3, "b": 0.5}},
            normalization={"l": "max", "d": "none"},
        )
    )
    assert fused == pytest.approx({"a": 1.3, "b": 1.0})


def test_bad_weights_and_methods_are_reported() -> None:
    with pytest.raises(ConfigurationError, match="use those names"):
        weighted_rrf({"dense": ["a"]}, weights={"sparse": 1.0})
    with pytest.raises(ConfigurationError, match=">= 0"):
        weighted_score_fusion({"d": {"a": 1.0}}, weights={"d": -1.0})
    with pytest.raises(ConfigurationError, match="k must be"):
        weighted_rrf({"d": ["a"]}, k=-1)
    with pytest.raises(ConfigurationError, match="unknown normalization"):
        normalize_scores({"a": 1.0}, "l2")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="unknown fusion method"):
        fuse({"d": {"a": 1.0}}, FusionConfig(method="max"))  # type: ignore[arg-type]


def test_fuse_dispatches_on_the_config() -> None:
    scores = {"lexical": {"a": 9.0, "b": 1.0}, "dense": {"b": 0.5, "a": 0.4}}
    assert [k for k, _ in fuse(scores, FusionConfig(method="rrf"))] == ["a", "b"]
    assert fuse(scores, DEFAULT_FUSION)[0][0] == "a"


def test_spread_weighting_counts_each_side_in_its_own_spread() -> None:
    # Side a spreads 0.4, side b 0.1: x leads a by two spreads, y leads b by two: a tie.
    scores = {"a": {"x": 0.9, "y": 0.1}, "b": {"x": 0.0, "y": 0.2}}
    fused = dict(weighted_score_fusion(scores, normalization="none", spread_floor=0.01))
    assert fused["x"] == pytest.approx(fused["y"])
    # A floor above both spreads leaves the weights as given: a's larger lead wins.
    floored = weighted_score_fusion(scores, normalization="none", spread_floor=0.5)
    assert floored[0][0] == "x" and floored[0][1] > floored[1][1]


def test_a_complete_side_gives_what_it_did_not_return_zero() -> None:
    scores = {"dense": {"x": 0.8, "y": 0.6}, "lexical": {"x": 0.5}}
    cut = dict(weighted_score_fusion(scores, normalization="max", convex=True))
    full = dict(
        weighted_score_fusion(scores, normalization="max", convex=True, complete=["lexical"])
    )
    assert full["y"] < cut["y"] and full["x"] == pytest.approx(cut["x"])
