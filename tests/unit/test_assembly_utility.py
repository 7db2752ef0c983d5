"""One ranking across tiers: utility packing, critical facts and the relevance floor."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langchain_tiered_memory import AssemblyConfig, Episode, TieredMemory
from langchain_tiered_memory.assembly.critical import CriticalFactPolicy
from langchain_tiered_memory.assembly.items import MemoryItem
from langchain_tiered_memory.assembly.packing import FLOOR_REASON, pack_by_utility
from langchain_tiered_memory.assembly.utility import rank_items
from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.testing.fakes import HashingEmbeddings
from langchain_tiered_memory.tiers.common.ranking import UtilityConfig
from langchain_tiered_memory.tiers.episodic.models import TrajectoryStep
from langchain_tiered_memory.tokens import TokenCounter

COUNTER = TokenCounter()
HOBBIES = ["cycling", "yoga", "chess", "pottery", "climbing", "sailing", "baking", "running"]
THINGS = ["a drone", "a kayak", "a camera", "a road bike", "a telescope", "a tent"]
QUERY = "payments-api pods are in CrashLoopBackOff again after deploy"


def _distractor_heavy_user(path: Path, config: AssemblyConfig | None = None) -> TieredMemory:
    memory = TieredMemory.open(path, embeddings=HashingEmbeddings())
    user = memory.for_user("dana")
    for n in range(150):
        hobby, thing = HOBBIES[n % len(HOBBIES)], THINGS[n % len(THINGS)]
        text = (
            f"Enjoys {hobby} before work with a club ({n})"
            if n % 2
            else f"Owns {thing} bought in {2000 + n % 25} ({n})"
        )
        user.semantic.store_fact("dana", text, confidence=0.9)
    for n in range(120):
        user.episodic.record(
            Episode(
                task_description=f"Answer a question about {HOBBIES[n % len(HOBBIES)]} ({n})",
                outcome="success",
                reflection="Short answers worked",
                trajectory=[TrajectoryStep(action="respond", observation="ok")],
            )
        )
    user.episodic.record(
        Episode(
            task_description=(
                "Debug failing Kubernetes deployment of payments-api: pods in CrashLoopBackOff"
            ),
            outcome="success",
            reflection=(
                "Restarting did not help; root cause was a missing DATABASE_URL secret after "
                "the config map rename"
            ),
            trajectory=[TrajectoryStep(action="tool_call: kubectl_logs", observation="no secret")],
            importance=0.8,
        )
    )
    user.remember("I'm allergic to shellfish.")
    memory.close()
    return TieredMemory.open(
        path, embeddings=HashingEmbeddings(), assembly=config or AssemblyConfig()
    )


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("dana") / "memory"
    _distractor_heavy_user(path).close()
    return path


def test_ranking_finds_the_one_relevant_episode_among_distractors(store_path: Path) -> None:
    """Budget 400: the failure lesson is in, hobby facts stay out, the allergy is in."""
    memory = TieredMemory.open(store_path, embeddings=HashingEmbeddings())
    try:
        ctx = memory.for_user("dana").build_memory_context(QUERY, token_budget=400)
    finally:
        memory.close()
    assert "missing DATABASE_URL secret" in ctx.text
    assert "Allergic to shellfish" in ctx.text
    distractors = [i for i in ctx.items if "club" in i.text or "bought in" in i.text]
    assert distractors == []
    assert ctx.tokens <= 400
    assert any(d.reason == FLOOR_REASON for d in ctx.dropped)
    best = next(i for i in ctx.items if "CrashLoopBackOff" in i.text)
    parts = {"relevance", "importance", "recency", "confidence", "prior", "utility"}
    assert parts <= set(best.score_breakdown)
    assert 0.0 <= best.score <= 1.0


def test_section_order_packing_fills_the_budget_with_distractors(store_path: Path) -> None:
    """At budget 300 the section-order option, kept for comparison, loses the episode."""
    contexts = {}
    for packing in ("sections", "utility"):
        memory = TieredMemory.open(
            store_path, embeddings=HashingEmbeddings(), assembly=AssemblyConfig(packing=packing)
        )
        try:
            contexts[packing] = memory.for_user("dana").build_memory_context(
                QUERY, token_budget=300
            )
        finally:
            memory.close()
    ctx = contexts["sections"]
    distractors = [i for i in ctx.items if "club" in i.text or "bought in" in i.text]
    assert len(distractors) > 5
    assert "missing DATABASE_URL secret" not in ctx.text
    assert "missing DATABASE_URL secret" in contexts["utility"].text
    assert contexts["utility"].tokens < ctx.tokens


def test_nothing_relevant_gives_only_the_critical_facts(store_path: Path) -> None:
    memory = TieredMemory.open(store_path, embeddings=HashingEmbeddings())
    try:
        ctx = memory.for_user("dana").build_memory_context(
            "quantum chromodynamics lattice", token_budget=2000
        )
    finally:
        memory.close()
    assert [i.text for i in ctx.items] == ["Allergic to shellfish"]
    assert ctx.tokens < 200


def test_critical_fact_policy_is_configurable() -> None:
    pinned = MemoryItem("semantic", "profile", "f", "Likes jazz", provenance={"pinned": True})
    assert CriticalFactPolicy().is_critical(pinned)
    assert not CriticalFactPolicy(include_pinned=False, patterns=()).is_critical(pinned)
    med = MemoryItem("semantic", "profile", "m", "Takes insulin before meals")
    assert CriticalFactPolicy().is_critical(med)
    sure = MemoryItem("semantic", "profile", "s", "Likes jazz", confidence=0.97)
    assert CriticalFactPolicy(min_confidence=0.95).is_critical(sure)
    with pytest.raises(ConfigurationError, match="regular expression"):
        CriticalFactPolicy(patterns=("(",))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"packing": "fastest"},
        {"relevance_floor": 1.5},
        {"token_cost_weight": -1},
        {"section_floors": {"conversation": 2.0}},
    ],
)
def test_assembly_config_refuses_bad_values(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        AssemblyConfig(**kwargs)  # type: ignore[arg-type]


def _turn(n: int, text: str, tier_score: float) -> MemoryItem:
    return MemoryItem("episodic", "conversation", f"t{n}", text, score=tier_score)


def test_turns_are_ranked_by_the_turn_tier_once_they_share_a_term() -> None:
    """A turn's relevance is its tier score; a turn sharing no term with the query has none."""
    turns = [
        _turn(1, "We rented a cabin near the lake in June", 0.62),
        _turn(2, "The lake was cold but lovely", 0.66),
        _turn(3, "Did you see the match yesterday?", 0.64),  # next to a match: boosted
    ]
    ranked = rank_items(
        turns,
        "When did we go to the lake cabin?",
        now=datetime(2026, 1, 1, tzinfo=timezone.utc),
        config=UtilityConfig(),
        critical=CriticalFactPolicy(),
    )
    relevance = {i.id: i.score_breakdown["relevance"] for i in ranked}
    assert relevance == {"t1": 0.62, "t2": 0.66, "t3": 0.0}
    assert [i.id for i in ranked][:2] == ["t1", "t2"]  # the tier's order, scaled by tier_rank
    ctx = pack_by_utility(
        ranked,
        budget=500,
        counter=COUNTER,
        relevance_floor=0.9,
        section_floors={"conversation": 0.05},
    )
    assert {i.id for i in ctx.items} == {"t1", "t2"}
    assert [d.item.id for d in ctx.dropped if d.reason == FLOOR_REASON] == ["t3"]


