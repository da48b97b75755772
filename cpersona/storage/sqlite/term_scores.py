"""Each kept query term's bm25 share per row in scope, kept between recalls while the index and the scopes are unchanged.

A keyword channel ranks the rows matching any of its kept terms (at most the row budget, so each
kept term matches at most that many rows: ``storage/keyword_budget.py``) by FTS5's bm25 over the
OR of the terms' phrases. bm25 is a sum over the query's phrases, in phrase order, of
``idf(phrase) × f(frequency in the row, row length)``; FTS5 computes each part from the whole
table (row count, average length, the phrase's row count), never from the other phrases, and
returns ``-1 × sum``. So the OR query's score of a row is, bit for bit, the sum in phrase order of
what the one-phrase query ``bm25`` returns for that row, negated: ``tests/storage/sqlite/test_term_scores.py``
holds the two equal. A term's one-phrase answer, read once, serves every later recall that keeps
that term, with no FTS5 work and no row lookup (the same terms recur across questions: speakers'
names, common words).

An answer is valid for one FTS5 structure record (``term_counts.structure``: any content change)
and one change-log position (``vector_changes``: any move of a row between agents, projects or
channels is logged there, so a scope's rows are the same while it stands). As for the term counts,
answers are only kept from read snapshots that hold no uncommitted write of their own.
"""

from __future__ import annotations

import sqlite3
from array import array
from collections.abc import Callable, Iterable, Sequence

from cpersona.storage.sqlite.kept_answers import KeptAnswers
from cpersona.storage.sqlite.term_counts import STRUCTURE_ROWID

#: Rows kept over every term and scope (16 bytes each: 4 MB at most); past this the answers start
#: again (a bound, not an eviction policy).
MAX_ROWS = 262_144


class Shares:
    """A term's rows in one scope and each one's bm25 share (what the one-phrase query's bm25 negates),
    as two packed arrays."""

    __slots__ = ("ids", "values")

    def __init__(self, pairs: Iterable[tuple[int, float]]) -> None:
        self.ids: array[int] = array("q")
        self.values: array[float] = array("d")
        for rid, value in pairs:
            self.ids.append(rid)
            self.values.append(value)

    def __len__(self) -> int:
        return len(self.ids)


Reader = Callable[[str], Shares]


def state(conn: sqlite3.Connection, table: str) -> tuple[bytes | None, int]:
    """The key an answer of FTS5 ``table`` is valid for, in ``conn``'s snapshot: its structure record
    and the change log's newest position."""
    row = conn.execute(
        f"SELECT (SELECT block FROM {table}_data WHERE id = ?), "
        "(SELECT COALESCE(MAX(seq), 0) FROM vector_changes)",
        (STRUCTURE_ROWID,),
    ).fetchone()
    return (None if row[0] is None else bytes(row[0])), int(row[1])


class TermScores:
    """Per (FTS5 table, scope, term): the rows in scope matching the term and each one's bm25 share.

    One per store, shared by its threads' read sessions.
    """

    __slots__ = ("_kept",)

    def __init__(self) -> None:
        self._kept: KeptAnswers[tuple[object, ...], Shares] = KeptAnswers(MAX_ROWS, len)

    def shares(
        self,
        conn: sqlite3.Connection,
        table: str,
        scope: tuple[str, tuple[object, ...]],
        terms: Sequence[str],
        read: Reader,
    ) -> list[Shares] | None:
        """Each term's shares in ``scope`` (its SQL and parameters), ``read(term)`` for those not yet
        kept for this snapshot's state; None when ``table`` has no structure record yet."""
        structure, seq = state(conn, table)
        if structure is None:
            return None
        items = [(*scope, term) for term in terms]
        return self._kept.answers(table, (structure, seq), items, lambda item: read(str(item[-1])))


def ranked(shares: Sequence[Shares], limit: int) -> list[tuple[int, float]]:
    """The OR query's answer from its phrases' shares (in phrase order): (id, -bm25) best first, ties
    on the newer id, at most ``limit`` — FTS5's ``ORDER BY bm25, id DESC`` of the same sums."""
    total: dict[int, float] = {}
    for part in shares:
        for rid, share in zip(part.ids, part.values, strict=True):
            total[rid] = total.get(rid, 0.0) + share
    best = sorted(total.items(), key=lambda item: (-item[1], -item[0]))
    return best[:limit]
