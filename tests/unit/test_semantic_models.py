"""Fact, Entity, Relation records and the consistency judges."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from pydantic import ValidationError

from langchain_tiered_memory.testing.fakes import ScriptedChatModel
from langchain_tiered_memory.tiers.semantic.consistency import (
    HeuristicConsistencyJudge,
    LLMConsistencyJudge,
)
from langchain_tiered_memory.tiers.semantic.models import (
    Entity,
    Fact,
    normalize_value,
    slot_key_for,
)

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
MULTI = frozenset({"allergy", "dislike"})


def fact(content: str, **kw: Any) -> Fact:
    attribute, value = kw.get("attribute"), kw.get("value")
    base: dict[str, Any] = {
        "fact_id": content,
        "entity_id": "alice",
        "content": content,
        "confidence": 0.8,
        "first_observed": T0,
        "last_confirmed": T0,
        "valid_from": T0,
        "slot_key": slot_key_for(attribute, value, MULTI),
    }
    return Fact(**{**base, **kw})


@pytest.mark.parametrize("confidence", [math.nan, -0.01, 1.01, math.inf])
def test_fact_rejects_bad_confidence(confidence: float) -> None:
    with pytest.raises(ValidationError):
        fact("Likes tea", confidence=confidence)


def test_fact_time_semantics() -> None:
    f = fact("Lives in Paris", valid_to=T0 + timedelta(days=10))
    assert f.is_current_at(T0) and f.is_current_at(T0 + timedelta(days=9))
    assert not f.is_current_at(T0 + timedelta(days=10)) and not f.is_current_at(T0 - timedelta(1))
    assert not f.is_stale(T0 + timedelta(days=30)) and f.is_stale(T0 + timedelta(days=31))
    assert f.is_stale(T0 + timedelta(days=8), stale_after_days=7)
    naive = fact("x", first_observed=datetime(2026, 1, 1), last_confirmed=datetime(2026, 1, 1))
    assert naive.last_confirmed.tzinfo is not None
    candidate = fact("Works at Initech", status="candidate", valid_from=None)
    assert not candidate.is_current_at(T0) and not candidate.is_current


def test_records_round_trip_through_json() -> None:
    f = fact(
        "Allergic to shellfish",
        attribute="allergy",
        value="Shellfish",
        source_episode_ids=["e1"],
        source="heuristic",
    )
    assert Fact.model_validate(f.model_dump(mode="json")) == f
    e = Entity(
        entity_id="Acme  Corp",
        entity_type="Organization",
        name=" Acme Corp ",
        created_at=T0,
        updated_at=T0,
    )
    assert (e.entity_id, e.entity_type, e.name) == ("acme corp", "organization", "Acme Corp")
    assert Entity.model_validate(e.model_dump(mode="json")) == e


def test_slot_keys() -> None:
    assert slot_key_for(None, "x", MULTI) is None
    assert slot_key_for("lives_in", "Lyon", MULTI) == "lives_in"
    assert slot_key_for("allergy", "The Peanuts", MULTI) == slot_key_for("allergy", "peanut", MULTI)
    assert slot_key_for("allergy", None, MULTI) is None
    assert normalize_value(" Lyon. ") == "lyon"


@pytest.mark.parametrize(
    ("old", "new", "relation"),
    [
        (fact("Allergic to shellfish"), fact("The user is allergic to shellfish!"), "same"),
        (fact("Likes cats"), fact("Alice likes cats"), "same"),  # own name ignored
        (fact("Works on the billing service"), fact("Works on the search service"), "unrelated"),
        (fact("Has 2 cats"), fact("Has 3 cats"), "unrelated"),
        (fact("Likes coffee"), fact("Doesn't like coffee"), "contradicts"),
        (
            fact("Lives in Paris", attribute="lives_in", value="Paris"),
            fact("Lives in Lyon", attribute="lives_in", value="Lyon"),
            "contradicts",
        ),
        (
            fact("Lives in Paris", attribute="lives_in", value="Paris"),
            fact("Paris is home", attribute="lives_in", value="paris"),
            "same",
        ),
        (
            fact("Allergic to nuts", attribute="allergy", value="nuts"),
            fact("Allergic to eggs", attribute="allergy", value="eggs"),
            "unrelated",
        ),
        (
            fact("Works at Acme", attribute="employer", value="Acme"),
            fact("Lives in Acme", attribute="lives_in", value="Acme"),
            "unrelated",
        ),
        (fact("!!!"), fact("Likes tea"), "unrelated"),
    ],
)
async def test_heuristic_judge(old: Fact, new: Fact, relation: str) -> None:
    judge = HeuristicConsistencyJudge()
    assert judge.judge(old, new).relation == relation
    assert (await judge.ajudge(old, new)).relation == relation


async def test_llm_judge_uses_model_only_when_needed() -> None:
    model = ScriptedChatModel(responses=[{"relation": "contradicts", "reason": "negation"}])
    judge = LLMConsistencyJudge(model)
    same_slot = judge.judge(
        fact("Lives in Lyon", attribute="lives_in", value="Lyon"),
        fact("Lives in lyon", attribute="lives_in", value="lyon"),
    )
    assert (same_slot.relation, same_slot.judged_by, len(model.calls)) == ("same", "slot", 0)
    verdict = await judge.ajudge(fact("Enjoys jazz"), fact("Can't stand jazz"))
    assert (verdict.relation, verdict.judged_by, verdict.reason) == (
        "contradicts",
        "llm",
        "negation",
    )
    assert "Can't stand jazz" in str(model.calls[0][-1].content)


@pytest.mark.parametrize("reply", ["no json here", {"relation": "maybe"}, ValueError("boom")])
def test_llm_judge_falls_back_on_bad_output(reply: Any) -> None:
    judge = LLMConsistencyJudge(ScriptedChatModel(responses=[reply]))
    verdict = judge.judge(fact("Likes tea"), fact("likes tea"))
    assert (verdict.relation, verdict.judged_by) == ("same", "heuristic")
    assert verdict.error is not None and "fallback" in verdict.error
