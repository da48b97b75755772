"""A deterministic reader of date phrases (English and Japanese): text → a period, or nothing.

No model and no guessing: a phrase is read only when it names one calendar period on its own
("in May 2023", "yesterday", "last week", "先週", "昨日", "2023年5月"). A month or a day without
its year ("in May", "5月8日"), a weekday ("last Friday") and a bare number ("2023" without "in")
are not read: each has more than one reasonable meaning. Relative phrases resolve against ``now``
in ``now``'s own time zone (UTC when it has none), so "yesterday" is the caller's yesterday.

Weeks are calendar weeks, Monday to Sunday (ISO 8601): "last week" on a Wednesday is the
Monday–Sunday before the current one, not the last seven days.

``read_phrase`` reads a whole phrase (a caller's ``time_cue.phrase``); ``find_in_query`` looks for
phrases inside a question and answers only when every phrase it finds names the same period.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR = r"(?P<year>(?:19|20|21)\d\d)"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_NUM = r"(?P<n>\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten)"
_WORD_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}


@dataclass(frozen=True)
class Period:
    """A half-open interval [start, end) of aware UTC datetimes; either end may be open (None)."""

    start: datetime | None
    end: datetime | None

    def contains(self, moment: datetime) -> bool:
        """True when ``moment`` lies inside the period."""
        return (self.start is None or moment >= self.start) and (self.end is None or moment < self.end)

    def seconds_outside(self, moment: datetime) -> float:
        """How far ``moment`` lies from the period, in seconds (0 inside)."""
        if self.start is not None and moment < self.start:
            return (self.start - moment).total_seconds()
        if self.end is not None and moment >= self.end:
            return (moment - self.end).total_seconds()
        return 0.0

    def seconds_long(self) -> float | None:
        """The period's length in seconds, None when an end is open."""
        if self.start is None or self.end is None:
            return None
        return (self.end - self.start).total_seconds()


def _day(d: date, tz: object) -> datetime:
    return datetime.combine(d, time(0), tzinfo=tz).astimezone(UTC)  # type: ignore[arg-type]


def _span(first: date, after: date, tz: object) -> Period:
    return Period(_day(first, tz), _day(after, tz))


def _month_span(year: int, month: int, tz: object) -> Period:
    after = date(year + 1, 1, 1) if month == 12 else date(year, month + 1, 1)
    return _span(date(year, month, 1), after, tz)


def _shift_month(year: int, month: int, by: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + by
    return index // 12, index % 12 + 1


def _number(text: str) -> int:
    return _WORD_NUMBERS[text] if text in _WORD_NUMBERS else int(text)


def _ago(unit: str, n: int, now: datetime) -> Period | None:
    tz, today = now.tzinfo, now.date()
    if n <= 0 or n > 400:
        return None
    if unit.startswith("day") or unit == "日":
        d = today - timedelta(days=n)
        return _span(d, d + timedelta(days=1), tz)
    if unit.startswith("week") or unit in ("週", "週間"):
        monday = today - timedelta(days=today.weekday()) - timedelta(weeks=n)
        return _span(monday, monday + timedelta(days=7), tz)
    if unit.startswith("month") or unit in ("ヶ月", "か月", "カ月", "ヵ月", "箇月"):
        year, month = _shift_month(today.year, today.month, -n)
        return _month_span(year, month, tz)
    if unit.startswith("year") or unit == "年":
        return _span(date(today.year - n, 1, 1), date(today.year - n + 1, 1, 1), tz)
    return None


def _relative(word: str, now: datetime) -> Period | None:
    tz, today = now.tzinfo, now.date()
    monday = today - timedelta(days=today.weekday())
    match word:
        case "today" | "今日" | "本日":
            return _span(today, today + timedelta(days=1), tz)
        case "yesterday" | "昨日":
            d = today - timedelta(days=1)
            return _span(d, today, tz)
        case "the day before yesterday" | "一昨日" | "おととい" | "おとつい":
            d = today - timedelta(days=2)
            return _span(d, d + timedelta(days=1), tz)
        case "this week" | "今週":
            return _span(monday, monday + timedelta(days=7), tz)
        case "last week" | "先週" | "前の週":
            return _span(monday - timedelta(days=7), monday, tz)
        case "this month" | "今月":
            return _month_span(today.year, today.month, tz)
        case "last month" | "先月":
            year, month = _shift_month(today.year, today.month, -1)
            return _month_span(year, month, tz)
        case "this year" | "今年":
            return _span(date(today.year, 1, 1), date(today.year + 1, 1, 1), tz)
        case "last year" | "去年" | "昨年":
            return _span(date(today.year - 1, 1, 1), date(today.year, 1, 1), tz)
    return None


def _absolute(year: str, month: str | None, day: str | None) -> Period | None:
    try:
        y = int(year)
        if month is None:
            return _span(date(y, 1, 1), date(y + 1, 1, 1), UTC)
        m = MONTHS[month] if month in MONTHS else int(month)
        if day is None:
            return _month_span(y, m, UTC)
        d = date(y, m, int(day))
    except (ValueError, KeyError, OverflowError):
        return None  # 2023-02-30, month 13: not a date, so not read
    return _span(d, d + timedelta(days=1), UTC)


# Each pattern: (compiled, how to read a match). Longest forms first so "8 May 2023" is not read as
# "May 2023". English patterns need word boundaries; Japanese ones do not (no spaces there).
_RELATIVE_EN = r"the day before yesterday|yesterday|today|(?:this|last) (?:week|month|year)"
_RELATIVE_JA = r"一昨日|おととい|おとつい|昨日|今日|本日|今週|先週|前の週|今月|先月|今年|去年|昨年"
_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(?P<year>(?:19|20|21)\d\d)-(?P<mnum>[01]\d)-(?P<day>[0-3]\d)(?![\d:T])"), "iso_day"),
    (re.compile(r"\b(?P<year>(?:19|20|21)\d\d)-(?P<mnum>[01]\d)(?![-\d])"), "iso_month"),
    (re.compile(rf"\b{_DAY} (?:of )?{_MONTH},? {_YEAR}\b"), "day_month_year"),
    (re.compile(rf"\b{_MONTH} {_DAY},? {_YEAR}\b"), "month_day_year"),
    (re.compile(rf"\b{_MONTH},? {_YEAR}\b"), "month_year"),
    (re.compile(rf"\b(?:in|during|throughout) {_YEAR}\b"), "year"),
    (
        re.compile(r"(?P<year>(?:19|20|21)\d\d)年(?:(?P<mnum>1[0-2]|0?[1-9])月(?:(?P<day>[0-3]?\d)日)?)?"),
        "ja_date",
    ),
    (re.compile(rf"\b(?:{_RELATIVE_EN})\b"), "relative"),
    (re.compile(_RELATIVE_JA), "relative"),
    (re.compile(rf"\b{_NUM} (?P<unit>days?|weeks?|months?|years?) ago\b"), "ago"),
    (re.compile(r"(?P<n>\d{1,3})(?P<unit>日|週間|週|ヶ月|か月|カ月|ヵ月|箇月|年)前"), "ago"),
]


