"""The conversation-turn tier on the store ``TieredMemory.open`` builds (embedded, hybrid)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.testing.fakes import HashingEmbeddings

pytestmark = pytest.mark.integration

MAY = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)


def test_turns_search_hybrid_with_the_lexical_context(tmp_path: Path) -> None:
    with TieredMemory.open(
        tmp_path / "m", embeddings=HashingEmbeddings(), durable_writes=False
    ) as memory:
        alice = memory.for_user("alice")
        turns = alice.turns
        session = [
            {"speaker": "Ann", "text": "Did you go to the pottery class?", "time": MAY},
            {"speaker": "Bob", "text": "Yes, twice!", "time": MAY},
            {"speaker": "Ann", "text": "Nice. Any plans for the weekend?", "time": MAY},
            {"speaker": "Bob", "text": "Camping by the lake.", "time": MAY},
        ]
        ids = [f"s1:{i}" for i in range(4)]
        assert turns.add_turns("s1", session).turn_ids == ids
        with_ids = [dict(t, turn_id=i) for t, i in zip(session, ids, strict=True)]
        again = turns.add_turns("s1", with_ids)
        assert again.written == 0  # stored values survive the engine's JSON round trip
        # "Yes, twice!" shares no word with the query: only its BM25 text (which
        # holds the previous turn) and the neighbour boost can find it.
        lexical = memory.store.search(turns.namespace, query="pottery", retrieval="lexical")
        assert {h.key for h in lexical} == {"s1:0", "s1:1", "s1:2"}
        hits = turns.search("How often did Bob go to pottery?", top_k=2)
        assert {h.turn_id for h in hits} == {"s1:0", "s1:1"}
        assert all(h.score.fused != 0 and h.score.neighbour > 0 for h in hits)
        # the other tiers keep working on the same store (records without the field)
        alice.semantic.store_fact("alice", "Allergic to shellfish", confidence=0.95)
        assert "shellfish" in alice.search("shellfish allergy")[0].text
        assert memory.export_jsonl("alice", tmp_path / "alice.jsonl") >= 5
        assert memory.forget_user("alice") >= 5
        assert memory.for_user("alice").turns.search("pottery") == []


async def test_async_on_the_embedded_store(tmp_path: Path) -> None:
    memory = TieredMemory.open(tmp_path / "m", embeddings=HashingEmbeddings(), durable_writes=False)
    try:
        turns = memory.for_user("bob").turns
        await turns.aadd_turns("s1", [{"speaker": "Bob", "text": "I ran a marathon", "time": MAY}])
        hits = await turns.asearch("marathon in May 2023")
        assert [h.turn_id for h in hits] == ["s1:0"] and 0 < hits[0].score.total <= 1
    finally:
        await memory.aclose()
