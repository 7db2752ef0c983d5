"""Query-side time expressions: "last Saturday", "in May", "two weeks ago" -> date ranges.

:func:`parse_time_expressions` resolves the times a query names against a reference
date into half-open UTC ranges; :func:`time_match` scores a timestamp against them
(1 inside, fading to 0 over a slack period outside), for a boost on top of the
retrieval score.

Examples:
    >>> from datetime import datetime, timezone
    >>> ref = datetime(2023, 8, 16, tzinfo=timezone.utc)  # a Wednesday
    >>> [(r.start.date().isoformat(), r.end.date().isoformat())
    ...  for r in parse_time_expressions("what did we do last Saturday?", ref)]
    [('2023-08-12', '2023-08-13')]
    >>> [r.start.date().isoformat() for r in parse_time_expressions("in May", ref)]
    ['2023-05-01']
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from langchain_tiered_memory.types import ensure_aware

__all__ = [
    "TimeRange",
    "parse_time_expressions",
    "time_match",
]

_MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
_MONTHS |= {m.lower(): i for i, m in enumerate(calendar.month_abbr) if m}
_MONTHS["sept"] = 9
_WEEKDAYS = {d.lower(): i for i, d in enumerate(calendar.day_name)}
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2,
    "few": 3, "a few": 3, "several": 3,
}  # fmt: skip

_MON = r"(?P<mon>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_WD = r"(?P<wd>" + "|".join(_WEEKDAYS) + r")"
_NUM = r"(?P<num>\d+|" + "|".join(sorted(_NUMBERS, key=len, reverse=True)) + r")"
_UNIT = r"(?P<unit>day|week|month|year)s?"
_PREP = r"(?:(?:in|on|during|since|by|of)\s+)?"


@dataclass(frozen=True)
class TimeRange:
    """A half-open span of time ``[start, end)`` named in a text.

    Attributes:
        start: First instant inside the range (aware, UTC).
        end: First instant after the range.
        text: The words that named it.
    """

    start: datetime
    end: datetime
    text: str


def _day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=timezone.utc)


def _add_months(when: datetime, months: int) -> datetime:
    total = when.year * 12 + when.month - 1 + months
    y, m = divmod(total, 12)
    return when.replace(year=y, month=m + 1, day=min(when.day, calendar.monthrange(y, m + 1)[1]))


def _month_range(y: int, m: int) -> tuple[datetime, datetime]:
    start = _day(y, m, 1)
    return start, _add_months(start, 1)


def _num(raw: str) -> int:
    return int(raw) if raw.isdigit() else _NUMBERS[raw.lower()]


Resolver = Callable[[re.Match[str], datetime], "tuple[datetime, datetime] | None"]


def _exact_day(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime] | None:
    given = m.groupdict().get("year")
    year = int(given) if given else ref.year
    month, day = _MONTHS[m["mon"].lower()], int(m["day"])
    if not 1 <= day <= calendar.monthrange(year, month)[1]:
        return None
    start = _day(year, month, day)
    if not given and start > ref:  # "May 3" without a year: the most recent one
        if month == 2 and day == 29:
            return None
        start = start.replace(year=year - 1)
    return start, start + timedelta(days=1)


def _month_year(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime]:
    return _month_range(int(m["year"]), _MONTHS[m["mon"].lower()])


def _month_only(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime]:
    month = _MONTHS[m["mon"].lower()]
    year = ref.year if month <= ref.month else ref.year - 1  # the most recent such month
    return _month_range(year, month)


def _year_only(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime]:
    y = int(m["year"])
    return _day(y, 1, 1), _day(y + 1, 1, 1)


def _today(ref: datetime) -> datetime:
    return _day(ref.year, ref.month, ref.day)


def _relative_word(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime]:
    word = m["word"].lower()
    today = _today(ref)
    week = today - timedelta(days=today.weekday())  # Monday of this week
    this_month = _month_range(ref.year, ref.month)
    spans = {
        "today": (today, today + timedelta(days=1)),
        "tonight": (today, today + timedelta(days=1)),
        "yesterday": (today - timedelta(days=1), today),
        "last night": (today - timedelta(days=1), today + timedelta(hours=6)),
        "this week": (week, week + timedelta(days=7)),
        "last week": (week - timedelta(days=7), week),
        "this weekend": (week + timedelta(days=5), week + timedelta(days=7)),
        "last weekend": (week - timedelta(days=2), week),
        "this month": this_month,
        "last month": (_add_months(this_month[0], -1), this_month[0]),
        "this year": (_day(ref.year, 1, 1), _day(ref.year + 1, 1, 1)),
        "last year": (_day(ref.year - 1, 1, 1), _day(ref.year, 1, 1)),
        "recently": (today - timedelta(days=30), today + timedelta(days=1)),
        "lately": (today - timedelta(days=30), today + timedelta(days=1)),
    }
    return spans[word]


def _last_weekday(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime]:
    target = _WEEKDAYS[m["wd"].lower()]
    today = _today(ref)
    back = (today.weekday() - target) % 7 or 7  # strictly before today
    start = today - timedelta(days=back)
    return start, start + timedelta(days=1)


def _ago(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime]:
    n, unit = _num(m["num"]), m["unit"].lower()
    today = _today(ref)
    if unit == "day":
        start = today - timedelta(days=n)
        return start, start + timedelta(days=1)
    if unit == "week":
        start = today - timedelta(days=7 * n + 3)
        return start, start + timedelta(days=7)
    if unit == "month":
        center = _add_months(today, -n)
        return center - timedelta(days=15), center + timedelta(days=16)
    return _day(ref.year - n, 1, 1), _day(ref.year - n + 1, 1, 1)


# Most specific first: a span claimed by one pattern is not matched again by a later one.
_PATTERNS: list[tuple[re.Pattern[str], Resolver]] = [
    (re.compile(rf"\b{_PREP}{_MON}\s+{_DAY},?\s+{_YEAR}\b", re.I), _exact_day),
    (re.compile(rf"\b{_PREP}{_DAY}\s+(?:of\s+)?{_MON},?\s+{_YEAR}\b", re.I), _exact_day),
    (re.compile(rf"\b(?:on\s+)?{_MON}\s+{_DAY}(?!\d)(?!,?\s*(?:19|20)\d\d)\b", re.I), _exact_day),
    (
        re.compile(rf"\b(?:on\s+)?(?:the\s+)?{_DAY}\s+(?:of\s+)?{_MON}\b(?!,?\s*\d)", re.I),
        _exact_day,
    ),
    (re.compile(rf"\b{_PREP}{_MON},?\s+(?:of\s+)?{_YEAR}\b", re.I), _month_year),
    (re.compile(rf"\b(?:in|during|since|by|this|last)\s+{_MON}\b(?!\s*\d)", re.I), _month_only),
    (re.compile(rf"\b(?:in|during|of|since)\s+{_YEAR}\b", re.I), _year_only),
    (re.compile(rf"\b{_NUM}\s+{_UNIT}\s+ago\b", re.I), _ago),
    (re.compile(rf"\b(?:last|this past|past)\s+{_WD}\b", re.I), _last_weekday),
    (
        re.compile(
            r"\b(?P<word>today|tonight|yesterday|last night|this week|last week|this weekend|"
            r"last weekend|this month|last month|this year|last year|recently|lately)\b",
            re.I,
        ),
        _relative_word,
    ),
    (re.compile(rf"(?<![\d:/-]){_YEAR}(?![\d:/-])", re.I), _year_only),
]


def _matches(text: str, reference: datetime) -> list[tuple[int, int, TimeRange]]:
    ref = ensure_aware(reference).astimezone(timezone.utc)
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, int, TimeRange]] = []
    for pattern, resolve in _PATTERNS:
        for m in pattern.finditer(text):
            s, e = m.span()
            if any(s < te and ts < e for ts, te in taken):
                continue
            span = resolve(m, ref)
            if span is None:
                continue
            taken.append((s, e))
            found.append((s, e, TimeRange(span[0], span[1], m.group(0).strip())))
    found.sort(key=lambda f: f[0])
    return found


def parse_time_expressions(text: str, reference: datetime) -> list[TimeRange]:
    """Find time expressions in ``text`` and resolve them against ``reference``.

    Understood: full dates ("October 13, 2023", "1 February, 2023"), day and month
    ("May 3", "the 3rd of May"), month and year ("July 2023"), a bare month after
    "in/during/last" (the most recent such month), a year ("in 2022"), "N days/weeks/
    months/years ago" (digits or words), "last <weekday>" (the most recent one before
    the reference day), and today, yesterday, last night, this/last week, weekend,
    month, year, recently.

    Args:
        text: A query.
        reference: The "now" that relative expressions count from (naive = UTC).

    Returns:
        The ranges in text order; empty when the text names no time.
    """
    return [r for _, _, r in _matches(text, reference)]


def time_match(when: datetime, ranges: Sequence[TimeRange], *, slack: timedelta) -> float:
    """Score how well a timestamp fits the ranges: 1 inside, linear fade to 0 over ``slack``.

    Args:
        when: The memory's timestamp (naive = UTC).
        ranges: From :func:`parse_time_expressions`; empty ranges score 0.
        slack: How far outside a range a timestamp still earns partial credit (memories
            are often written a little after the event they describe).

    Returns:
        The best score over the ranges, in [0, 1].

    Examples:
        >>> from datetime import datetime, timedelta
        >>> r = parse_time_expressions("in May 2023", datetime(2024, 1, 1))
        >>> time_match(datetime(2023, 5, 20), r, slack=timedelta(days=10))
        1.0
        >>> time_match(datetime(2023, 6, 6), r, slack=timedelta(days=10))
        0.5
    """
    t = ensure_aware(when)
    best = 0.0
    slack_s = slack.total_seconds()
    for r in ranges:
        if r.start <= t < r.end:
            return 1.0
        gap = (r.start - t) if t < r.start else (t - r.end)
        if slack_s > 0:
            best = max(best, 1.0 - gap.total_seconds() / slack_s)
    return max(best, 0.0)
