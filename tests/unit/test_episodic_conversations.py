# ruff: noqa: F811  (pytest fixtures imported from test_episodic_support are redefined as arguments)
from datetime import datetime, timedelta, timezone

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.store.base import BaseStore
from test_episodic_support import fake_clock, qdrant_store, scope, store  # noqa: F401 (fixtures)

from langchain_tiered_memory.errors import InvalidInputError
from langchain_tiered_memory.testing.fakes import FakeClock, ScriptedChatModel
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.tiers.episodic.conversations import (
    ConversationIndex,
    extract_keywords,
)

T0 = datetime(2026, 1, 1, 9, tzinfo=timezone.utc)


def test_keyword_extractor_is_deterministic_and_skips_stopwords() -> None:
    texts = ["The Kubernetes pod keeps crashing", "I think the pod OOMs; kubernetes limits?"]
    assert extract_keywords(texts) == ["kubernetes", "pod", "crashing", "ooms", "limits"]
    assert extract_keywords(texts) == extract_keywords(list(texts))
    assert extract_keywords(["the and of"]) == []
    assert extract_keywords(["C++ and C# and node.js"], max_topics=3) == ["c++", "c#", "node.js"]


def test_index_and_find_related(
    store: BaseStore, scope: MemoryScope, fake_clock: FakeClock
) -> None:
    index = ConversationIndex(store, scope, clock=fake_clock)
    messages = [
        {"role": "user", "content": "Postgres migration fails", "timestamp": T0.isoformat()},
        {
            "role": "assistant",
            "content": "Raise lock_timeout",
            "timestamp": (T0 + timedelta(minutes=9)).isoformat(),
        },
    ]
    record = index.index_conversation(
        "c-db", messages, "Fixed a Postgres migration by raising the lock timeout"
    )
    assert record.message_count == 2 and record.topics_source == "keywords"
    assert (record.started_at, record.ended_at) == (T0, T0 + timedelta(minutes=9))
    assert "postgres" in record.topics
    index.index_conversation(
        "c-food",
        [HumanMessage("Ideas for dinner?"), AIMessage("Try a risotto")],
        "Suggested a mushroom risotto for dinner",
        topics=["Cooking", "dinner"],
    )
    related = index.find_related_conversations("postgres lock timeout", top_k=1)
    assert [r.conversation_id for r in related] == ["c-db"]
    assert related[0].score.relevance == 1.0
    by_topic = index.find_related_conversations("anything", topics=["cooking"])
    assert [r.conversation_id for r in by_topic] == ["c-food"]
    assert by_topic[0].record.topics == ["cooking", "dinner"]


def test_llm_topics_and_fallback_to_keywords(store: BaseStore, scope: MemoryScope) -> None:
    llm = ScriptedChatModel(responses=[{"topics": ["Databases", "Migrations"]}, RuntimeError("x")])
    index = ConversationIndex(store, scope, llm=llm)
    first = index.index_conversation("c1", ["migrate the db"], "Database migration help")
    assert (first.topics, first.topics_source, first.topics_error) == (
        ["databases", "migrations"],
        "llm",
        None,
    )
    second = index.index_conversation("c2", ["hello"], "Greeting about gardening tomatoes")
    assert second.topics_source == "keywords" and second.topics_error == "RuntimeError: x"
    assert "gardening" in second.topics


async def test_async_twins(store: BaseStore, scope: MemoryScope) -> None:
    index = ConversationIndex(store, scope)
    await index.aindex_conversation("c1", ["x"], "Planning a trip to Japan", topics=["travel"])
    found = await index.afind_related_conversations("japan trip")
    assert [r.conversation_id for r in found] == ["c1"]


def test_bad_input_and_isolation(store: BaseStore) -> None:
    alice = ConversationIndex(store, MemoryScope("alice-conv"))
    bob = ConversationIndex(store, MemoryScope("bob-conv"))
    with pytest.raises(InvalidInputError, match="summary is empty"):
        alice.index_conversation("c", [], "  ")
    with pytest.raises(InvalidInputError, match="conversation_id"):
        alice.index_conversation("", [], "s")
    with pytest.raises(InvalidInputError, match="query"):
        alice.find_related_conversations("")
    alice.index_conversation("c-private", ["x"], "Alice discussed her diagnosis")
    assert bob.find_related_conversations("diagnosis") == []
