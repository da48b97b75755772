"""Each query term's capped row count in an FTS5 index, kept between recalls while the index is unchanged.

The keyword channels plan which terms they can afford from every term's row count, capped at the
row budget (``storage/keyword_budget.py``). A trigram term is a phrase of several trigrams, and
counting its rows intersects their document lists: about a third of the recalling thread's
keyword work at 100k (docs/decisions.md "Term counts kept while the index is unchanged"). The same
terms come back across questions (speakers' names, common words: 58% of the term lookups of 200
LoCoMo questions had been seen earlier in the same 200), and a count only changes when the index does.

FTS5 rewrites its structure record (``<table>_data`` row 10: the segment list and a write counter
that only grows) with every change it commits, inserts, deletes and merges alike. The record as read
in the caller's snapshot is the key the counts are valid for: a different record (another snapshot,
a write since) drops them all. Counts are only kept from read snapshots that hold no uncommitted
write of their own (``SqliteStore.read`` outside another transaction): pending FTS5 data of an open
write transaction is visible to its queries before the structure record changes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence

from cpersona.storage.sqlite.kept_answers import KeptAnswers

#: FTS5's structure record: rowid 10 of the ``_data`` shadow table (part of its file format).
STRUCTURE_ROWID = 10
#: Terms kept over every index; past this the counts start again (a bound, not an eviction policy).
MAX_KEPT = 8192

Counter = Callable[[str], int]


def structure(conn: sqlite3.Connection, table: str) -> bytes | None:
    """The FTS5 ``table``'s structure record in ``conn``'s snapshot (None when it has none yet)."""
    row = conn.execute(f"SELECT block FROM {table}_data WHERE id = ?", (STRUCTURE_ROWID,)).fetchone()
    return None if row is None else bytes(row[0])


class TermCounts:
    """Capped row counts per (FTS5 table, term, cap), valid for one structure record of each table.

    One per store, shared by its threads' read sessions.
    """

    __slots__ = ("_kept",)

    def __init__(self) -> None:
        self._kept: KeptAnswers[tuple[str, int], int] = KeptAnswers(MAX_KEPT, lambda _count: 1)

    def counts(
        self, conn: sqlite3.Connection, table: str, terms: Sequence[str], cap: int, count: Counter
    ) -> list[int]:
        """Each term's count (``count(term)``, which counts up to ``cap`` in ``conn``'s snapshot), from
        what this snapshot's index state already counted where it can."""
        key = structure(conn, table)
        if key is None:
            return [count(term) for term in terms]
        return self._kept.answers(table, key, [(term, cap) for term in terms], lambda item: count(item[0]))