def test_a_long_memory_is_trimmed_to_make_room_for_a_short_one() -> None:
    """The long memory keeps its beginning; the short one goes in whole instead of out."""
    strategy = MemoryItem(
        "procedural",
        "strategies",
        "s",
        "payments-api rollout checklist: verify secrets and config maps, then watch pods. "
        + "Procedure: kubectl get secrets; diff the config maps; read the logs. " * 3,
        score=0.7,
        score_breakdown={"relevance": 0.9},
    )
    warning = MemoryItem(
        "procedural",
        "warnings",
        "w",
        "orders_v1: failed 1 of 1 uses; last error: 410 Gone: use orders_v2",
        score=0.45,
        score_breakdown={"relevance": 0.45},
    )
    whole = pack_by_utility([strategy, warning], budget=1000, counter=COUNTER)
    budget = whole.tokens - 12
    ctx = pack_by_utility([strategy, warning], budget=budget, counter=COUNTER)
    assert ctx.tokens <= budget
    assert "use orders_v2" in ctx.text
    assert "payments-api rollout checklist" in ctx.text
    assert [(i.id, i.trimmed) for i in ctx.items] == [("w", False), ("s", True)]


SECTIONS = ["warnings", "strategies", "profile", "knowledge", "experiences", "conversation"]

items_strategy = st.lists(
    st.builds(
        lambda n, section, text, relevance, critical: MemoryItem(
            "semantic" if section in ("profile", "knowledge") else "episodic",
            section,
            f"i{n}",
            text,
            score=relevance,
            score_breakdown={"relevance": relevance},
            critical=critical,
        ),
        st.integers(0, 10_000),
        st.sampled_from(SECTIONS),
        st.text(min_size=1, max_size=300),
        st.floats(0.0, 1.0),
        st.booleans(),
    ),
    max_size=25,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=items_strategy, budget=st.integers(0, 1500), floor=st.floats(0.0, 1.0))
def test_utility_packing_never_exceeds_the_budget_and_respects_the_floor(
    items: list[MemoryItem], budget: int, floor: float
) -> None:
    ctx = pack_by_utility(items, budget=budget, counter=COUNTER, relevance_floor=floor)
    assert ctx.tokens <= budget
    assert COUNTER.count(ctx.text) == ctx.tokens
    for item in ctx.items:
        assert item.critical or item.score_breakdown["relevance"] >= floor


@settings(max_examples=100, deadline=None)
@given(
    critical=st.lists(st.text(alphabet="abcdefghij ", min_size=3, max_size=40), max_size=5),
    others=items_strategy,
)
def test_critical_facts_are_always_in_when_they_fit(
    critical: list[str], others: list[MemoryItem]
) -> None:
    others = [replace(o, critical=False) for o in others]
    facts = [
        MemoryItem("semantic", "profile", f"c{n}", f"Allergic to {t}", critical=True)
        for n, t in enumerate(critical)
    ]
    budget = 200 + 30 * len(facts)
    ctx = pack_by_utility([*others, *facts], budget=budget, counter=COUNTER, relevance_floor=0.99)
    shown = {i.id for i in ctx.items}
    assert {f.id for f in facts} <= shown
