"""Semantic memory scenarios, on InMemoryStore and on the project's Qdrant store.

Each scenario runs through the sync and the async API (``mode``), with deterministic
fakes: hashing embeddings, a fake clock and a scripted chat model.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory.stores import QdrantMemoryStore
from langchain_tiered_memory.testing.fakes import FakeClock, HashingEmbeddings, ScriptedChatModel
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.tiers.semantic.memory import SemanticMemory

FIELDS = ["content", "search_text"]


def _index() -> Any:
    return {"dims": 384, "embed": HashingEmbeddings(size=384), "fields": FIELDS}


@pytest.fixture(scope="module")
def qdrant_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BaseStore]:
    """One embedded Qdrant store per module (opening one takes seconds); tests use own users."""
    qdrant = QdrantMemoryStore.embedded(tmp_path_factory.mktemp("semantic") / "q", index=_index())
    try:
        yield qdrant
    finally:
        from langchain_tiered_memory.tiers.common.access import save_access

        save_access(qdrant)  # retrievals' access counts, saved before closing
        qdrant.close()


@pytest.fixture(params=["inmemory", "qdrant"])
def store(request: pytest.FixtureRequest) -> BaseStore:
    if request.param == "inmemory":
        return InMemoryStore(index=_index())
    qdrant: BaseStore = request.getfixturevalue("qdrant_store")
    return qdrant


@pytest.fixture
def users(request: pytest.FixtureRequest) -> dict[str, str]:
    """User ids unique to this test, so tests sharing a store never meet."""
    tag = uuid.uuid4().hex[:8]
    return {name: f"{name}-{tag}" for name in ("alice", "bob")}


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def call(memory: SemanticMemory, mode: str, method: str, /, *args: Any, **kwargs: Any) -> Any:
    """Call ``method`` (sync) or ``a<method>`` (async) with the same arguments."""
    if mode == "async":
        return await getattr(memory, "a" + method)(*args, **kwargs)
    return getattr(memory, method)(*args, **kwargs)


def make_memory(store: BaseStore, clock: FakeClock, user: str, **kw: Any) -> SemanticMemory:
    return SemanticMemory(store, MemoryScope(user), clock=clock, **kw)


async def test_allergy_stated_then_confirmed(
    store: BaseStore, clock: FakeClock, mode: str, users: dict[str, str]
) -> None:
    me = users["alice"]
    memory = make_memory(store, clock, me)
    first = await call(memory, mode, "remember_from_text", "I'm allergic to shellfish.", "ep-1")
    assert [w.outcome for w in first.writes] == ["new"]
    stated_at = clock()
    clock.advance(days=3)

    again = await call(
        memory, mode, "remember_from_text", "Reminder: I am allergic to shellfish!", "ep-2"
    )

    assert [w.outcome for w in again.writes] == ["reinforced"]
    facts = await call(memory, mode, "get_facts", me)
    assert len(facts) == 1
    fact = facts[0]
    assert (fact.attribute, fact.value, fact.source) == ("allergy", "shellfish", "heuristic")
    assert fact.confidence == pytest.approx(1.0)  # 0.9 + 0.1
    assert fact.confidence > first.writes[0].fact.confidence
    assert fact.first_observed == stated_at
    assert fact.last_confirmed == clock()
    assert fact.source_episode_ids == ["ep-1", "ep-2"]


async def test_reworded_restatement_without_slot_reinforces(
    store: BaseStore, clock: FakeClock, mode: str, users: dict[str, str]
) -> None:
    me = users["alice"]
    memory = make_memory(store, clock, me)
    await call(memory, mode, "store_fact", me.upper(), "Allergic to shellfish", confidence=0.7)
    result = await call(memory, mode, "store_fact", f" {me} ", "User is allergic to shellfish.")
    assert result.outcome == "reinforced"
    facts = await call(memory, mode, "get_facts", me.title())
    assert len(facts) == 1 and facts[0].confidence == pytest.approx(0.8)


async def test_moved_from_paris_to_lyon(
    store: BaseStore, clock: FakeClock, mode: str, users: dict[str, str]
) -> None:
    me = users["alice"]
    memory = make_memory(store, clock, me)
    await call(memory, mode, "remember_from_text", "I live in Paris.", "ep-1")
    clock.advance(days=2)
    await call(memory, mode, "remember_from_text", "I live in Paris, near the river.", "ep-2")
    paris = (await call(memory, mode, "get_facts", me))[0]
    assert paris.confidence == pytest.approx(1.0)  # reinforced to the cap
    clock.advance(days=100)
    moved_at = clock()

    result = await call(memory, mode, "remember_from_text", "I moved to Lyon last month.", "ep-3")

    # A later statement of a single-valued slot is a change over time: it
    # supersedes even a reinforced old value (0.9 >= 1.0 - margin).
    assert [w.outcome for w in result.writes] == ["superseded"]
    current = await call(memory, mode, "get_facts", me)
    assert [(f.attribute, f.value) for f in current] == [("lives_in", "Lyon")]
    history = await call(memory, mode, "fact_history", me, "lives_in")
    assert [(f.value, f.status) for f in history] == [("Paris", "superseded"), ("Lyon", "current")]
    assert history[0].valid_to == moved_at and history[0].superseded_by == history[1].fact_id
    before = await call(memory, mode, "get_facts", me, as_of=moved_at - timedelta(days=30))
    assert [f.value for f in before] == ["Paris"]
    after = await call(memory, mode, "get_facts", me, as_of=moved_at + timedelta(seconds=1))
    assert [f.value for f in after] == ["Lyon"]
    assert await call(memory, mode, "get_facts", me, as_of=moved_at - timedelta(days=365)) == []
    context = await call(memory, mode, "retrieve_entity_context", me)
    assert "Lives in Lyon" in context.text and "Paris" not in context.text


async def test_less_confident_contradiction_is_a_candidate_until_restated(
    store: BaseStore, clock: FakeClock, mode: str, users: dict[str, str]
) -> None:
    me = users["alice"]
    memory = make_memory(store, clock, me)
    await call(
        memory,
        mode,
        "store_fact",
        me,
        "Works at Acme",
        attribute="employer",
        value="Acme",
        confidence=0.9,
    )
    clock.advance(days=1)
    rumour = await call(
        memory,
        mode,
        "store_fact",
        me,
        "Works at Initech",
        attribute="employer",
        value="Initech",
        confidence=0.3,
    )
    assert rumour.outcome == "candidate"
    assert rumour.fact.status == "candidate" and rumour.fact.contradiction_count == 1
    assert rumour.previous.value == "Acme" and rumour.previous.contradiction_count == 1
    assert [f.value for f in await call(memory, mode, "get_facts", me)] == ["Acme"]
    context = await call(memory, mode, "retrieve_entity_context", me)
    assert "Initech" not in context.text

    outcomes = []
    for _ in range(4):  # 0.3 -> 0.4 -> 0.5 -> 0.6 (still clearly lower) -> 0.7 (within 0.25)
        clock.advance(days=1)
        write = await call(
            memory,
            mode,
            "store_fact",
            me,
            "Works at Initech",
            attribute="employer",
            value="Initech",
            confidence=0.3,
        )
        outcomes.append(write.outcome)
    assert outcomes == ["candidate", "candidate", "candidate", "superseded"]
    assert [f.value for f in await call(memory, mode, "get_facts", me)] == ["Initech"]
    history = await call(memory, mode, "fact_history", me, "employer")
    assert len(history) == 2  # the candidate was reinforced, never duplicated


async def test_unrelated_facts_with_similar_wording_are_both_kept(
    store: BaseStore, clock: FakeClock, mode: str, users: dict[str, str]
) -> None:
    me = users["alice"]
    memory = make_memory(store, clock, me)
    one = await call(memory, mode, "store_fact", me, "Works on the billing service")
    two = await call(memory, mode, "store_fact", me, "Works on the search service")
    three = await call(memory, mode, "remember_from_text", "I'm allergic to peanuts.")
    four = await call(memory, mode, "remember_from_text", "I'm allergic to shellfish.")
    assert [r.outcome for r in (one, two)] == ["new", "new"]
    assert [w.outcome for w in three.writes + four.writes] == ["new", "new"]
    contents = sorted(f.content for f in await call(memory, mode, "get_facts", me))
    assert contents == [
        "Allergic to peanuts",
        "Allergic to shellfish",
        "Works on the billing service",
        "Works on the search service",
    ]


async def test_negated_restatement_supersedes_an_unslotted_fact_visibly(
    store: BaseStore, clock: FakeClock, mode: str, users: dict[str, str]
) -> None:
    me = users["alice"]
    memory = make_memory(store, clock, me)
    await call(memory, mode, "store_fact", me, "Likes spicy food", confidence=0.6)
    clock.advance(days=5)
    result = await call(memory, mode, "store_fact", me, "Does not like spicy food")
    assert result.outcome == "superseded" and result.previous.content == "Likes spicy food"
    assert [f.content for f in await call(memory, mode, "get_facts", me)] == [
        "Does not like spicy food"
    ]
    assert len(await call(memory, mode, "fact_history", me)) == 2


async def test_extraction_output_that_is_not_json_stores_nothing(
    store: BaseStore, clock: FakeClock, mode: str, users: dict[str, str]
) -> None:
    model = ScriptedChatModel(responses=["Sure! Here are the facts: {entities: [oops"])
    me = users["alice"]
    memory = make_memory(store, clock, me, llm=model)

    result = await call(memory, mode, "remember_from_text", "We discussed the Q3 roadmap at Acme.")

    assert result.writes == [] and result.relations == []
    assert result.paths == ["heuristic", "llm"]
    assert result.error is not None and "OutputParserException" in result.error
    assert [msg for _, msg in memory.extraction_errors] == result.errors
    assert await call(memory, mode, "list_entities") == []
    assert await call(memory, mode, "semantic_search", "Acme roadmap") == []


async def test_extraction_failure_keeps_the_heuristic_facts(
    store: BaseStore, clock: FakeClock, mode: str, users: dict[str, str]
) -> None:
    model = ScriptedChatModel(responses=[RuntimeError("provider timed out")])
    me = users["alice"]
    memory = make_memory(store, clock, me, llm=model)
    result = await call(memory, mode, "remember_from_text", "I am vegetarian. Acme is great.")
    assert [(w.fact.attribute, w.fact.source) for w in result.writes] == [("diet", "heuristic")]
    assert result.error is not None and "provider timed out" in result.error


def _router(extraction: dict[str, Any], verdict: str = "same") -> Any:
    def reply(messages: list[BaseMessage]) -> dict[str, Any]:
        if "Extract durable entities" in str(messages[0].content):
            return extraction
        return {"relation": verdict, "reason": "scripted"}

    return reply


async def test_llm_path_merges_known_entities_and_records_its_source(
    store: BaseStore, clock: FakeClock, mode: str, users: dict[str, str]
) -> None:
    extraction = {
        "entities": [
            {
                "entity_name": "user",
                "entity_type": "user",
                "facts": [
                    {
                        "content": "Works at Acme Corp",
                        "attribute": "employer",
                        "value": "Acme Corp",
                        "confidence": 0.9,
                    },
                    {"content": "Leads the payments team", "confidence": 0.7},
                ],
                "relations": [
                    {
                        "relation_type": "works at",
                        "target": "ACME corp",
                        "target_type": "organization",
                    }
                ],
            },
            {
                "entity_name": "acme corp",
                "entity_type": "organization",
                "facts": [{"content": "Builds rockets", "confidence": 0.8}],
            },
        ]
    }
    model = ScriptedChatModel(default=_router(extraction, verdict="unrelated"))
    me = users["alice"]
    memory = make_memory(store, clock, me, llm=model)
    await call(
        memory, mode, "upsert_entity", "Acme Corp", entity_type="organization", name="Acme Corp"
    )

    result = await call(memory, mode, "remember_from_text", "I work at Acme Corp.", "ep-9")

    assert result.errors == []
    by_path = [(w.fact.content, w.fact.source, w.outcome) for w in result.writes]
    assert by_path == [
        ("Works at Acme Corp", "heuristic", "new"),
        ("Works at Acme Corp", "heuristic", "reinforced"),  # same slot value: merged, not bumped
        ("Leads the payments team", "llm", "new"),
        ("Builds rockets", "llm", "new"),
    ]
    employer = [f for f in await call(memory, mode, "get_facts", me) if f.attribute == "employer"]
    assert len(employer) == 1 and employer[0].confidence == pytest.approx(0.9)
    entities = await call(memory, mode, "list_entities")
    assert sorted(e.entity_id for e in entities) == sorted(["acme corp", me])
    prompts = [str(c[-1].content) for c in model.calls if "Extract durable" in str(c[0].content)]
    assert len(prompts) == 1 and "Acme Corp | organization" in prompts[0]  # known entities given
    relations = await call(memory, mode, "get_relations", me)
    assert [(r.relation.relation_type, r.target.name) for r in relations] == [
        ("works_at", "Acme Corp")
    ]
    context = await call(memory, mode, "retrieve_entity_context", me)
    assert "Relationships:\n- works_at: Acme Corp" in context.text


async def test_llm_judge_recognises_synonyms(
    store: BaseStore, clock: FakeClock, mode: str, users: dict[str, str]
) -> None:
    model = ScriptedChatModel(default=_router({"entities": []}, verdict="same"))
    me = users["alice"]
    memory = make_memory(store, clock, me, llm=model)
    await call(memory, mode, "store_fact", me, "Lives in NYC", attribute="lives_in", value="NYC")
    result = await call(
        memory,
        mode,
        "store_fact",
        me,
        "Lives in New York City",
        attribute="lives_in",
        value="New York City",
    )
    assert (result.outcome, result.judged_by) == ("reinforced", "llm")
    assert len(await call(memory, mode, "fact_history", me, "lives_in")) == 1


async def test_llm_judge_failure_falls_back_to_heuristic_with_a_warning(
    store: BaseStore, clock: FakeClock, mode: str, users: dict[str, str]
) -> None:
    model = ScriptedChatModel(default=RuntimeError("judge down"))
    me = users["alice"]
    memory = make_memory(store, clock, me, llm=model)
    await call(memory, mode, "store_fact", me, "Lives in NYC", attribute="lives_in", value="NYC")
    result = await call(
        memory, mode, "store_fact", me, "Lives in Boston", attribute="lives_in", value="Boston"
    )
    assert result.outcome == "superseded" and result.judged_by == "slot"
    assert result.warnings and "judge down" in result.warnings[0]


async def test_users_are_isolated(
    store: BaseStore, clock: FakeClock, mode: str, users: dict[str, str]
) -> None:
    alice = make_memory(store, clock, users["alice"])
    bob = make_memory(store, clock, users["bob"])
    planner = SemanticMemory(store, MemoryScope(users["alice"], agent_id="planner"), clock=clock)
    me = users["alice"]
    await call(alice, mode, "remember_from_text", "I'm allergic to shellfish. I live in Paris.")
    await call(alice, mode, "upsert_entity", "acme", entity_type="organization")

    assert await call(bob, mode, "get_facts", me) == []
    assert await call(bob, mode, "get_entity", me) is None
    assert await call(bob, mode, "semantic_search", "shellfish allergy") == []
    assert not await call(bob, mode, "retrieve_entity_context", me)
    assert await call(planner, mode, "list_entities") == []
    write = await call(
        bob,
        mode,
        "store_fact",
        users["bob"],
        "Allergic to shellfish",
        attribute="allergy",
        value="shellfish",
    )
    assert write.outcome == "new"  # bob's write never sees alice's fact
    assert len(await call(alice, mode, "get_facts", me)) == 2
    assert len(await call(alice, mode, "semantic_search", "shellfish allergy")) >= 1
