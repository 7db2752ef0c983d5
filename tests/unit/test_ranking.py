from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.tiers.common.ranking import (
    RankingConfig,
    rank_candidates,
    recency_score,
    relevance_scores,
    score_item,
)

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"relevance_weight": -1.0},
        {"recency_weight": float("nan")},
        {"relevance_weight": 0.0, "recency_weight": 0.0, "importance_weight": 0.0},
        {"recency_half_life_hours": 0.0},
        {"relevance_scale": "log"},
    ],
)
def test_bad_config_is_refused_with_a_fix(kwargs: dict) -> None:
    with pytest.raises(ConfigurationError, match=r"use|give"):
        RankingConfig(**kwargs)


def test_recency_halves_every_half_life_and_future_counts_as_now() -> None:
    assert recency_score(NOW, NOW, 24) == 1.0
    assert recency_score(NOW - timedelta(hours=24), NOW, 24) == pytest.approx(0.5)
    assert recency_score(NOW - timedelta(hours=48), NOW, 24) == pytest.approx(0.25)
    assert recency_score(NOW + timedelta(hours=5), NOW, 24) == 1.0
    naive = NOW.replace(tzinfo=None) - timedelta(hours=24)
    assert recency_score(naive, NOW, 24) == pytest.approx(0.5)


def test_relevance_scales() -> None:
    assert relevance_scores([0.03, 0.015, None], "relative") == [1.0, 0.5, 0.0]
    assert relevance_scores([-0.2, 0.7, 1.3], "absolute") == [0.0, 0.7, 1.0]
    assert relevance_scores([-0.5, None], "relative") == [0.0, 0.0]
    assert relevance_scores([], "relative") == []


def test_breakdown_is_a_weighted_mean_a_person_can_check() -> None:
    config = RankingConfig(relevance_weight=2.0, recency_weight=1.0, importance_weight=1.0)
    s = score_item(0.9, NOW - timedelta(days=7), 0.3, now=NOW, config=config, raw_similarity=0.45)
    assert (s.relevance, s.importance, s.raw_similarity) == (0.9, 0.3, 0.45)
    assert s.recency == pytest.approx(0.5)
    assert s.total == pytest.approx((2 * 0.9 + 0.5 + 0.3) / 4)
    assert sum(s.contributions().values()) == pytest.approx(s.total)
    assert s.explain().startswith(f"{s.total:.3f} = (2.0*relevance 0.900")


def test_recency_and_importance_can_outrank_a_slightly_better_match() -> None:
    old_close = ("old", 0.50, NOW - timedelta(days=60), 0.2)
    new_important = ("new", 0.45, NOW - timedelta(hours=1), 0.9)
    cands = [old_close, new_important]

    def ranked(config: RankingConfig) -> list[str]:
        out = rank_candidates(
            cands,
            similarity=lambda c: c[1],
            timestamp=lambda c: c[2],
            importance=lambda c: c[3],
            now=NOW,
            config=config,
        )
        return [c[0] for c, _ in out]

    assert ranked(RankingConfig()) == ["new", "old"]
    relevance_only = RankingConfig(recency_weight=0.0, importance_weight=0.0)
    assert ranked(relevance_only) == ["old", "new"]


@given(
    sims=st.lists(st.one_of(st.none(), st.floats(-2, 50, allow_nan=False)), max_size=8),
    ages=st.floats(0, 1e5),
    importance=st.floats(-1, 2, allow_nan=False),
    weights=st.tuples(*[st.floats(0, 10, allow_nan=False)] * 3).filter(lambda w: sum(w) > 0),
    scale=st.sampled_from(["relative", "absolute"]),
)
def test_every_component_and_total_stay_in_unit_range(
    sims: list, ages: float, importance: float, weights: tuple, scale: str
) -> None:
    config = RankingConfig(*weights, relevance_scale=scale)  # type: ignore[arg-type]
    for rel in relevance_scores(sims, config.relevance_scale):
        s = score_item(rel, NOW - timedelta(hours=ages), importance, now=NOW, config=config)
        for value in (s.relevance, s.recency, s.importance, s.total):
            assert 0.0 <= value <= 1.0
