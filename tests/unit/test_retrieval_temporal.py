from datetime import date, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from langchain_tiered_memory.tiers.turns.temporal import (
    parse_time_expressions,
    time_match,
)

# Wednesday 16 August 2023, 10:00 UTC.
REF = datetime(2023, 8, 16, 10, 0, tzinfo=timezone.utc)


def spans(text: str, ref: datetime = REF) -> list[tuple[date, date]]:
    return [(r.start.date(), r.end.date()) for r in parse_time_expressions(text, ref)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What did she paint on October 13, 2023?", (date(2023, 10, 13), date(2023, 10, 14))),
        ("What did Gina find on 1 February, 2023?", (date(2023, 2, 1), date(2023, 2, 2))),
        ("on the 3rd of May", (date(2023, 5, 3), date(2023, 5, 4))),
        ("dinner on May 3", (date(2023, 5, 3), date(2023, 5, 4))),
        ("in July 2023", (date(2023, 7, 1), date(2023, 8, 1))),
        ("in December 2022", (date(2022, 12, 1), date(2023, 1, 1))),
        ("in May", (date(2023, 5, 1), date(2023, 6, 1))),
        ("in 2022", (date(2022, 1, 1), date(2023, 1, 1))),
        ("last Saturday", (date(2023, 8, 12), date(2023, 8, 13))),
        ("last Wednesday", (date(2023, 8, 9), date(2023, 8, 10))),
        ("yesterday", (date(2023, 8, 15), date(2023, 8, 16))),
        ("last week", (date(2023, 8, 7), date(2023, 8, 14))),
        ("last weekend", (date(2023, 8, 12), date(2023, 8, 14))),
        ("last month", (date(2023, 7, 1), date(2023, 8, 1))),
        ("last year", (date(2022, 1, 1), date(2023, 1, 1))),
        ("three days ago", (date(2023, 8, 13), date(2023, 8, 14))),
        ("two weeks ago", (date(2023, 7, 30), date(2023, 8, 6))),
        ("4 years ago", (date(2019, 1, 1), date(2020, 1, 1))),
    ],
)
def test_expressions_resolve_against_the_reference_date(
    text: str, expected: tuple[date, date]
) -> None:
    assert spans(text) == [expected]


def test_a_month_later_than_the_reference_means_last_year() -> None:
    assert spans("in December") == [(date(2022, 12, 1), date(2023, 1, 1))]
    assert spans("on December 24") == [(date(2022, 12, 24), date(2022, 12, 25))]


def test_last_month_in_january_wraps_to_december() -> None:
    assert spans("last month", datetime(2024, 1, 5)) == [(date(2023, 12, 1), date(2024, 1, 1))]


def test_text_without_time_and_impossible_dates_give_nothing() -> None:
    assert spans("What is Caroline's favourite book?") == []
    # An impossible day falls back to the year it names.
    assert spans("on February 30, 2023") == [(date(2023, 1, 1), date(2024, 1, 1))]
    assert spans("meet at 10:30") == []


def test_several_expressions_come_back_in_text_order() -> None:
    got = spans("between May 2022 and last Saturday")
    assert got == [(date(2022, 5, 1), date(2022, 6, 1)), (date(2023, 8, 12), date(2023, 8, 13))]


def test_naive_reference_is_taken_as_utc() -> None:
    assert spans("yesterday", datetime(2023, 8, 16)) == spans("yesterday")


def test_time_match_is_one_inside_and_fades_over_the_slack() -> None:
    ranges = parse_time_expressions("in May 2023", REF)
    slack = timedelta(days=10)
    assert time_match(datetime(2023, 5, 20), ranges, slack=slack) == 1.0
    assert time_match(datetime(2023, 6, 6), ranges, slack=slack) == pytest.approx(0.5)
    assert time_match(datetime(2023, 4, 26), ranges, slack=slack) == pytest.approx(0.5)
    assert time_match(datetime(2023, 7, 1), ranges, slack=slack) == 0.0
    assert time_match(datetime(2023, 6, 6), ranges, slack=timedelta(0)) == 0.0
    assert time_match(datetime(2023, 5, 20), [], slack=slack) == 0.0


@given(st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2090, 1, 1)))
def test_relative_expressions_never_point_after_the_reference_day(ref: datetime) -> None:
    for text in ("yesterday", "last Monday", "last week", "last month", "last year", "2 days ago"):
        for r in parse_time_expressions(text, ref):
            assert r.start < r.end
            assert r.end.date() <= ref.date()
