"""The newest statement of a changing fact: a question about the present prefers newer rows.

"What car do I drive now?" — the memory holds "My car is a silver Honda Civic" (March) and "I traded
in my old car, I drive a blue Subaru Outback now" (September). Both match the question about as well;
the answer is the newer one. No language model tells which rows state values of the same thing, but
the question says when it asks about: a word of the present ("now", "currently", "these days",
"latest", 今, 現在, …) and no word of the past ("used to", "before", "first", "originally", 昔, …).
For such a question the rows the gate kept are ordered by time, and each row gets
``1 - weight × (its age rank among them) / (the number of distinct times - 1)``: the newest keeps its score, the
oldest loses ``weight`` of it. Rows far apart in score keep their order (a weak new row does not
overtake a strong old one); rows that match about equally come newest first.

Scores mix meaning with wording, and an update is often worded unlike the question ("Where do I live
now?" — "I live in Kyoto" against "The move is done, our new home is in Tbilisi"), so the keyword
channels can hold the old row far above the new one. So, second, the rows that match the question
equally by meaning (cosine within ``margin`` of the best of them, ``CPERSONA_RECENCY_MARGIN``, and a
score at least ``_EQUAL_FLOOR`` of the best of theirs, so a row with little but its meaning for it stays
put) trade places newest first: the newest takes the best of their places.

Questions without a present word are left alone: most questions about the past ("when did I …")
want the row that happened then, whatever came after. Superseded rows have left the candidates
already (supersede chains), so this only acts where the memory was never told what replaced what.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from cpersona.retrieval.context import row_seconds

if TYPE_CHECKING:
    from cpersona.retrieval.candidates import Key, ScoredRow

#: The factor names in ``match_reason.factors``.
FACTOR = "recency"
EQUALS_FACTOR = "newest_of_equals"
#: An equal scores at least this share of the best equal's score: a row that matches the question by
#: meaning but has little else for it stays where it is (chosen on the long histories' choose halves).
_EQUAL_FLOOR = 0.3

_PRESENT = re.compile(
    r"\b(now|right now|currently|current|these days|nowadays|at the moment|at present|"
    r"latest|most recent|most recently|newest|anymore|any more|still|today)\b|今|現在|最近|最新|いま",
    re.IGNORECASE,
)
_PAST = re.compile(
    r"\b(used to|before|previously|previous|originally|original|at first|first|earlier|formerly|former|"
    r"old|older|ago|last (?:year|month|week|time)|back then|in the past|initially|initial|when did)\b|"
    r"昔|以前|前の|最初|当初|かつて",
    re.IGNORECASE,
)


def asks_about_now(query: str) -> bool:
    """True when the question has a word of the present and none of the past."""
    return bool(_PRESENT.search(query)) and not _PAST.search(query)


def prefer_newest(rows: list[ScoredRow], query: str, weight: float, margin: float = 0.0) -> list[ScoredRow]:
    """Scale each memory row by its recency among ``rows`` when ``query`` asks about the present, re-sort
    (best first), then deal the places of rows that match equally by meaning newest first (``margin``
    0: not). ``weight`` 0 changes nothing."""
    if weight <= 0 or len(rows) < 2 or not asks_about_now(query):
        return rows
    # Each memory's time, by key: the ranks below and the equals after the re-sort both read it.
    times = {item.key: row_seconds(item.row) for item in rows if item.row["type"] == "memory"}
    # Rows of one moment (a session stored with one timestamp) share a rank: ranks are distinct times.
    distinct = sorted({s for s in times.values() if s is not None}, reverse=True)
    if len(distinct) < 2:
        return rows
    rank = {seconds: position for position, seconds in enumerate(distinct)}
    span = len(distinct) - 1
    for item in rows:
        seconds = times.get(item.key)
        if seconds is None or rank[seconds] == 0:
            continue
        factor = 1.0 - weight * rank[seconds] / span
        item.scale(FACTOR, factor)
    rows.sort(key=lambda item: item.sort_key())
    if margin > 0:
        _newest_among_equals(rows, times, margin)
    return rows


def _newest_among_equals(rows: list[ScoredRow], seconds_of: dict[Key, float | None], margin: float) -> None:
    """Deal the places of the rows that match the question equally by meaning newest first.

    The equals are the timed rows whose cosine with the query is within ``margin`` of the best cosine
    among the timed rows, and whose score is at least ``_EQUAL_FLOOR`` of the best of theirs. Their
    places in the list stay; who holds which is dealt again newest first, each taking the score of its
    new place (factor ``newest_of_equals``), so the list stays sorted by score."""
    timed = {
        item.key for item in rows if item.fused.cosine is not None and seconds_of.get(item.key) is not None
    }
    if len(timed) < 2:
        return
    top = max(item.fused.cosine or 0.0 for item in rows if item.key in timed)
    close = [
        i for i, item in enumerate(rows) if item.key in timed and (item.fused.cosine or 0.0) >= top - margin
    ]
    best = max(rows[i].score for i in close)
    # With best > 0 every equal scores above 0, so the factor below is defined.
    slots = [i for i in close if rows[i].score >= _EQUAL_FLOOR * best]
    if len(slots) < 2:
        return
    members = sorted((rows[i] for i in slots), key=lambda item: -(seconds_of[item.key] or 0.0))
    scores = [rows[i].score for i in slots]
    for slot, item, score in zip(slots, members, scores, strict=True):
        if score != item.score:
            item.factors[EQUALS_FACTOR] = score / item.score
            item.score = score
        rows[slot] = item
