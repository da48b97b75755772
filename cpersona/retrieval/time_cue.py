"""``recall(time_cue=...)``: when the caller thinks the memory happened, and how sure it is.

A cue is a period plus a certainty (docs/retrieval.md "Time cues"):

- ``sure``: a filter. Only memories whose own ``timestamp`` lies in the period (and episodes whose
  span meets it) are candidates — the vector channel searches only them, the keyword channels filter
  the period inside their statements (before their row budget), so a period with matches returns them even when other periods
  dominate the plain ranking.
- ``likely`` / ``vague``: a boost, never a filter. Each memory's score is multiplied by
  ``1 + weight × exp(-distance / (spread × width))`` — distance from its timestamp to the period
  (0 inside), width the period's length (at least one day) — so rows inside the period gain at most
  ``1 + weight`` and rows far away gain nothing; no row loses score. The best row of the plain
  ranking always stays in the answer (a strong match is never hidden by the boost).

The memory's ``timestamp`` is the time the caller gave at store (when it happened); stores
without one take the time stored, so that is the fallback. Episodes use their start/end time,
else when they were archived.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from cpersona.core.text import normalise_timestamp, parse_ts
from cpersona.errors import InvalidInput
from cpersona.retrieval.date_phrases import Period, read_phrase

CERTAINTIES = ("sure", "likely", "vague")
DEFAULT_CERTAINTY = "likely"
#: The factor's name in ``match_reason.factors``.
FACTOR = "time_cue"
#: Boost weight and spread per certainty, and for a phrase the reader found in the query ("query":
#: weaker, as a date in a question is a guess about when its answer happened). Chosen on LoCoMo
#: conversation 41, confirmed on 26 and 30 (docs/decisions.md "Time cues").
WEIGHT = {"likely": 1.0, "vague": 0.5, "query": 0.25}
SPREAD = {"likely": 1.0, "vague": 4.0, "query": 1.0}
#: The in-query reader's phrases act as ``likely`` cues (a boost, never a filter) with the "query" constants.
QUERY_CERTAINTY = "likely"
_DAY_SECONDS = 86400.0
#: Beyond this many scales away the boost is 1 exactly (w·e^-8 < 0.0002 would only clutter factors).
_HORIZON = 8.0
_KEYS = ("start", "end", "phrase", "certainty", "now")
_EXAMPLES = "e.g. 'last week', 'yesterday', 'in May 2023', '先週', '昨日', '2023年5月'"


@dataclass(frozen=True)
class TimeCue:
    """A resolved cue: the period, the certainty and where it came from (``caller`` or ``query``)."""

    period: Period
    certainty: str
    origin: str = "caller"
    phrase: str | None = None

    @property
    def filters(self) -> bool:
        """True for ``sure``: rows outside the period are left out."""
        return self.certainty == "sure"

    def factor(self, moment: datetime | None) -> float:
        """The boost for a row at ``moment`` (1.0 for a filter cue or an unknown time)."""
        if self.filters or moment is None:
            return 1.0
        key = "query" if self.origin == "query" else self.certainty
        distance = self.period.seconds_outside(moment) / _DAY_SECONDS
        width = max((self.period.seconds_long() or _DAY_SECONDS) / _DAY_SECONDS, 1.0)
        scale = SPREAD[key] * width
        if distance > _HORIZON * scale:
            return 1.0
        return 1.0 + WEIGHT[key] * math.exp(-distance / scale)

    def describe(self) -> dict[str, Any]:
        """The cue as the response echoes it: ``{start, end, certainty, origin, phrase?}``."""
        out: dict[str, Any] = {
            "start": _iso(self.period.start),
            "end": _iso(self.period.end),
            "certainty": self.certainty,
            "origin": self.origin,
        }
        if self.phrase:
            out["phrase"] = self.phrase
        return out

    def admits_row(self, row: dict[str, Any]) -> bool:
        """For a ``sure`` cue: does the row's own time meet the period (memories: timestamp;
        episodes: their start–end span, else when archived)."""
        if row["type"] == "memory":
            moment = row_time(row)
            return moment is not None and self.period.contains(moment)
        first, last = _episode_span(row)
        if first is None or last is None:
            return False
        return (self.period.end is None or first < self.period.end) and (
            self.period.start is None or last >= self.period.start
        )


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _parse_stored(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return parse_ts(value)
    except ValueError:
        return None


def row_time(row: dict[str, Any]) -> datetime | None:
    """When a row happened: a memory's timestamp (the stored time when none was given at store,
    which is what ``store`` writes then), an episode's start time; else when it was stored."""
    if row.get("type") == "episode":
        first, _ = _episode_span(row)
        return first
    return _parse_stored(row.get("timestamp")) or _parse_stored(row.get("created_at"))


