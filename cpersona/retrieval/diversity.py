"""Session diversity: the best rows of other sessions get room beside one crowded session.

A question whose answer is spread over several sessions ("how many trips did I take this year?")
loses when the best-scoring session fills the top of the list with its neighbouring turns: each of
them is a strong match, and together they push the other sessions' evidence below the cut. So after
the gate, each memory's score is multiplied by ``decay ** n``, where ``n`` is the number of better
rows of the same session already ahead of it; the list is then re-sorted. The best row of every
session keeps its score, so a question answered by one session keeps that session's best turn first.

A question that counts or totals over occasions ("how many concerts have I been to?", "how much did I
spend in total?", "what is the average …", "how often did I bake?", 何回) is answered by one row of
each of several sessions and by no second row of any: for it every row beyond its session's best gets
``aggregate_decay`` per row ahead of it (``strength``), so each session's best row comes before any
session's second. Other questions keep the mild rule, which spares a single-session answer whose
evidence is the best turn's neighbour. A habit ("how often does he run?", present tense) is one
statement, not a count, and keeps the mild rule. A question about the order of events ("which did I
do first, A or B?", "did A come before or after B?", "how much time passed between A and B?",
どちらが先) is answered the same way, by one row of each event's session, and gets the same strong
rule. So does a question that compares amounts over occasions ("which cost more, A or B?", "which of
my trips was the longest?", どちらが高い): each occasion's session holds one of the amounts.

A session is what the memory knows of one: rows of the same agent, project and channel whose
timestamps lie within ``SESSION_GAP_SECONDS`` of each other (the rule calibration and the context
channel use). Candidates are grouped by that rule among themselves: sorted by time, a new session
starts at each gap wider than the rule. Episodes are left alone (each one is a session of its own).
When the times tell no sessions apart (every candidate falls in one, as when a whole history was
stored at once without its times), the strong rule groups by where the rows were stored instead: a
candidate stored within ``UNTIMED_ID_GAP`` rows of the previous one belongs with it (``arrange``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cpersona.retrieval.context import SESSION_GAP_SECONDS, row_seconds

if TYPE_CHECKING:
    from cpersona.retrieval.candidates import ScoredRow

#: The factor name in ``match_reason.factors``.
FACTOR = "session_diversity"

# Patterns of the form "A … B … C" are searched one part after another (``_in_order``), never as one
# regex with ".*" between the parts: that backtracks, to seconds on a long query of repeated openers.


def _words(*alternatives: str) -> re.Pattern[str]:
    """Any of ``alternatives`` as a whole word or phrase, in any case."""
    return re.compile(rf"\b(?:{'|'.join(alternatives)})\b", re.IGNORECASE)


#: A question that counts or totals over occasions: its answer is spread over sessions.
_AGGREGATE = re.compile(
    r"\b(how many|how often (?:did|have|has|had)|in total|in all|altogether|so far|total|average|combined)\b|"
    r"何回|何度|いくつ|合計|平均|合わせて|全部で|何[個冊本人件枚杯軒つ]",
    re.IGNORECASE,
)
#: "how much" … "overall" on one line: a total too.
_HOW_MUCH = _words("how much")
_SUMMED = _words("in total", "altogether", "so far", "overall")


#: A question about the order of events in time: each event's session holds half its answer.
_ORDER = re.compile(
    r"\b(?:before or after|after or before)\b|\b(?:what|which|in) order\b|\border of\b|\bchronological|"
    r"どちらが先|どっちが先|前か後|先か後|順番|順序",
    re.IGNORECASE,
)
#: "which / what / who" … "first / later / before …" … "or" in one clause.
_ORDER_OPENER = _words("which", "what", "who")
_ORDER_WORD = _words("first", "earlier", "sooner", "last", "later", "before", "after")
_OR = _words("or")


#: How far apart two events were ("how long after A did B", "how much time passed between A and B"): an
#: order question too, and one whose frame says nothing of the events (query_form.py takes it out). The
#: frame, then a link to the other event, in one clause.
_SPAN_FRAME = _words("how long", "how much time", "how many (?:days|weeks|months|years)")
_SPAN_LINK = _words("between", "after", "before", "since")


#: Amounts measured on a scale, as comparatives and superlatives: what a comparison over occasions asks.
_MORE = _words(
    "more", "less", "fewer", "longer", "shorter", "bigger", "smaller", "larger", "cheaper", "pricier",
    "higher", "lower", "further", "farther", "faster", "slower", "heavier", "lighter",
)  # fmt: skip
_MOST = _words(
    "longest", "shortest", "biggest", "largest", "smallest", "cheapest", "priciest", "highest", "lowest",
    "furthest", "farthest", "fastest", "slowest", "heaviest", "lightest", "greatest", "(?:most|least) expensive",
)  # fmt: skip
_COMPARE_OPENER = _words("which", "what", "who", "where", "did", "was", "were")
_SUPERLATIVE_OPENER = _words("which", "what", "where", "who")
_ALTERNATIVE = _words("or", "than")
_HOW_MUCH_MORE = re.compile(rf"\bhow (?:much|many) {_MORE.pattern}", re.IGNORECASE)
_CHOICE_OPENER = _words("which", "where")
_THE_MOST = _words("the most", "the least")
#: What stands before a superlative that asks for an example ("one of the biggest …").
_EXAMPLE = "one of the "
_JA_COMPARE = re.compile(r"(?:どちら|どっち)(?:の方)?が(?:高|安|長|短|多|少|大き|小さ|遠|近|重|軽)")


def _in_order(text: str, *parts: re.Pattern[str]) -> bool:
    """True when each of ``parts`` matches in ``text`` after the one before it. Each search starts where
    the one before ended (the earliest match leaves the most room for the rest), so the cost stays linear
    in the text's length whatever it holds."""
    start = 0
    for part in parts:
        found = part.search(text, start)
        if found is None:
            return False
        start = found.end()
    return True