#: A phrase that only anchors another period ("the week before August 3, 2023", "2023年5月以降") names
#: no period of its own: a query holding one is left alone.
_ANCHORED_BEFORE = re.compile(r"\b(?:before|after|since|until|till|prior to|by|from|between|and|to)\s*$")
_ANCHORED_AFTER = re.compile(r"^\s*(?:以前|以降|以来|まで|から|より|前|後|[-–~〜]\s*\d)")


def _normalise(text: str) -> str:
    # Full-width digits and letters (２０２３年５月) read as their ASCII forms; case and spaces folded.
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).lower()


def _read(match: re.Match[str], kind: str, now: datetime) -> Period | None:
    g = match.groupdict()
    if kind == "relative":
        return _relative(match.group(0), now)
    if kind == "ago":
        return _ago(g["unit"], _number(g["n"]), now)
    if kind in ("iso_day", "iso_month", "ja_date"):
        return _absolute(g["year"], g.get("mnum"), g.get("day"))
    if kind == "year":
        return _absolute(g["year"], None, None)
    return _absolute(g["year"], g["month"], g.get("day"))


def _found(text: str, now: datetime) -> list[tuple[int, int, Period | None]]:
    """(start, end, period) of every phrase in ``text``; overlapping matches keep the longest."""
    hits: list[tuple[int, int, Period | None]] = []
    taken: list[tuple[int, int]] = []
    for pattern, kind in _PATTERNS:
        for match in pattern.finditer(text):
            a, b = match.span()
            if any(a < y and x < b for x, y in taken):
                continue
            taken.append((a, b))
            try:
                period = _read(match, kind, now)
            except (OverflowError, ValueError):  # "today" at datetime.max: no such period
                period = None
            hits.append((a, b, period))
    return sorted(hits, key=lambda h: h[0])


def read_phrase(text: str, now: datetime) -> Period | None:
    """The period a whole phrase names ("last week", "in May 2023", "2023年5月"), or None.

    The phrase must be one date phrase and nothing else (a leading "in"/"on" is allowed).
    """
    normal = _normalise(text).strip().strip(".,!?。、")
    normal = re.sub(r"^(?:in|on|during) (?=\D)", "", normal)
    for candidate in (normal, f"in {normal}"):  # a bare year "2023" reads as "in 2023"
        hits = _found(candidate, now)
        if len(hits) == 1 and hits[0][2] is not None:
            a, b, period = hits[0]
            rest = (candidate[:a] + candidate[b:]).strip()
            if rest in ("", "in", "on"):
                return period
    return None


def find_in_query(query: str, now: datetime) -> tuple[Period, str] | None:
    """The one period the query's date phrases name, with the phrase, or None.

    None when there is no phrase, when a phrase does not resolve (an impossible date), when the
    phrases name different periods ("in May 2023 or last week"), or when a phrase only anchors
    another period ("the week before August 3, 2023", "since May 2023", "2023年5月以降"): those are
    left to the caller's ``time_cue``.
    """
    text = _normalise(query[:2000])  # a date phrase in a 100 KB query is not worth a long scan
    hits = _found(text, now)
    if not hits or any(p is None for _, _, p in hits):
        return None
    for a, b, _ in hits:
        if _ANCHORED_BEFORE.search(text[max(0, a - 12) : a]) or _ANCHORED_AFTER.match(text[b : b + 4]):
            return None
    periods = {p for _, _, p in hits}
    if len(periods) != 1:
        return None
    a, b, period = hits[0]
    assert period is not None
    return period, text[a:b]
