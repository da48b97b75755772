"""recall's time_cue: validation (bad input is InvalidInput, never a crash) and the boost formula."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cpersona.errors import InvalidInput
from cpersona.retrieval import time_cue
from cpersona.retrieval.date_phrases import Period

NOW = datetime(2026, 12, 2, 9, 30, tzinfo=UTC)


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


def test_dates_months_and_years_cover_whole_days() -> None:
    cue = time_cue.parse({"start": "2023-05-01", "end": "2023-05-31", "certainty": "sure"}, NOW)
    assert cue is not None and cue.filters
    assert cue.period == Period(day(2023, 5, 1), day(2023, 6, 1))
    month = time_cue.parse({"start": "2023-12", "end": "2023-12"}, NOW)
    assert month is not None and month.period == Period(day(2023, 12, 1), day(2024, 1, 1))
    assert month.certainty == "likely"  # the default: a boost, never a filter
    year = time_cue.parse({"end": "2023"}, NOW)
    assert year is not None and year.period == Period(None, day(2024, 1, 1))


def test_an_instant_end_is_included() -> None:
    cue = time_cue.parse({"start": "2023-05-08T10:00:00Z", "end": "2023-05-08T10:00:00Z"}, NOW)
    assert cue is not None and cue.period.contains(day(2023, 5, 8) + timedelta(hours=10))


def test_a_phrase_resolves_against_the_given_now() -> None:
    cue = time_cue.parse(
        {"phrase": "yesterday", "now": "2024-03-10T08:00:00+09:00", "certainty": "vague"}, NOW
    )
    assert cue is not None and cue.certainty == "vague"
    assert cue.period == Period(datetime(2024, 3, 8, 15, tzinfo=UTC), datetime(2024, 3, 9, 15, tzinfo=UTC))
    assert time_cue.parse({"phrase": "先週"}, NOW) is not None
    assert time_cue.parse(None, NOW) is None


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ({"start": "2023-05-01", "certainty": "certain"}, "certainty"),
        ({"start": "2023-05-01", "certainty": 1}, "certainty"),
        ({"start": "2023-06-01", "end": "2023-05-01"}, "after"),
        ({"phrase": "when the moon was blue"}, "not a date phrase"),
        ({"phrase": 7}, "phrase must be a string"),
        ({"phrase": "last week", "start": "2023-01-01"}, "either"),
        ({}, "needs a period"),
        ({"certainty": "sure"}, "needs a period"),
        ({"start": "yesterday-ish"}, "ISO-8601"),
        ({"start": True}, "boolean"),
        ({"start": [2023]}, "ISO-8601"),
        ({"end": "9999-12-31"}, "out of range"),
        ({"start": "2020", "end": "9999"}, "out of range"),  # issue 36 point 3: the end is year 10000
        ({"end": "9999-12"}, "out of range"),
        ({"start": -(10**12)}, "out of range"),  # before year 1
        ({"phrase": "today", "now": 2**40}, "out of range"),  # after year 9999
        ({"start": 10**20}, "out of range"),
        ({"phrase": "today", "now": "soon"}, "now"),
        ({"phrase": "today", "now": False}, "now"),
        ({"start": "2023", "when": "x"}, "unknown field"),
        ("last week", "must be an object"),
        (["2023"], "must be an object"),
    ],
)
def test_bad_cues_are_invalid_input_with_a_clear_message(value: Any, words: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        time_cue.parse(value, NOW)
    assert caught.value.code == "invalid_input"
    assert words in str(caught.value)


def test_the_boost_is_highest_inside_and_fades_with_distance() -> None:
    cue = time_cue.TimeCue(Period(day(2023, 5, 8), day(2023, 5, 9)), "likely")
    inside = cue.factor(day(2023, 5, 8) + timedelta(hours=13))
    near = cue.factor(day(2023, 5, 10))
    far = cue.factor(day(2023, 6, 30))
    assert inside == pytest.approx(1 + time_cue.WEIGHT["likely"])
    assert inside > near > far == 1.0
    assert near == pytest.approx(1 + time_cue.WEIGHT["likely"] * math.exp(-1.0))
    # A filter cue never changes a score; nor does an unknown time.
    sure = time_cue.TimeCue(cue.period, "sure")
    assert sure.factor(day(2023, 5, 8)) == 1.0 and cue.factor(None) == 1.0


def test_vague_is_milder_and_wider_than_likely() -> None:
    period = Period(day(2023, 5, 8), day(2023, 5, 9))
    likely, vague = time_cue.TimeCue(period, "likely"), time_cue.TimeCue(period, "vague")
    assert vague.factor(day(2023, 5, 8)) < likely.factor(day(2023, 5, 8))
    assert vague.factor(day(2023, 5, 20)) > likely.factor(day(2023, 5, 20))


@given(
    certainty=st.sampled_from(["likely", "vague"]),
    start=st.datetimes(
        min_value=datetime(1990, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
    ),
    hours=st.floats(0, 24 * 400),
    moment=st.datetimes(
        min_value=datetime(1980, 1, 1), max_value=datetime(2110, 1, 1), timezones=st.just(UTC)
    ),
)
def test_a_boost_never_lowers_a_score_and_is_bounded(
    certainty: str, start: datetime, hours: float, moment: datetime
) -> None:
    cue = time_cue.TimeCue(Period(start, start + timedelta(hours=hours)), certainty)
    assert 1.0 <= cue.factor(moment) <= 1.0 + time_cue.WEIGHT[certainty]


def test_unix_seconds_before_year_1000_are_ordinary_bounds() -> None:
    # They used to come back from normalise_timestamp as "417-04-…", which parse_ts then refused.
    cue = time_cue.parse({"start": -49e9, "end": -40e9, "now": -49e9, "certainty": "sure"}, NOW)
    assert cue is not None and cue.period.start is not None and cue.period.start.year == 417
    assert cue.describe()["start"].startswith("0417-04-02T")
    phrase = time_cue.parse({"phrase": "yesterday", "now": -49e9}, NOW)
    assert phrase is not None and phrase.period.start is not None and phrase.period.start.year == 417


_EDGE = st.one_of(
    st.integers(min_value=-(2**38), max_value=2**38),
    st.floats(min_value=-1e12, max_value=1e12, allow_nan=False),
    st.sampled_from(["9999", "9999-12", "9999-12-31", "0001", "0001-01", "0001-01-01", "10000", "0000"]),
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31)).map(datetime.isoformat),
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.timezones()).map(
        datetime.isoformat
    ),
)


@given(
    st.fixed_dictionaries(
        {},
        optional={
            "start": _EDGE,
            "end": _EDGE,
            "now": _EDGE,
            "phrase": st.sampled_from(["today", "yesterday", "last week", "in May 2023", "先週"]),
            "certainty": st.sampled_from(["sure", "likely"]),
        },
    )
)
def test_edge_values_resolve_or_are_invalid_input(value: dict[str, Any]) -> None:
    """Every cue at the edges of what ISO 8601 with a four-digit year can say resolves to a period
    that describes itself, or is InvalidInput: nothing else escapes (765 of 4,932 did before)."""
    try:
        cue = time_cue.parse(value, NOW)
    except InvalidInput as refused:
        assert str(refused)
        return
    assert cue is not None
    described = cue.describe()
    for key in ("start", "end"):
        assert described[key] is None or len(described[key].split("-")[0]) == 4
