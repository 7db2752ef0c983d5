from datetime import datetime

import pytest

from langchain_tiered_memory.errors import ConfigurationError
from langchain_tiered_memory.tiers.turns.enrich import (
    EnrichConfig,
    Utterance,
    format_date,
    index_texts,
)

D1 = datetime(2023, 5, 8, 13, 56)
D2 = datetime(2023, 6, 1, 9, 5)
TURNS = [
    Utterance("Ann", "Did you go to the pottery class?", "s1", D1),
    Utterance("Bob", "Yes, twice!", "s1", D1, caption="a clay bowl"),
    Utterance("Ann", "Nice.", "s1", D1),
    Utterance("Bob", "New session here.", "s2", D2),
]


def test_context_comes_from_earlier_turns_of_the_same_session_only() -> None:
    texts = index_texts(TURNS, EnrichConfig(context_before=2, include_date=False))
    assert texts[1] == (
        "Ann: Did you go to the pottery class?\nBob: Yes, twice! [shares a photo of a clay bowl]"
    )
    assert texts[3] == "Bob: New session here."  # no context across sessions
    assert texts[2].count("\n") == 2


def test_the_date_is_written_once_on_the_turn_itself() -> None:
    texts = index_texts(TURNS, EnrichConfig(context_before=1))
    assert texts[1].startswith("Ann: Did you go")
    assert "[8 May 2023] Bob: Yes, twice!" in texts[1]
    assert texts[1].count("2023") == 1


def test_with_time_matches_the_conversational_date_format() -> None:
    assert format_date(D1, with_time=True) == "1:56 pm on 8 May, 2023"
    assert format_date(D2, with_time=True) == "9:05 am on 1 June, 2023"
    assert format_date(datetime(2023, 1, 2, 0, 7), with_time=True) == "12:07 am on 2 January, 2023"


def test_switches_drop_speaker_caption_and_date() -> None:
    cfg = EnrichConfig(
        context_before=0, include_speaker=False, include_caption=False, include_date=False
    )
    assert index_texts(TURNS, cfg)[1] == "Yes, twice!"


def test_turn_weight_repeats_the_turn_and_context_after_appends() -> None:
    cfg = EnrichConfig(context_before=0, context_after=1, include_date=False, turn_weight=2)
    assert index_texts(TURNS, cfg)[0].split("\n") == [
        "Ann: Did you go to the pottery class?",
        "Ann: Did you go to the pottery class?",
        "Bob: Yes, twice! [shares a photo of a clay bowl]",
    ]


def test_turns_without_session_share_one_session() -> None:
    turns = [Utterance("A", "one"), Utterance("B", "two")]
    assert index_texts(turns, EnrichConfig(include_date=False)) == ["A: one", "A: one\nB: two"]


def test_bad_config_is_rejected() -> None:
    with pytest.raises(ConfigurationError, match="context_before"):
        EnrichConfig(context_before=-1)
    with pytest.raises(ConfigurationError, match="turn_weight"):
        EnrichConfig(turn_weight=0)
