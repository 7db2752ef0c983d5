"""HeuristicFactExtractor (regex, no model) and EntityFactExtractor (structured output)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest
from langchain_core.runnables import RunnableLambda

from langchain_tiered_memory.errors import InvalidInputError
from langchain_tiered_memory.testing.fakes import ScriptedChatModel
from langchain_tiered_memory.tiers.semantic.extraction import (
    EntityFactExtractor,
    ExtractionOutput,
    HeuristicFactExtractor,
    resolve_entity_id,
)
from langchain_tiered_memory.tiers.semantic.models import Entity

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I am allergic to peanuts.", [("allergy", "peanuts")]),
        (
            "I'm severely allergic to shellfish, peanuts and tree nuts!",
            [("allergy", "shellfish"), ("allergy", "peanuts"), ("allergy", "tree nuts")],
        ),
        ("I have a peanut allergy", [("allergy", "peanut")]),
        ("I live in New York with my wife.", [("lives_in", "New York")]),
        (
            "I moved to Lyon last year and I work at Procter and Gamble.",
            [("lives_in", "Lyon"), ("employer", "Procter and Gamble")],
        ),
        ("My employer is Acme Corp, which builds rockets.", [("employer", "Acme Corp")]),
        ("I work for Initech", [("employer", "Initech")]),
        ("I'm a software engineer", [("occupation", "software engineer")]),
        ("I work as a nurse at the city hospital", [("occupation", "nurse")]),
        ("I prefer Python over Java", [("preference", "Python")]),
        ("I am vegetarian", [("diet", "vegetarian")]),
        ("I'm a vegan.", [("diet", "vegan")]),
        ("My name is Alice Smith", [("name", "Alice Smith")]),
        ("I don't like mushrooms or olives", [("dislike", "mushrooms"), ("dislike", "olives")]),
        ("I\u2019m allergic to penicillin", [("allergy", "penicillin")]),
        # Not explicit first-person facts: nothing.
        ("I am not allergic to cats.", []),
        ("Do I live in Paris?", []),
        ("If I lived in Paris I would be happy.", []),
        ("I used to live in Paris.", []),
        ("I'm a big fan of jazz", []),
        ("I'm a little tired today", []),
        ("I don't like it when you do that", []),
        ("My sister is allergic to cats", []),
        ("", []),
    ],
)
def test_heuristic_extractor(text: str, expected: list[tuple[str, str]]) -> None:
    facts = HeuristicFactExtractor().extract_facts(text)
    assert [(f.attribute, f.value) for f in facts] == expected
    assert all(f.confidence == 0.9 for f in facts)


async def test_heuristic_result_shape() -> None:
    extractor = HeuristicFactExtractor(confidence=0.7)
    result = await extractor.aextract("I prefer tea to coffee. I'm allergic to shellfish.")
    assert result.ok and result.extractor == "heuristic"
    [entity] = result.output.entities
    assert (entity.entity_name, entity.entity_type) == ("user", "user")
    assert [(f.content, f.confidence) for f in entity.facts] == [
        ("Prefers tea to coffee", 0.7),
        ("Allergic to shellfish", 0.7),
    ]
    assert extractor.extract("Nice weather today.").output.entities == []


GOOD = {
    "entities": [
        {
            "entity_name": "user",
            "entity_type": "user",
            "facts": [{"content": "Works at Acme", "attribute": "employer", "value": "Acme"}],
            "relations": [
                {"relation_type": "works_at", "target": "Acme", "target_type": "organization"}
            ],
        },
    ]
}


async def test_llm_extractor_parses_structured_output_and_sees_known_entities() -> None:
    model = ScriptedChatModel(responses=[GOOD, GOOD])
    extractor = EntityFactExtractor(model)
    known = [
        Entity(
            entity_id="acme", entity_type="organization", name="Acme", created_at=T0, updated_at=T0
        )
    ]
    result = extractor.extract("I work at Acme", known)
    assert result.ok and result.extractor == "llm"
    assert result.output == ExtractionOutput.model_validate(GOOD)
    assert "- Acme | organization" in str(model.calls[0][-1].content)
    assert "I work at Acme" in str(model.calls[0][-1].content)
    assert (await extractor.aextract("I work at Acme")).ok
    assert "No known entities yet." in str(model.calls[1][-1].content)


@pytest.mark.parametrize(
    "reply",
    [
        "[{'entity_name': 'user'",  # not JSON
        {"entities": [{"facts": "not a list"}]},  # wrong shape
        {"entities": [{"entity_name": "u", "facts": [{"content": "x", "confidence": 7}]}]},
        RuntimeError("rate limited"),
    ],
)
async def test_llm_extractor_failures_are_reported_not_raised(reply: Any) -> None:
    extractor = EntityFactExtractor(ScriptedChatModel(responses=[reply, reply]))
    for result in (extractor.extract("I work at Acme"), await extractor.aextract("I work at Acme")):
        assert not result.ok and result.output.entities == []
        assert result.error is not None and "nothing was stored" in result.error
    assert len(extractor.failures) == 2


def test_llm_extractor_reports_a_model_returning_nothing() -> None:
    class NoneModel(ScriptedChatModel):
        def with_structured_output(self, schema: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            return RunnableLambda(lambda _: None)

    result = EntityFactExtractor(NoneModel()).extract("hello there")
    assert result.error is not None and "no structured output" in result.error


def test_llm_extractor_rejects_empty_text() -> None:
    with pytest.raises(InvalidInputError):
        EntityFactExtractor(ScriptedChatModel()).extract("   ")


def test_resolve_entity_id() -> None:
    known = [
        Entity(
            entity_id="acme",
            name="ACME Corporation",
            aliases=["Acme Inc"],
            entity_type="organization",
            created_at=T0,
            updated_at=T0,
        )
    ]
    assert resolve_entity_id("The User", known, "Alice") == "alice"
    assert resolve_entity_id("acme corporation", known, "alice") == "acme"
    assert resolve_entity_id("ACME inc", known, "alice") == "acme"
    assert resolve_entity_id("Initech ", known, "alice") == "initech"
    with pytest.raises(InvalidInputError):
        resolve_entity_id(" ", known, "alice")
