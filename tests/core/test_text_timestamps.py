"""Stored timestamps: parse_ts reads what format_ts writes, and agrees with strptime on anything else."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cpersona.core.text import format_ts, parse_ts

_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def _strptime(value: str) -> datetime | str:
    try:
        return datetime.strptime(value, _FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return "ValueError"


def _parsed(value: str) -> datetime | str:
    try:
        return parse_ts(value)
    except ValueError:
        return "ValueError"


@given(st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(UTC)))
def test_round_trip(moment: datetime) -> None:
    # Every year is written with four digits (strftime's %Y alone writes "385" on glibc: issue 36)
    assert len(format_ts(moment)) == 27
    assert parse_ts(format_ts(moment)) == moment
    assert parse_ts(format_ts(moment)).tzinfo is UTC


@given(st.text(alphabet="0123456789-T:.Z ٣+", min_size=20, max_size=30))
def test_any_string_is_read_like_strptime_reads_it(value: str) -> None:
    assert _parsed(value) == _strptime(value)


@pytest.mark.parametrize(
    "value",
    [
        "2026-01-01T00:00:00.000000Z",
        "2026-02-30T00:00:00.000000Z",  # impossible date: both refuse
        "2026-13-01T00:00:00.000000Z",
        "2026-01-01 00:00:00.000000Z",  # fromisoformat would take the space; strptime does not
        "2026-01-01T00:00:00.123Z",  # short fraction: strptime's business
        "2026-1-1T0:0:0.5Z",
        "٢٠٢٦-01-01T00:00:00.000000Z",  # non-ASCII digits
        "2026-01-01T00:00:00.000000",
        "",
    ],
)
def test_edge_forms_match_strptime(value: str) -> None:
    assert _parsed(value) == _strptime(value)


def test_microseconds_survive() -> None:
    moment = datetime(2026, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    assert parse_ts(format_ts(moment + timedelta(microseconds=1))) == moment + timedelta(microseconds=1)


def test_a_cached_read_is_the_same_and_a_refused_one_is_refused_every_time() -> None:
    # parse_ts is cached (recall reads the same rows' times in several stages): the cache must not
    # change an answer, and a failure is never remembered as a value.
    stored = "2026-03-04T05:06:07.080910Z"
    assert parse_ts(stored) == parse_ts(stored) == datetime(2026, 3, 4, 5, 6, 7, 80910, tzinfo=UTC)
    for _ in range(2):
        with pytest.raises(ValueError):
            parse_ts("2026-02-30T00:00:00.000000Z")
