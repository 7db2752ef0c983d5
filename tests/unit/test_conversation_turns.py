"""The conversation-turn tier on LangGraph's InMemoryStore (dense search, hashing embeddings)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.errors import ConfigurationError, InvalidInputError
from langchain_tiered_memory.testing.fakes import HashingEmbeddings
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.tiers.turns.enrich import EnrichConfig
from langchain_tiered_memory.tiers.turns.memory import ConversationTurns
from langchain_tiered_memory.tiers.turns.models import (
    DENSE_FIELD,
    LEXICAL_FIELD,
    ConversationTurn,
    TurnsConfig,
)
from langchain_tiered_memory.tiers.turns.rerank import candidate_spread

MAY = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
JULY = datetime(2023, 7, 14, 10, 0, tzinfo=timezone.utc)


def new_store() -> InMemoryStore:
    return InMemoryStore(index={"dims": 384, "embed": HashingEmbeddings(), "fields": ["text"]})


def tier(config: TurnsConfig | None = None, user: str = "alice") -> ConversationTurns:
    return ConversationTurns(new_store(), MemoryScope(user), config=config)


def turn(speaker: str, text: str, when: datetime = MAY, **extra: Any) -> dict[str, Any]:
    return {"speaker": speaker, "text": text, "time": when, **extra}


POTTERY = [
    turn("Ann", "Did you go to the pottery class?", turn_id="a1"),
    turn("Bob", "Yes, twice! I made a bowl.", turn_id="a2", caption="a blue clay bowl"),
    turn("Ann", "Lovely. My dog Rex is sick though.", turn_id="a3"),
]
HIKE = [
    turn("Bob", "We hiked the Matterhorn trail", JULY, turn_id="b1"),
    turn("Ann", "The view from the summit must be amazing", JULY, turn_id="b2"),
]


def stored(t: ConversationTurns) -> dict[str, dict[str, Any]]:
    return {i.key: i.value for i in t.store.search(t.namespace, limit=1000)}


def test_add_and_search_return_turns_with_their_context() -> None:
    t = tier()
    result = t.add_turns("s1", POTTERY)
    assert result.turn_ids == ["a1", "a2", "a3"] and result.written == 3
    t.add_turns("s2", HIKE)
    hits = t.search("Who made a clay bowl?", top_k=2)
    top = hits[0]
    assert (top.turn_id, top.speaker, top.session_id, top.time) == ("a2", "Bob", "s1", MAY)
    assert top.text == "Yes, twice! I made a bowl." and top.turn.caption == "a blue clay bowl"
    assert top.turn.position == 1
    assert [h.score.total for h in hits] == sorted((h.score.total for h in hits), reverse=True)


def test_stored_texts_are_the_retrieval_enrichments() -> None:
    t = tier()
    t.add_turns("s1", POTTERY)
    value = stored(t)["a3"]
    assert value[DENSE_FIELD] == "[1:56 pm on 8 May, 2023] Ann: Lovely. My dog Rex is sick though."
    lexical = value[LEXICAL_FIELD].split("\n")
    assert lexical[0] == "Ann: Did you go to the pottery class?"
    assert lexical[1] == "Bob: Yes, twice! I made a bowl. [shares a photo of a blue clay bowl]"
    assert lexical[2].startswith("[8 May 2023] Ann: Lovely.") and len(lexical) == 4
    assert (value["session_id"], value["position"], value["type"]) == ("s1", 2, "conversation_turn")


def test_adding_the_same_turns_again_writes_nothing() -> None:
    t = tier()
    t.add_turns("s1", POTTERY)
    before = stored(t)
    again = t.add_turns("s1", POTTERY)
    assert again.turn_ids == ["a1", "a2", "a3"] and again.written == 0
    assert stored(t) == before


def test_turn_by_turn_equals_one_batch() -> None:
    one, many = tier(), tier()
    one.add_turns("s1", POTTERY)
    for item in POTTERY:
        many.add_turns("s1", [item])
    assert stored(one) == stored(many)


def test_replacing_a_turn_keeps_its_place_and_refreshes_later_context() -> None:
    t = tier()
    t.add_turns("s1", POTTERY)
    changed = t.add_turns("s1", [turn("Ann", "Did you go to the ceramics class?", turn_id="a1")])
    assert changed.written == 3  # a1, and a2 and a3 whose context holds a1
    values = stored(t)
    assert values["a1"]["position"] == 0 and "ceramics" in values["a3"][LEXICAL_FIELD]


def test_default_ids_count_positions_across_calls() -> None:
    t = tier()
    first = t.add_turns("s1", [turn("Ann", "Hi"), turn("Bob", "Hello")])
    second = t.add_turns("s1", [turn("Ann", "How are you?")])
    assert first.turn_ids == ["s1:0", "s1:1"] and second.turn_ids == ["s1:2"]
    assert stored(t)["s1:2"]["position"] == 2


NO_BOOSTS = {"session_boost": 0.0, "speaker_boost": 0.0}


def test_neighbours_come_from_stored_sessions_and_never_cross_them() -> None:
    t = tier(TurnsConfig(**NO_BOOSTS))
    t.add_turns("s1", POTTERY)
    t.add_turns("s2", HIKE)
    hits = {h.turn_id: h for h in t.search("pottery class bowl", top_k=5)}  # every turn
    assert hits["a1"].score.neighbour > 0 and hits["a2"].score.neighbour > 0
    # A neighbour lends its lead over the candidates' mean score; b1 follows a3 in
    # insertion order but sits in another session, so only b2 counts.
    mean, _ = candidate_spread([h.score.fused for h in hits.values()])
    lead = max(0.0, hits["b2"].score.fused - mean)
    assert hits["b1"].score.neighbour == pytest.approx(0.6 * lead / 2)
    plain = tier(TurnsConfig(neighbour_boost=0.0, **NO_BOOSTS))
    plain.add_turns("s1", POTTERY)
    assert all(h.score.neighbour == 0 for h in plain.search("pottery class bowl"))


def test_speaker_boost_prefers_the_named_speaker() -> None:
    t = tier(TurnsConfig(neighbour_boost=0.0, **{**NO_BOOSTS, "speaker_boost": 0.5}))
    t.add_turns("s1", POTTERY)
    hits = t.search("What is Bob's hobby?", top_k=3)
    _, spread = candidate_spread([h.score.fused for h in hits])
    assert hits[0].speaker == "Bob" and hits[0].score.speaker == pytest.approx(0.5 * spread)
    assert all(h.score.speaker == 0 for h in hits if h.speaker == "Ann")
    both = t.search("What do Ann and Bob like?", top_k=3)
    assert all(h.score.speaker == 0 for h in both)


def test_session_boost_lends_each_turn_the_best_other_match_of_its_session() -> None:
    t = tier(TurnsConfig(neighbour_boost=0.0, speaker_boost=0.0))
    t.add_turns("s1", POTTERY)
    t.add_turns("s2", HIKE)
    hits = {h.turn_id: h.score for h in t.search("pottery class bowl", top_k=5)}  # every turn
    mean, _ = candidate_spread([s.fused for s in hits.values()])
    for key in ("a1", "a2", "a3"):
        best_other = max(hits[o].fused for o in ("a1", "a2", "a3") if o != key)
        assert hits[key].session == pytest.approx(0.2 * max(0.0, best_other - mean))
    assert hits["b1"].session == pytest.approx(0.2 * max(0.0, hits["b2"].fused - mean))
    assert all(abs(s.total * s.scale - s.fused - s.session) < 1e-12 for s in hits.values())


def test_default_search_uses_every_boost() -> None:
    config = TurnsConfig()
    assert (config.neighbour_boost, config.session_boost, config.speaker_boost) == (0.6, 0.2, 1.0)
    assert config.candidates == 100
    t = tier()
    t.add_turns("s1", POTTERY)
    t.add_turns("s2", HIKE)
    found = t.search("What did Bob make at the pottery class in May 2023?", top_k=5)
    assert "a2" in [h.turn_id for h in found[:2]]
    _, spread = candidate_spread([h.score.fused for h in found])
    score = next(h for h in found if h.turn_id == "a2").score
    assert score.neighbour > 0 and score.session > 0
    assert score.speaker == pytest.approx(spread)
    assert score.total == pytest.approx(
        (score.fused + score.neighbour + score.session + score.speaker) / config.score_scale()
    )
    assert 0 < score.total <= 1


def test_users_are_isolated() -> None:
    memory = TieredMemory(new_store())
    memory.for_user("alice").turns.add_turns("s1", POTTERY)
    assert memory.for_user("bob").turns.search("pottery") == []
    assert memory.for_user("alice").turns.search("pottery")


def test_tiered_memory_passes_its_turns_config() -> None:
    config = TurnsConfig(candidates=7)
    memory = TieredMemory(new_store(), turns=config)
    assert memory.for_user("alice").turns.config is config


def test_works_on_a_store_without_a_vector_index() -> None:
    t = ConversationTurns(InMemoryStore(), MemoryScope("alice"))
    t.add_turns("s1", POTTERY)
    assert {h.turn_id for h in t.search("pottery", top_k=5)} == {"a1", "a2", "a3"}


def test_a_typed_turn_is_accepted() -> None:
    t = tier()
    ids = t.add_turns("s1", [ConversationTurn(speaker="Ann", text="Hi", time=MAY, turn_id="x")])
    assert ids.turn_ids == ["x"]


@pytest.mark.parametrize(
    ("session", "turns", "message"),
    [
        ("s1", [turn("Ann", "   ")], "text"),
        ("s1", [turn("", "Hi")], "speaker"),
        ("s1", [turn("Ann", "Hi", turn_id="x"), turn("Bob", "Yo", turn_id="x")], "twice"),
        ("s1", [{"speaker": "Ann", "text": "Hi"}], "time"),
        ("s1", [turn("Ann", "Hi", mood="happy")], "mood"),
        ("", [turn("Ann", "Hi")], "session_id"),
        ("s1", turn("Ann", "Hi"), "list"),
        ("s1", "Hi", "list"),
    ],
)
def test_invalid_turns_are_rejected_and_nothing_is_stored(
    session: str, turns: Any, message: str
) -> None:
    t = tier()
    with pytest.raises(InvalidInputError, match=message):
        t.add_turns(session, turns)
    assert stored(t) == {}


def test_a_turn_id_cannot_move_to_another_session() -> None:
    t = tier()
    t.add_turns("s1", POTTERY)
    with pytest.raises(InvalidInputError, match="already stored in session 's1'"):
        t.add_turns("s2", [turn("Ann", "Hi", turn_id="a1"), turn("Bob", "Yo", turn_id="new")])
    assert "new" not in stored(t)


@pytest.mark.parametrize(("query", "top_k"), [("", 5), ("  ", 5), (None, 5), ("x", 0), ("x", True)])
def test_invalid_searches_are_rejected(query: Any, top_k: Any) -> None:
    with pytest.raises(InvalidInputError):
        tier().search(query, top_k=top_k)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"candidates": 0},
        {"candidates": 5000},
        {"neighbour_boost": -1.0},
        {"speaker_boost": float("inf")},
        {"session_boost": -0.1},
        {"lexical_enrich": "x"},
    ],
)
def test_invalid_config_is_a_configuration_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        TurnsConfig(**kwargs)


def test_custom_enrichment_is_stored() -> None:
    t = tier(TurnsConfig(lexical_enrich=EnrichConfig(context_before=0)))
    t.add_turns("s1", POTTERY)
    assert stored(t)["a3"][LEXICAL_FIELD] == "[8 May 2023] Ann: Lovely. My dog Rex is sick though."


async def test_async_twins_match_sync() -> None:
    sync, other = tier(), tier()
    sync.add_turns("s1", POTTERY)
    result = await other.aadd_turns("s1", POTTERY)
    assert result.written == 3 and stored(sync) == stored(other)
    assert [h.turn_id for h in await other.asearch("clay bowl")] == [
        h.turn_id for h in sync.search("clay bowl")
    ]
