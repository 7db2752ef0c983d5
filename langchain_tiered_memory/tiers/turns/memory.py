"""The conversation-turn tier: every turn of a user's conversations, searchable.

Each turn is stored once under the user's ``turns`` namespace with an embedded text
(:data:`~.models.DENSE_FIELD`), a BM25 text with its session context
(:data:`~.models.LEXICAL_FIELD`, see :mod:`~langchain_tiered_memory.tiers.turns.defaults`),
and its session id and position, so neighbouring turns are found from stored data.
:meth:`ConversationTurns.search` runs one store search for candidates, then applies
the neighbour, session and speaker boosts of :class:`TurnsConfig`.

Examples:
    >>> from datetime import datetime, timezone
    >>> from langgraph.store.memory import InMemoryStore
    >>> from langchain_tiered_memory.testing.fakes import HashingEmbeddings
    >>> store = InMemoryStore(index={"dims": 384, "embed": HashingEmbeddings()})
    >>> turns = ConversationTurns(store, MemoryScope("alice"))
    >>> may8 = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    >>> _ = turns.add_turns("s1", [
    ...     {"speaker": "Ann", "text": "Did you go to the pottery class?", "time": may8},
    ...     {"speaker": "Bob", "text": "Yes, twice! I made a bowl.", "time": may8},
    ... ])
    >>> hit = turns.search("Who made a bowl?", top_k=1)[0]
    >>> hit.turn_id, hit.speaker, hit.session_id
    ('s1:1', 'Bob', 's1')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from langgraph.store.base import BaseStore, GetOp, PutOp, SearchOp

from langchain_tiered_memory.errors import InvalidInputError
from langchain_tiered_memory.text import check_top_k
from langchain_tiered_memory.tiers.common.args import Clock, tier_args
from langchain_tiered_memory.tiers.common.records import (
    Plan,
    StoreOps,
    arun_plan,
    run_plan,
    search_all,
    validate_model,
)
from langchain_tiered_memory.tiers.common.scope import MemoryScope
from langchain_tiered_memory.tiers.turns.enrich import Utterance, index_texts
from langchain_tiered_memory.tiers.turns.models import (
    DENSE_FIELD,
    ConversationTurn,
    StoredTurn,
    TurnHit,
    TurnsConfig,
    TurnScore,
    stored_turn,
    turn_value,
)
from langchain_tiered_memory.tiers.turns.rerank import (
    apply_neighbour_boost,
    apply_session_boost,
    candidate_spread,
)
from langchain_tiered_memory.tiers.turns.speakers import apply_speaker_boost

__all__ = ["AddTurnsResult", "ConversationTurns", "TurnInput"]

TurnInput = ConversationTurn | Mapping[str, Any]
"""A turn to add: a :class:`ConversationTurn` or a dict of its fields."""


@dataclass(frozen=True)
class AddTurnsResult:
    """What :meth:`ConversationTurns.add_turns` did.

    Attributes:
        turn_ids: The ids of the given turns, in the given order.
        written: How many stored turns were written (new or changed turns, and
            later turns of the session whose context changed); 0 when every turn
            was already stored as given.
    """

    turn_ids: list[str]
    written: int


def _validate_turns(turns: Sequence[TurnInput]) -> list[ConversationTurn]:
    if isinstance(turns, (str, bytes, Mapping)) or not isinstance(turns, Sequence):
        raise InvalidInputError(
            f"turns must be a list of turns, got {type(turns).__name__}: pass e.g. "
            "[{'speaker': 'Ann', 'text': 'Hi!', 'time': datetime.now(timezone.utc)}]"
        )
    checked = [validate_model(ConversationTurn, t, f"turn {i}") for i, t in enumerate(turns)]
    seen: set[str] = set()
    for turn in checked:
        if turn.turn_id is not None:
            if turn.turn_id in seen:
                raise InvalidInputError(
                    f"turn_id {turn.turn_id!r} appears twice in one call: turn ids must be "
                    "unique per user; nothing was stored"
                )
            seen.add(turn.turn_id)
    return checked


def _merge(
    session_id: str, existing: list[StoredTurn], new: list[ConversationTurn]
) -> tuple[list[StoredTurn], list[str]]:
    """The session's turns after adding ``new`` (in position order) and the new turns' ids.

    A new turn whose id is stored replaces it in place; others are appended.
    """
    turns = {t.turn_id: t for t in sorted(existing, key=lambda t: t.position)}
    next_position = max((t.position for t in existing), default=-1) + 1
    ids = []
    for turn in new:
        turn_id = turn.turn_id or f"{session_id}:{next_position}"
        old = turns.get(turn_id)
        position = next_position if old is None else old.position
        turns[turn_id] = StoredTurn(
            turn_id, session_id, position, turn.speaker, turn.text, turn.time, turn.caption
        )
        if old is None:
            next_position += 1
        ids.append(turn_id)
    return list(turns.values()), ids


def _neighbours(turns: Mapping[str, StoredTurn]) -> dict[str, list[str]]:
    """Key -> the candidates just before and after it in the same session."""
    at = {(t.session_id, t.position): k for k, t in turns.items()}
    return {
        k: [n for d in (-1, 1) if (n := at.get((t.session_id, t.position + d))) is not None]
        for k, t in turns.items()
    }


class ConversationTurns:
    """Store a user's conversation turns; find the turns that answer a question.

    Candidates come from hybrid search on a ``QdrantMemoryStore`` built with
    ``lexical_fields=[LEXICAL_FIELD]`` (as ``TieredMemory.open`` builds it), from
    dense search on any other ``BaseStore`` with a vector index.

    Args:
        store: Any ``BaseStore`` (give it a vector index for similarity search).
        scope: Whose turns these are.
        config: Indexing and search settings (defaults: the settings measured best on
            LoCoMo, ``benchmarks/locomo.py``).
        clock: Returns "now" (aware); injectable for tests.

    Examples:
        >>> from datetime import datetime, timezone
        >>> from langgraph.store.memory import InMemoryStore
        >>> from langchain_tiered_memory.testing.fakes import HashingEmbeddings
        >>> store = InMemoryStore(index={"dims": 384, "embed": HashingEmbeddings()})
        >>> turns = ConversationTurns(store, MemoryScope("bob"))
        >>> when = datetime(2023, 7, 1, tzinfo=timezone.utc)
        >>> turns.add_turns("s1", [ConversationTurn(speaker="Bob", text="I ran a marathon",
        ...                                          time=when, turn_id="t1")]).written
        1
        >>> turns.add_turns("s1", [ConversationTurn(speaker="Bob", text="I ran a marathon",
        ...                                          time=when, turn_id="t1")]).written
        0
        >>> [h.turn_id for h in turns.search("marathon in July 2023")]
        ['t1']
    """

    def __init__(
        self,
        store: BaseStore,
        scope: MemoryScope,
        *,
        config: TurnsConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._args = tier_args(store, scope, clock)
        self.store: BaseStore = self._args.store
        self.scope: MemoryScope = self._args.scope
        self.config = config or TurnsConfig()
        self.namespace = scope.namespace("turns")

    # -- plans ---------------------------------------------------------------------

    def _add_plan(self, session_id: str, turns: Sequence[TurnInput]) -> Plan[AddTurnsResult]:
        if not isinstance(session_id, str) or not session_id.strip():
            raise InvalidInputError(
                f"session_id is {session_id!r}: pass a non-empty string naming the conversation "
                "sitting, e.g. 'session-1'"
            )
        sid = session_id.strip()
        new = _validate_turns(turns)
        if not new:
            return AddTurnsResult([], 0)
        given = [t.turn_id for t in new if t.turn_id is not None]
        found = (yield StoreOps(tuple(GetOp(self.namespace, i) for i in given))) if given else []
        for item in found:
            if item is not None and item.value.get("session_id") != sid:
                raise InvalidInputError(
                    f"turn_id {item.key!r} is already stored in session "
                    f"{item.value.get('session_id')!r}, not {sid!r}: turn ids must be unique "
                    "per user; nothing was stored"
                )
        stored = yield from search_all(self.namespace, [{"session_id": sid}])
        old_values = {i.key: i.value for i in stored}
        merged, ids = _merge(sid, [stored_turn(v) for v in old_values.values()], new)
        utterances = [Utterance(t.speaker, t.text, t.session_id, t.time, t.caption) for t in merged]
        dense = index_texts(utterances, self.config.dense_enrich)
        lexical = index_texts(utterances, self.config.lexical_enrich)
        puts = []
        for turn, d, lx in zip(merged, dense, lexical, strict=True):
            value = turn_value(turn, d, lx)
            if old_values.get(turn.turn_id) != value:
                puts.append(PutOp(self.namespace, turn.turn_id, value, index=[DENSE_FIELD]))
        if puts:
            yield StoreOps(tuple(puts))
        return AddTurnsResult(ids, len(puts))

    def _search_plan(self, query: str, top_k: int) -> Plan[list[TurnHit]]:
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError(f"query is {query!r}: pass the question to find turns for")
        check_top_k(top_k)
        cfg = self.config
        limit = max(cfg.candidates, top_k)
        (items,) = yield StoreOps((SearchOp(self.namespace, None, limit, 0, query),))
        fused = [(i.key, float(i.score or 0.0)) for i in items]
        turns = {i.key: stored_turn(i.value) for i in items}
        scale = cfg.score_scale()
        scores = {k: TurnScore(fused=s, scale=scale) for k, s in fused}
        centre, unit = candidate_spread([s for _, s in fused])
        if cfg.neighbour_boost:
            near = _neighbours(turns)
            boost = partial(apply_neighbour_boost, neighbours=near, weight=cfg.neighbour_boost)
            fused = _boost(fused, scores, "neighbour", boost, centre)
        if cfg.session_boost:
            sessions = {k: t.session_id for k, t in turns.items()}
            boost = partial(apply_session_boost, sessions=sessions, weight=cfg.session_boost)
            fused = _boost(fused, scores, "session", boost, centre)
        if cfg.speaker_boost:
            speakers = {k: t.speaker for k, t in turns.items()}
            weight = cfg.speaker_boost * unit
            boost = partial(apply_speaker_boost, speakers=speakers, query=query, weight=weight)
            fused = _boost(fused, scores, "speaker", boost)
        return [TurnHit(turns[k], scores[k]) for k, _ in fused[:top_k]]

    # -- public API ----------------------------------------------------------------

    def add_turns(self, session_id: str, turns: Sequence[TurnInput]) -> AddTurnsResult:
        """Store turns of one session, in the order they were said.

        Turns are appended after the session's stored turns; a turn whose ``turn_id``
        is stored replaces it in place, so adding the same turns again writes nothing.
        A later turn whose context (the turns just before it) changed is rewritten.

        Args:
            session_id: The conversation sitting the turns belong to; neighbouring
                turns (for context and the neighbour boost) never cross sessions.
            turns: :class:`ConversationTurn` records or dicts of their fields
                (``speaker``, ``text``, aware ``time``, optional ``caption`` and
                ``turn_id``).

        Returns:
            The turns' ids and how many stored turns were written.

        Raises:
            InvalidInputError: A session id or turn is invalid (empty text, a turn
                id used twice or already stored in another session); nothing was
                stored. A naive ``time`` is taken as UTC.
        """
        return run_plan(self.store, self._add_plan(session_id, turns))

    async def aadd_turns(self, session_id: str, turns: Sequence[TurnInput]) -> AddTurnsResult:
        """Async twin of :meth:`add_turns`."""
        return await arun_plan(self.store, self._add_plan(session_id, turns))

    def search(self, query: str, top_k: int = 10) -> list[TurnHit]:
        """The turns that best answer ``query``, best first, with their score breakdown.

        Args:
            query: The question.
            top_k: How many turns to return.

        Raises:
            InvalidInputError: ``query`` is empty or ``top_k`` is not a positive int.
        """
        return run_plan(self.store, self._search_plan(query, top_k))

    async def asearch(self, query: str, top_k: int = 10) -> list[TurnHit]:
        """Async twin of :meth:`search`."""
        return await arun_plan(self.store, self._search_plan(query, top_k))


def _boost(
    fused: list[tuple[str, float]],
    scores: dict[str, TurnScore],
    part: str,
    boost: Callable[[list[tuple[str, float]]], list[tuple[str, float]]],
    centre: float = 0.0,
) -> list[tuple[str, float]]:
    """Run ``boost`` on the scores less ``centre``; record what it added under ``part``."""
    boosted = [(k, s + centre) for k, s in boost([(k, s - centre) for k, s in fused])]
    prior = dict(fused)
    for key, score in boosted:
        if added := score - prior[key]:
            scores[key] = replace(scores[key], **{part: getattr(scores[key], part) + added})
    return boosted
