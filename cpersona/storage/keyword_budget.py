"""Which query terms a keyword channel may afford: a row budget, spent on the rarest terms first (both engines).

FTS5 computes bm25 for every row that matches any OR'ed term before LIMIT
applies, and bm25 first scans every phrase's whole document list for its idf.
So the cost of a keyword channel grows with the summed document counts of its
terms, and the terms that cost the most are the common ones ("2023", a speaker's
name in every other row), whose idf — log((N - n + 0.5) / (n + 0.5)), floored
at ~0 by FTS5 once n ≥ N/2 — adds the least to the ranking.

Each engine counts each term's rows, stopping at the budget (so one count costs at
most ``budget`` rows however common the term is: SQLite's ``plan_terms`` in
``storage/sqlite/keyword.py``, PostgreSQL's postings count), and ``choose_terms`` keeps
the rarest terms while their summed counts fit the budget. The bm25 ranking then runs on at
most ``budget`` rows whatever the corpus size. When even the rarest term is over
budget (a question of only common words) no bm25 runs at all: the newest
``budget`` rows matching any term are ranked by how many terms they contain
(``bounded``). Terms with no row are dropped (they add nothing to any score).
docs/decisions.md gives the budget and how it was chosen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

ROW_BUDGET = 300  # rows a keyword channel may rank by bm25 per query (see docs/decisions.md)


@dataclass(frozen=True)
class TermPlan:
    """What to MATCH: ``kept`` terms ranked by bm25; ``dropped`` ones over budget; ``bounded`` when no
    term fits (rank the newest matches of every term by term hits instead)."""

    kept: tuple[str, ...]
    dropped: tuple[str, ...]
    bounded: bool = False

    @property
    def matches_nothing(self) -> bool:
        """No term has a row: MATCH would find nothing (the LIKE stand-in's cue)."""
        return not self.kept and not self.bounded


def choose_terms(terms: Sequence[str], counts: Sequence[int], budget: int = ROW_BUDGET) -> TermPlan:
    """The plan for ``terms`` given each one's row count (counted up to ``budget + 1``); any engine."""
    kept: set[int] = set()
    spent = 0
    for i in sorted(range(len(terms)), key=lambda i: (counts[i], i)):
        if counts[i] == 0:
            continue
        if spent + counts[i] > budget:
            break
        kept.add(i)
        spent += counts[i]
    live = [i for i in range(len(terms)) if counts[i] > 0]
    if not kept and live:
        return TermPlan((), tuple(terms[i] for i in live), bounded=True)
    return TermPlan(
        tuple(terms[i] for i in range(len(terms)) if i in kept),
        tuple(terms[i] for i in live if i not in kept),
    )


def filled(
    hits: list[tuple[int, float]], newest: Sequence[tuple[int, float]], plan: TermPlan, limit: int
) -> list[tuple[int, float]]:
    """``hits`` topped up to ``limit`` with ``newest`` (id, term hits) rows not already in it.

    With kept terms the fill rows hold only dropped terms and score 0 (below every bm25 hit); on the
    bounded path (no kept term) their term-hit counts are the ranking.
    """
    seen = {rid for rid, _ in hits}
    fill = [(rid, 0.0 if plan.kept else score) for rid, score in newest if rid not in seen]
    return hits + fill[: limit - len(hits)]