def _clauses(query: str) -> list[str]:
    """The parts of ``query`` between question marks: "A … B … C" never reaches across one."""
    return query.split("?")


def _compares_in(clause: str) -> bool:
    """One clause (no "?" inside), searched part after part (``_in_order``)."""
    if _HOW_MUCH_MORE.search(clause) or _JA_COMPARE.search(clause):
        return True
    if _in_order(clause, _CHOICE_OPENER, _THE_MOST) or _in_order(
        clause, _COMPARE_OPENER, _MORE, _ALTERNATIVE
    ):
        return True
    opener = _SUPERLATIVE_OPENER.search(clause)
    if opener is None:
        return False
    # "one of the biggest challenges" asks for an example, not the extreme.
    return any(
        clause[max(0, most.start() - len(_EXAMPLE)) : most.start()].lower() != _EXAMPLE
        for most in _MOST.finditer(clause, opener.end())
    )


def aggregates(query: str) -> bool:
    """True when ``query`` counts or totals over occasions ("how many", "in total", 何回 …)."""
    return bool(_AGGREGATE.search(query)) or any(
        _in_order(line, _HOW_MUCH, _SUMMED) for line in query.split("\n")
    )


def orders(query: str) -> bool:
    """True when ``query`` asks which of several events came first, or how far apart they were."""
    if _ORDER.search(query):
        return True
    return any(_in_order(clause, _ORDER_OPENER, _ORDER_WORD, _OR) for clause in _clauses(query)) or (
        measures_interval(query)
    )


def measures_interval(query: str) -> bool:
    """True when ``query`` asks how far apart in time two events were ("how long after A …", "how much
    time passed between A and B", "how many days since …")."""
    return any(_in_order(clause, _SPAN_FRAME, _SPAN_LINK) for clause in _clauses(query))


def compares(query: str) -> bool:
    """True when ``query`` compares amounts over occasions ("which cost more, A or B?", "the longest")."""
    return any(_compares_in(clause) for clause in _clauses(query))


def spans_sessions(query: str) -> bool:
    """True when ``query``'s answer is one row from each of several sessions: it counts, orders or
    compares."""
    return aggregates(query) or orders(query) or compares(query)


def strength(query: str, decay: float, free: int, aggregate_decay: float) -> tuple[float, int]:
    """(decay, free rows) for ``query``: a question that counts, orders or compares (``spans_sessions``)
    gets one free row and ``aggregate_decay`` (the stronger of the two), any other the settings'
    ``decay`` and ``free``."""
    return _strength(_strong(query, aggregate_decay), decay, free, aggregate_decay)


