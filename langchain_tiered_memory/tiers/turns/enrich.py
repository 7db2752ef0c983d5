r"""Index-side text: what gets embedded and keyword-indexed for a conversation turn.

A turn alone ("Yes, twice!") often cannot be found: its topic lives in the turn before
it. :func:`index_texts` writes each turn's index text (speaker, text, image caption,
optionally its date, and the turns just before it in the session); the stored memory
keeps the plain turn.

Examples:
    >>> from datetime import datetime
    >>> from langchain_tiered_memory.tiers.turns.enrich import EnrichConfig, Utterance, index_texts
    >>> turns = [
    ...     Utterance("Ann", "Did you go to the pottery class?", session="s1"),
    ...     Utterance("Bob", "Yes, twice!", session="s1", date=datetime(2023, 5, 8)),
    ... ]
    >>> index_texts(turns, EnrichConfig(context_before=1, include_date=True))[1]
    'Ann: Did you go to the pottery class?\n[8 May 2023] Bob: Yes, twice!'
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from datetime import datetime

from langchain_tiered_memory.errors import ConfigurationError

__all__ = ["EnrichConfig", "Utterance", "format_date", "format_utterance", "index_texts"]


@dataclass(frozen=True)
class Utterance:
    """One turn of a conversation, as the enricher sees it.

    Attributes:
        speaker: Who said it ("" when unknown).
        text: What was said.
        session: Turns with equal ``session`` belong to one conversation sitting;
            context never crosses sessions. None puts every turn in one session.
        date: When it was said (used when ``EnrichConfig.include_date``).
        caption: A description of an image shared with the turn, if any.
    """

    speaker: str
    text: str
    session: Hashable | None = None
    date: datetime | None = None
    caption: str | None = None


@dataclass(frozen=True)
class EnrichConfig:
    """What goes into a turn's index text.

    Attributes:
        include_speaker: Prefix ``"speaker: "``.
        include_caption: Append ``" [shares a photo of <caption>]"``.
        include_date: Prefix the turn's date as ``"[8 May 2023] "``; helps keyword
            search on dated questions ("in May 2023").
        include_time: Write the time of day too (``"[1:56 pm on 8 May, 2023] "``).
        context_before: How many earlier turns of the same session to prepend.
        context_after: How many later turns of the same session to append.
        turn_weight: How many times the turn itself is written (2 doubles its terms
            against the context's, like a field boost in BM25F).
        separator: Between the context turns and the turn.

    Examples:
        >>> EnrichConfig().context_before
        2
    """

    include_speaker: bool = True
    include_caption: bool = True
    include_date: bool = True
    include_time: bool = False
    context_before: int = 2
    context_after: int = 0
    turn_weight: int = 1
    separator: str = "\n"

    def __post_init__(self) -> None:
        if self.turn_weight < 1:
            raise ConfigurationError(f"turn_weight must be >= 1, got {self.turn_weight}")
        if self.context_before < 0 or self.context_after < 0:
            raise ConfigurationError(
                "context_before and context_after count neighbouring turns and must be >= 0, "
                f"got {self.context_before} and {self.context_after}"
            )


def format_date(when: datetime, *, with_time: bool = False) -> str:
    """A date in words, so keyword search matches month names and years.

    Examples:
        >>> format_date(datetime(2023, 5, 8, 13, 56))
        '8 May 2023'
        >>> format_date(datetime(2023, 5, 8, 13, 56), with_time=True)
        '1:56 pm on 8 May, 2023'
    """
    if not with_time:
        return f"{when.day} {when:%B %Y}"
    hour = when.hour % 12 or 12
    return f"{hour}:{when:%M} {'am' if when.hour < 12 else 'pm'} on {when.day} {when:%B, %Y}"


def format_utterance(turn: Utterance, config: EnrichConfig, *, with_date: bool = False) -> str:
    """The text of one turn: ``[date] speaker: text [shares a photo of caption]``."""
    text = turn.text.strip()
    if config.include_speaker and turn.speaker:
        text = f"{turn.speaker}: {text}"
    if config.include_caption and turn.caption:
        text = f"{text} [shares a photo of {turn.caption.strip()}]"
    if with_date and turn.date is not None:
        text = f"[{format_date(turn.date, with_time=config.include_time)}] {text}"
    return text


def index_texts(turns: Sequence[Utterance], config: EnrichConfig | None = None) -> list[str]:
    """The index text of every turn, in order.

    Args:
        turns: A conversation's turns in the order they were said.
        config: What to include; defaults to :class:`EnrichConfig` ().

    Returns:
        One string per turn. The turn itself carries the date (if enabled); context
        turns are added plain, so the date appears once.
    """
    cfg = config or EnrichConfig()
    plain = [format_utterance(t, cfg) for t in turns]

    def context(i: int, span: range) -> list[str]:
        return [plain[j] for j in span if turns[j].session == turns[i].session]

    out = []
    for i, turn in enumerate(turns):
        before = context(i, range(max(0, i - cfg.context_before), i))
        after = context(i, range(i + 1, min(len(turns), i + 1 + cfg.context_after)))
        own = format_utterance(turn, cfg, with_date=cfg.include_date)
        repeats = [plain[i]] * (cfg.turn_weight - 1)
        out.append(cfg.separator.join([*before, own, *repeats, *after]))
    return out