def _episode_span(row: dict[str, Any]) -> tuple[datetime | None, datetime | None]:
    first = _parse_stored(row.get("start_time"))
    last = _parse_stored(row.get("end_time"))
    fallback = _parse_stored(row.get("created_at"))
    first = first or last or fallback
    last = last or first
    return first, last


def _moment(value: Any, name: str) -> datetime:
    return parse_ts(normalise_timestamp(value, name))


_PARTIAL = ("%Y-%m-%d", "%Y-%m", "%Y")


def _bound(value: Any, name: str, *, is_end: bool) -> datetime:
    """A start or end: a date (the whole day: an end includes it), a month "2023-05", a year
    "2023", an ISO datetime (that instant; an end includes it) or Unix seconds."""
    if isinstance(value, str):
        text = value.strip()
        for fmt in _PARTIAL:
            try:
                first = datetime.strptime(text, fmt).date()
            except ValueError:
                continue
            if not is_end:
                return datetime.combine(first, datetime.min.time(), tzinfo=UTC)
            if fmt == "%Y":
                after = date(first.year + 1, 1, 1)
            elif fmt == "%Y-%m":
                after = date(first.year + (first.month == 12), first.month % 12 + 1, 1)
            else:
                after = first + timedelta(days=1)
            return datetime.combine(after, datetime.min.time(), tzinfo=UTC)
    moment = _moment(value, name)
    return moment + timedelta(microseconds=1) if is_end else moment


def _checked_bound(value: Any, name: str, *, is_end: bool) -> datetime:
    try:
        return _bound(value, name, is_end=is_end)
    except InvalidInput:  # (a ValueError too) already says what is wrong
        raise
    except (OverflowError, ValueError) as exc:
        # The end of 9999-12-31 (or of "9999-12", "9999") is year 10000: past what ISO 8601 with a
        # four-digit year can say. date() raises ValueError for it, timedelta arithmetic OverflowError.
        raise InvalidInput(f"{name} is out of range (years 0001-9999)") from exc


def parse(value: Any, now: datetime) -> TimeCue | None:
    """Validate and resolve a caller's ``time_cue`` (None when absent); InvalidInput when bad.

    ``{"start"?, "end"?, "phrase"?, "certainty"?, "now"?}``: a period given either as ``phrase``
    (read against ``now``, default the current time) or as ``start``/``end`` (at least one),
    never both; ``certainty`` ``sure`` | ``likely`` | ``vague`` (default ``likely``).
    """
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidInput("time_cue must be an object {start?, end?, phrase?, certainty?, now?}")
    unknown = sorted(str(k) for k in value if k not in _KEYS)
    if unknown:
        raise InvalidInput(
            f"time_cue has unknown field(s) {', '.join(unknown)[:120]}; allowed: {', '.join(_KEYS)}"
        )
    certainty = value.get("certainty", DEFAULT_CERTAINTY)
    if certainty is None:
        certainty = DEFAULT_CERTAINTY
    if not isinstance(certainty, str) or certainty not in CERTAINTIES:
        raise InvalidInput(
            f"time_cue.certainty must be one of {', '.join(CERTAINTIES)} (got {str(certainty)[:40]!r})"
        )
    anchor = now if value.get("now") is None else _anchor(value["now"])
    phrase = value.get("phrase")
    start, end = value.get("start"), value.get("end")
    if phrase is not None:
        if start is not None or end is not None:
            raise InvalidInput("time_cue takes either phrase or start/end, not both")
        if not isinstance(phrase, str):
            raise InvalidInput("time_cue.phrase must be a string")
        period = read_phrase(phrase[:200], anchor)
        if period is None:
            raise InvalidInput(
                f"time_cue.phrase {phrase[:60]!r} is not a date phrase recall can read ({_EXAMPLES})"
            )
        return TimeCue(period, certainty, "caller", phrase.strip()[:200])
    if start is None and end is None:
        raise InvalidInput("time_cue needs a period: phrase, or start and/or end")
    first = None if start is None else _checked_bound(start, "time_cue.start", is_end=False)
    after = None if end is None else _checked_bound(end, "time_cue.end", is_end=True)
    if first is not None and after is not None and first >= after:
        raise InvalidInput("time_cue.start is after time_cue.end")
    return TimeCue(Period(first, after), certainty, "caller")


def _anchor(value: Any) -> datetime:
    """``now`` for relative phrases, keeping its time zone (so 'yesterday' is the caller's)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise InvalidInput("time_cue.now must be an ISO-8601 string or Unix seconds")
    if isinstance(value, str):
        raw = value.strip()
        raw = raw[:-1] + "+00:00" if raw.endswith(("Z", "z")) else raw
        try:
            moment = datetime.fromisoformat(raw)
        except ValueError as exc:
            raise InvalidInput(
                f"time_cue.now {value[:60]!r} is not ISO-8601 (e.g. 2026-01-31T09:30:00Z)"
            ) from exc
        return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return _moment(value, "time_cue.now")