def _strong(query: str, aggregate_decay: float) -> bool:
    """Whether ``query`` gets the strong rule: its answer spans sessions and the rule is not off."""
    return aggregate_decay < 1.0 and spans_sessions(query)


def _strength(strong: bool, decay: float, free: int, aggregate_decay: float) -> tuple[float, int]:
    return (min(decay, aggregate_decay), 1) if strong else (decay, free)


def session_keys(rows: Sequence[dict[str, Any]]) -> list[tuple[Any, ...] | None]:
    """Each row's session key (None for episodes and rows without a readable time)."""
    timed: list[tuple[tuple[Any, ...], float, int]] = []
    for index, row in enumerate(rows):
        if row.get("type") != "memory":
            continue
        seconds = row_seconds(row)
        if seconds is None:
            continue
        timed.append(((row.get("agent_id"), row.get("project_id"), row.get("channel")), seconds, index))
    timed.sort(key=lambda t: (t[0], t[1]))
    keys: list[tuple[Any, ...] | None] = [None] * len(rows)
    session = 0
    previous: tuple[tuple[Any, ...], float] | None = None
    for scope, seconds, index in timed:
        if previous is None or previous[0] != scope or seconds - previous[1] > SESSION_GAP_SECONDS:
            session += 1
        previous = (scope, seconds)
        keys[index] = (*scope, session)
    return keys


#: Untimed rows stored at most this many ids after the previous candidate count as one session: a
#: turn and the reply stored after it, not the next exchange but one. Measured with 2, 4 and 8 on a
#: long history stored without times
#: (docs/research/recall-round-three/question-forms.md#stored-without-times).
UNTIMED_ID_GAP = 2


def insertion_keys(
    rows: Sequence[dict[str, Any]], keys: list[tuple[Any, ...] | None]
) -> list[tuple[Any, ...] | None]:
    """``keys`` again, unless the times put every keyed row in one session: then runs of rows stored
    close together (ids at most ``UNTIMED_ID_GAP`` apart) stand for sessions."""
    if len({key for key in keys if key is not None}) != 1:
        return keys
    stored = sorted((int(rows[i]["id"]), i) for i, key in enumerate(keys) if key is not None)
    out = list(keys)
    run, previous = 0, None
    for row_id, index in stored:
        if previous is None or row_id - previous > UNTIMED_ID_GAP:
            run += 1
        previous = row_id
        out[index] = ("stored", run)
    return out


def arrange(
    rows: list[ScoredRow], query: str, decay: float, free: int, aggregate_decay: float
) -> list[ScoredRow]:
    """Session diversity for ``query`` (``strength``): a question whose answer spans sessions gets the
    strong rule, grouped by where rows were stored when their times tell no sessions apart."""
    strong = _strong(query, aggregate_decay)
    decay, free = _strength(strong, decay, free, aggregate_decay)
    return diversify(rows, decay, free, by_insertion=strong)


def diversify(
    rows: list[ScoredRow], decay: float, free: int = 1, by_insertion: bool = False
) -> list[ScoredRow]:
    """Multiply the n-th row of a session beyond its first ``free`` (best first) by ``decay ** n`` and
    re-sort; with ``by_insertion``, rows whose times tell no sessions apart are grouped by
    ``insertion_keys``.

    ``rows`` are best first; the result is best first too. ``decay`` 1 (or more) changes nothing.
    """
    if decay >= 1.0 or len(rows) < 2:
        return rows
    plain = [item.row for item in rows]
    keys = session_keys(plain)
    if by_insertion:
        keys = insertion_keys(plain, keys)
    seen: dict[tuple[Any, ...], int] = {}
    changed = False
    for item, key in zip(rows, keys, strict=True):
        if key is None:
            continue
        ahead = seen.get(key, 0)
        seen[key] = ahead + 1
        if ahead >= free:
            factor = decay ** (ahead - free + 1)
            item.scale(FACTOR, factor)
            changed = True
    if changed:
        rows.sort(key=lambda item: item.sort_key())
    return rows
