"""Records of the conversation-turn tier: a turn as given, as stored, as found; its settings.

Examples:
    >>> from datetime import datetime, timezone
    >>> turn = ConversationTurn(speaker="Ann", text="I adopted a cat!",
    ...                         time=datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc))
    >>> turn.speaker, turn.turn_id is None
    ('Ann', True)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.tiers.common.records import to_epoch
from langchain_tiered_memory.tiers.common.scope import MAX_ID_LENGTH
from langchain_tiered_memory.tiers.turns.defaults import (
    DEFAULT_CANDIDATES,
    DEFAULT_DENSE_ENRICH,
    DEFAULT_LEXICAL_ENRICH,
    DEFAULT_NEIGHBOUR_BOOST,
    DEFAULT_SESSION_BOOST,
    DEFAULT_SPEAKER_BOOST,
)
from langchain_tiered_memory.tiers.turns.enrich import EnrichConfig
from langchain_tiered_memory.types import aware_field

__all__ = [
    "DENSE_FIELD",
    "LEXICAL_FIELD",
    "TURN_TYPE",
    "ConversationTurn",
    "StoredTurn",
    "TurnHit",
    "TurnScore",
    "TurnsConfig",
    "stored_turn",
    "turn_value",
]

TURN_TYPE = "conversation_turn"
"""The ``type`` of a stored turn."""

DENSE_FIELD = "turn_dense_text"
"""Value field of a stored turn that the store embeds (``[date] speaker: text``)."""

LEXICAL_FIELD = "turn_lexical_text"
"""Value field of a stored turn that a store with ``lexical_fields`` BM25-indexes
(previous turns, date, speaker, caption, the turn twice). ``TieredMemory.open``
builds its store with ``lexical_fields=[LEXICAL_FIELD]``; records without it
(episodes, facts, ...) keep their embedded text as BM25 text."""

MAX_SPREAD = 0.5
"""The largest spread of candidate scores in ``[0, 1]``: a population standard deviation
is at most half the range, so the speaker boost adds at most half its weight."""


class ConversationTurn(BaseModel):
    """One turn of a conversation, as given to :meth:`ConversationTurns.add_turns`.

    Attributes:
        speaker: Who said it (a name, or e.g. ``"user"``); non-blank.
        text: What was said; non-blank.
        time: When it was said; a naive datetime is taken as UTC (see
            :func:`~langchain_tiered_memory.types.ensure_aware`).
        caption: A description of an image shared with the turn, if any.
        turn_id: Stable id of the turn (unique per user); adding a turn with an id
            that is already stored replaces it. None: ``"<session_id>:<position>"``.

    Examples:
        >>> from datetime import datetime, timezone
        >>> ConversationTurn(speaker="Bob", text="Yes, twice!", turn_id="t2",
        ...                  time=datetime(2023, 5, 8, tzinfo=timezone.utc)).turn_id
        't2'
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    speaker: str
    text: str
    time: datetime
    caption: str | None = None
    turn_id: str | None = None

    @field_validator("speaker", "text")
    @classmethod
    def _non_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty or blank")
        return value.strip()

    _aware = field_validator("time")(aware_field)  # naive times are UTC, as everywhere

    @field_validator("caption")
    @classmethod
    def _caption(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None

    @field_validator("turn_id")
    @classmethod
    def _turn_id(cls, value: str | None) -> str | None:
        cleaned = None if value is None else value.strip()
        if cleaned == "":
            raise ValueError(f"turn_id is {value!r}: pass a non-empty string")
        if cleaned is not None and len(cleaned) > MAX_ID_LENGTH:
            raise ValueError(
                f"turn_id is {len(cleaned)} characters long: use at most {MAX_ID_LENGTH}"
            )
        return cleaned


@dataclass(frozen=True)
class TurnsConfig:
    """How turns are indexed and how their search re-scores the store's candidates.

    Attributes:
        lexical_enrich: BM25 text of a turn (stored in :data:`LEXICAL_FIELD`).
        dense_enrich: Embedded text of a turn (stored in :data:`DENSE_FIELD`).
        candidates: How many hits one store search fetches before re-scoring.
        neighbour_boost: Weight of
            :func:`~langchain_tiered_memory.tiers.turns.rerank.apply_neighbour_boost` over the
            previous and next turn of the same session; 0 turns it off.
        session_boost: Weight of
            :func:`~langchain_tiered_memory.tiers.turns.rerank.apply_session_boost`: each turn
            gains this share of the best score among the other candidates of its
            session; 0 turns it off.
        speaker_boost: Added to the score of turns whose speaker the query names
            (:func:`~langchain_tiered_memory.tiers.turns.speakers.apply_speaker_boost`); 0 turns
            it off.

    Examples:
        >>> TurnsConfig().candidates
        100
    """

    lexical_enrich: EnrichConfig = DEFAULT_LEXICAL_ENRICH
    dense_enrich: EnrichConfig = DEFAULT_DENSE_ENRICH
    candidates: int = DEFAULT_CANDIDATES
    neighbour_boost: float = DEFAULT_NEIGHBOUR_BOOST
    session_boost: float = DEFAULT_SESSION_BOOST
    speaker_boost: float = DEFAULT_SPEAKER_BOOST

    def score_scale(self) -> float:
        """1 plus each boost's largest share: a turn's total divided by it stays in ``[0, 1]``.

        At most: the store's score 1, the neighbour boost its weight, the session boost its
        weight times ``1 + neighbour_boost``, the speaker boost its weight times the
        candidates' spread (at most 1/2).

        Example:
            >>> TurnsConfig(neighbour_boost=0.5, session_boost=0.0, speaker_boost=0.5).score_scale()
            1.75
        """
        session = self.session_boost * (1.0 + self.neighbour_boost)
        return 1.0 + self.neighbour_boost + session + MAX_SPREAD * self.speaker_boost

    def __post_init__(self) -> None:
        for name in ("lexical_enrich", "dense_enrich"):
            if not isinstance(getattr(self, name), EnrichConfig):
                raise ConfigurationError(
                    f"{name} must be an EnrichConfig, got {type(getattr(self, name)).__name__}"
                )
        if isinstance(self.candidates, bool) or not isinstance(self.candidates, int):
            raise ConfigurationError(f"candidates must be an int, got {self.candidates!r}")
        if not 1 <= self.candidates <= 1000:
            raise ConfigurationError(
                f"candidates is {self.candidates}: use 1 to 1000 (100 is the tuned default)"
            )
        for name in ("neighbour_boost", "session_boost", "speaker_boost"):
            weight = getattr(self, name)
            if not 0 <= weight < float("inf"):
                raise ConfigurationError(f"{name} must be finite and >= 0, got {weight!r}")


@dataclass(frozen=True)
class StoredTurn:
    """A stored turn.

    Attributes:
        turn_id: The turn's id (the store key).
        session_id: The session it belongs to.
        position: Its place in the session (0, 1, ...); neighbours differ by one.
        speaker: Who said it.
        text: What was said.
        time: When it was said (aware).
        caption: The shared image's caption, if any.
    """

    turn_id: str
    session_id: str
    position: int
    speaker: str
    text: str
    time: datetime
    caption: str | None = None


@dataclass(frozen=True)
class TurnScore:
    """Why a turn ranked where it did: the store's score plus each boost.

    Attributes:
        fused: The store's score (fused dense + BM25 on a hybrid store, cosine on a
            dense-only one).
        neighbour: Added by the neighbouring-turn boost.
        session: Added by the same-session boost.
        speaker: Added by the speaker boost.
        scale: The largest sum the search's settings allow (1 plus every boost's
            largest share, see :meth:`TurnsConfig.score_scale`); :attr:`total` is
            divided by it.
    """

    fused: float
    neighbour: float = 0.0
    session: float = 0.0
    speaker: float = 0.0
    scale: float = 1.0

    @property
    def total(self) -> float:
        """The score the turns are ranked by, in ``[0, 1]`` like the store's scores."""
        return (self.fused + self.neighbour + self.session + self.speaker) / self.scale


@dataclass(frozen=True)
class TurnHit:
    """A turn found by :meth:`ConversationTurns.search`, and its score breakdown."""

    turn: StoredTurn
    score: TurnScore

    @property
    def turn_id(self) -> str:
        """The turn's id."""
        return self.turn.turn_id

    @property
    def text(self) -> str:
        """What was said."""
        return self.turn.text

    @property
    def speaker(self) -> str:
        """Who said it."""
        return self.turn.speaker

    @property
    def time(self) -> datetime:
        """When it was said."""
        return self.turn.time

    @property
    def session_id(self) -> str:
        """The session it belongs to."""
        return self.turn.session_id


def turn_value(turn: StoredTurn, dense: str, lexical: str) -> dict[str, Any]:
    """The stored value of a turn, with its embedded and BM25 texts."""
    value = asdict(turn) | {"time": turn.time.isoformat(), "ts": to_epoch(turn.time)}
    return {"type": TURN_TYPE, **value, DENSE_FIELD: dense, LEXICAL_FIELD: lexical}


def stored_turn(value: dict[str, Any]) -> StoredTurn:
    """Rebuild a :class:`StoredTurn` from its stored value."""
    return StoredTurn(
        turn_id=str(value["turn_id"]),
        session_id=str(value["session_id"]),
        position=int(value["position"]),
        speaker=str(value["speaker"]),
        text=str(value["text"]),
        time=datetime.fromisoformat(value["time"]),
        caption=value.get("caption"),
    )
