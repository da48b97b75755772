"""The date-phrase reader: English and Japanese phrases → one period, ambiguity → nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cpersona.retrieval.date_phrases import Period, find_in_query, read_phrase

# A Wednesday, so "last week" and "this week" are distinct calendar weeks.
NOW = datetime(2026, 12, 2, 9, 30, tzinfo=UTC)


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("What did I decide last week?", day(2026, 11, 23), day(2026, 11, 30)),
        ("the meeting yesterday", day(2026, 12, 1), day(2026, 12, 2)),
        ("what happened today", day(2026, 12, 2), day(2026, 12, 3)),
        ("the day before yesterday we met", day(2026, 11, 30), day(2026, 12, 1)),
        ("plans for this week", day(2026, 11, 30), day(2026, 12, 7)),
        ("Where did we travel in May 2023?", day(2023, 5, 1), day(2023, 6, 1)),
        ("On 8 May, 2023 Caroline went", day(2023, 5, 8), day(2023, 5, 9)),
        ("on May 8th, 2023", day(2023, 5, 8), day(2023, 5, 9)),
        ("What did Melanie paint in 2022?", day(2022, 1, 1), day(2023, 1, 1)),
        ("the 2023-05-08 release", day(2023, 5, 8), day(2023, 5, 9)),
        ("last month's invoice", day(2026, 11, 1), day(2026, 12, 1)),
        ("last year", day(2025, 1, 1), day(2026, 1, 1)),
        ("3 days ago", day(2026, 11, 29), day(2026, 11, 30)),
        ("two weeks ago", day(2026, 11, 16), day(2026, 11, 23)),
        ("先週の会議で決めたこと", day(2026, 11, 23), day(2026, 11, 30)),
        ("昨日の件", day(2026, 12, 1), day(2026, 12, 2)),
        ("一昨日", day(2026, 11, 30), day(2026, 12, 1)),
        ("2023年5月の旅行", day(2023, 5, 1), day(2023, 6, 1)),
        ("２０２３年５月８日に", day(2023, 5, 8), day(2023, 5, 9)),  # full-width digits
        ("2022年", day(2022, 1, 1), day(2023, 1, 1)),
        ("先月の請求", day(2026, 11, 1), day(2026, 12, 1)),
        ("3日前", day(2026, 11, 29), day(2026, 11, 30)),
    ],
)
def test_a_phrase_in_a_query_names_its_period(query: str, start: datetime, end: datetime) -> None:
    found = find_in_query(query, NOW)
    assert found is not None, query
    assert found[0] == Period(start, end)


@pytest.mark.parametrize(
    "query",
    [
        "When did Caroline go to the support group?",  # no date at all
        "in May",  # a month without its year: which May?
        "5月8日",  # the same in Japanese
        "last Friday",  # weekdays are not read
        "error 2023 in the log",  # a bare number is not a year
        "May I ask about the trip?",  # "May" the verb
        "in May 2023 and again last week",  # two different periods: ambiguous
        "on 30 February, 2023",  # not a date
        "What did John do the week before August 3, 2023?",  # the date only anchors the period
        "the puppy she got two weeks before August 11, 2023",
        "everything since May 2023",
        "2023年5月以降の話",  # the same in Japanese
        "",
    ],
)
def test_ambiguous_or_absent_phrases_are_not_read(query: str) -> None:
    assert find_in_query(query, NOW) is None


def test_the_same_period_twice_is_still_one_period() -> None:
    found = find_in_query("in May 2023, yes May 2023", NOW)
    assert found is not None and found[0] == Period(day(2023, 5, 1), day(2023, 6, 1))


def test_relative_phrases_resolve_in_the_callers_time_zone() -> None:
    tokyo = datetime(2026, 12, 2, 1, 0, tzinfo=timezone(timedelta(hours=9)))  # still Dec 1 in UTC
    period = read_phrase("yesterday", tokyo)
    assert period == Period(
        datetime(2026, 11, 30, 15, 0, tzinfo=UTC), datetime(2026, 12, 1, 15, 0, tzinfo=UTC)
    )


def test_a_whole_phrase_reads_or_refuses() -> None:
    assert read_phrase("last week", NOW) == Period(day(2026, 11, 23), day(2026, 11, 30))
    assert read_phrase("2023", NOW) == Period(day(2023, 1, 1), day(2024, 1, 1))
    assert read_phrase("in May 2023", NOW) == Period(day(2023, 5, 1), day(2023, 6, 1))
    assert read_phrase("sometime", NOW) is None
    assert read_phrase("last week at the office", NOW) is None  # a phrase, not a sentence


def test_today_at_the_end_of_time_is_not_a_crash() -> None:
    assert read_phrase("today", datetime.max.replace(tzinfo=UTC)) is None


@given(st.text(max_size=80), st.datetimes(timezones=st.just(UTC)))
def test_the_reader_never_raises_and_answers_a_real_period(text: str, now: datetime) -> None:
    found = find_in_query(text, now)
    if found is not None:
        period, phrase = found
        assert period.start is not None and period.end is not None and period.start < period.end
        assert phrase
