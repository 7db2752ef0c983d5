"""SemanticMemory API on InMemoryStore: bad input, entities, relations, context, search."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langgraph.store.base import SearchOp
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory.errors import ConfigurationError, InvalidInputError
from langchain_tiered_memory.testing.fakes import FakeClock, HashingEmbeddings
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.tiers.semantic.memory import SemanticMemory
from langchain_tiered_memory.tiers.semantic.models import SemanticConfig


def _store() -> InMemoryStore:
    return InMemoryStore(
        index={"dims": 384, "embed": HashingEmbeddings(), "fields": ["content", "search_text"]}
    )


def _memory(clock: FakeClock | None = None, **kw: Any) -> SemanticMemory:
    return SemanticMemory(_store(), MemoryScope("alice"), clock=clock or FakeClock(), **kw)


def _everything(memory: SemanticMemory) -> list[Any]:
    return memory.store.search(memory.scope.prefix, limit=1000)


@pytest.mark.parametrize(
    ("content", "confidence"),
    [
        ("", 0.8),
        ("   ", 0.8),
        ("Likes tea", 1.5),
        ("Likes tea", -0.1),
        ("Likes tea", math.nan),
        ("Likes tea", math.inf),
        ("Likes tea", "0.5"),
        ("Likes tea", True),
    ],
)
async def test_bad_fact_input_raises_and_stores_nothing(content: str, confidence: Any) -> None:
    memory = _memory()
    with pytest.raises(InvalidInputError):
        memory.store_fact("alice", content, confidence=confidence)
    with pytest.raises(InvalidInputError):
        await memory.astore_fact("alice", content, confidence=confidence)
    assert _everything(memory) == []  # not even the entity


@given(st.one_of(st.floats(allow_nan=True).filter(lambda x: not 0 <= x <= 1), st.just(math.nan)))
def test_any_confidence_outside_unit_interval_is_rejected(confidence: float) -> None:
    memory = _memory()
    with pytest.raises(InvalidInputError, match="confidence"):
        memory.store_fact("alice", "Likes tea", confidence=confidence)
    assert _everything(memory) == []


def test_other_bad_input_is_explained() -> None:
    memory = _memory()
    with pytest.raises(InvalidInputError, match="attribute"):
        memory.store_fact("alice", "Lives in Lyon", value="Lyon")
    with pytest.raises(InvalidInputError, match="source"):
        memory.store_fact("alice", "Lives in Lyon", source="guess")
    with pytest.raises(InvalidInputError, match="entity_id"):
        memory.store_fact("  ", "Lives in Lyon")
    with pytest.raises(InvalidInputError, match="text"):
        memory.remember_from_text("  ")
    with pytest.raises(InvalidInputError, match="query"):
        memory.semantic_search("")
    with pytest.raises(ConfigurationError):
        SemanticMemory({}, MemoryScope("alice"))  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        SemanticConfig(supersede_margin=2.0)
    assert _everything(memory) == []


async def test_relation_to_missing_entity_raises_and_stores_nothing() -> None:
    memory = _memory()
    memory.upsert_entity("Alice", name="Alice")
    with pytest.raises(InvalidInputError, match="target entity 'acme' does not exist"):
        memory.add_relation("alice", "works_at", "Acme")
    with pytest.raises(InvalidInputError, match="source entity 'bob' does not exist"):
        await memory.aadd_relation("bob", "knows", "alice")
    assert memory.get_relations("alice") == []
    assert [i.key for i in _everything(memory)] == ["alice"]


async def test_entities_are_normalised_and_relations_listed() -> None:
    memory = _memory()
    memory.store_fact("Alice", "Likes tea")
    memory.store_fact("alice ", "Likes jazz")
    assert [e.entity_id for e in memory.list_entities()] == ["alice"]
    assert memory.get_entity("ALICE") is not None and memory.get_entity("ALICE").name == "Alice"
    await memory.aupsert_entity("Acme", entity_type="Organization", aliases=["ACME Inc"])
    relation = memory.add_relation("alice", "works at", "acme", description="since 2020")
    again = memory.add_relation("Alice", "Works At", "ACME", description="since 2020")
    assert relation.key == again.key == "alice|works_at|acme"
    related = await memory.aget_relations("alice")
    assert [(r.relation.relation_type, r.target.entity_type) for r in related] == [
        ("works_at", "organization")
    ]
    assert [e.entity_id for e in memory.list_entities(entity_type="organization")] == ["acme"]


def test_entity_context_keeps_current_confident_fresh_facts() -> None:
    clock = FakeClock()
    memory = _memory(clock)
    memory.store_fact("alice", "Has a cat named Miso", confidence=0.95)
    memory.store_fact("alice", "Might like opera", confidence=0.3)  # below min_confidence
    memory.store_fact("alice", "Lives in Paris", attribute="lives_in", value="Paris")
    clock.advance(days=20)
    memory.store_fact("alice", "Lives in Lyon", attribute="lives_in", value="Lyon")
    memory.upsert_entity("acme", entity_type="organization", name="Acme")
    memory.add_relation("alice", "works_at", "acme", description="platform team")
    clock.advance(days=15)  # the cat fact (35 days unconfirmed) is now stale
    memory.store_fact("alice", "Plays the cello", confidence=0.7)

    context = memory.retrieve_entity_context("alice")

    assert [f.content for f in context.facts] == ["Lives in Lyon", "Plays the cello"]
    assert context.omitted == 2
    assert context.text == (
        "Entity: alice (user)\nKnown facts:\n- Lives in Lyon\n- Plays the cello\n"
        "Relationships:\n- works_at: Acme (platform team)"
    )
    assert len(memory.retrieve_entity_context("alice", max_facts=1).facts) == 1
    unknown = memory.retrieve_entity_context("nobody")
    assert not unknown and unknown.text == "" and unknown.facts == []


async def test_semantic_search_ranks_facts_and_entities() -> None:
    memory = _memory()
    memory.store_fact("alice", "Allergic to shellfish", attribute="allergy", value="shellfish")
    memory.store_fact("alice", "Enjoys hiking in the Alps")
    memory.store_fact("rocket", "Launches from Kourou", entity_type="project")
    memory.upsert_entity("shellfish bar", entity_type="place", name="Shellfish Bar")

    hits = await memory.asemantic_search("shellfish allergy", top_k=3)
    assert hits[0].kind == "fact" and hits[0].fact is not None
    assert hits[0].fact.content == "Allergic to shellfish"
    assert any(h.kind == "entity" and h.entity_id == "shellfish bar" for h in hits)
    assert all(h.score is not None for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)  # type: ignore[misc]
    projects = memory.semantic_search("launch", entity_type="project")
    assert {h.entity_id for h in projects} == {"rocket"}


def test_superseded_facts_are_not_searched_and_can_be_deleted() -> None:
    clock = FakeClock()
    memory = _memory(clock)
    paris = memory.store_fact("alice", "Lives in Paris", attribute="lives_in", value="Paris").fact
    clock.advance(days=1)
    memory.store_fact("alice", "Lives in Lyon", attribute="lives_in", value="Lyon")
    found = [h.text for h in memory.semantic_search("Lives in Paris") if h.kind == "fact"]
    assert found == ["Lives in Lyon"]
    stored = memory.get_fact(paris.fact_id)
    assert stored is not None and stored.status == "superseded"
    assert memory.delete_fact(paris.fact_id) is True
    assert memory.delete_fact(paris.fact_id) is False
    assert [f.value for f in memory.fact_history("alice", "lives_in")] == ["Lyon"]


def test_works_on_a_store_without_vector_index() -> None:
    memory = SemanticMemory(InMemoryStore(), MemoryScope("alice"), clock=FakeClock())
    memory.store_fact("alice", "Allergic to shellfish")
    assert memory.store_fact("alice", "allergic to shellfish").outcome == "reinforced"
    assert memory.store_fact("alice", "Plays chess").outcome == "new"
    assert len(memory.get_facts("alice")) == 2


def test_multi_valued_attribute_without_value_never_replaces_siblings() -> None:
    memory = _memory()
    memory.store_fact("alice", "Allergic to peanuts", attribute="allergy")
    result = memory.store_fact("alice", "Allergic to penicillin", attribute="allergy")
    assert result.outcome == "new" and len(memory.get_facts("alice")) == 2


def test_custom_config_changes_the_supersede_rule() -> None:
    clock = FakeClock()
    strict = _memory(clock, config=SemanticConfig(supersede_margin=0.0))
    strict.store_fact("alice", "Works at Acme", attribute="employer", value="Acme", confidence=0.9)
    clock.advance(days=1)
    write = strict.store_fact("alice", "Works at Initech", attribute="employer", value="Initech")
    assert write.outcome == "candidate"  # 0.8 < 0.9 with no margin
    assert clock() - write.fact.first_observed == timedelta(0)


class _CountingStore(InMemoryStore):
    """Records the limit of every search the tier sends."""

    searches: list[int]

    def batch(self, ops: Any) -> Any:
        ops = list(ops)
        self.searches.extend(op.limit for op in ops if isinstance(op, SearchOp))
        return super().batch(ops)

    async def abatch(self, ops: Any) -> Any:
        ops = list(ops)
        self.searches.extend(op.limit for op in ops if isinstance(op, SearchOp))
        return await super().abatch(ops)


async def test_small_page_size_still_reads_every_fact() -> None:
    store = _CountingStore(
        index={"dims": 384, "embed": HashingEmbeddings(), "fields": ["content", "search_text"]}
    )
    store.searches = []
    memory = SemanticMemory(
        store, MemoryScope("alice"), clock=FakeClock(), config=SemanticConfig(page_size=2)
    )
    for i in range(5):
        memory.store_fact("alice", f"visited city number {i}", attribute=f"visit_{i}")
    store.searches.clear()
    facts = memory.get_facts("alice")
    assert sorted(f.content for f in facts) == [f"visited city number {i}" for i in range(5)]
    assert store.searches and set(store.searches) == {2}  # read in pages of two
    assert len(await memory.aget_facts("alice")) == 5
