"""Keyword indexes of a bulk-loaded batch written in one statement each instead of a trigger per row.

An import writes up to a batch of memories per transaction. With the insert triggers in place,
each row enters the trigram and the word FTS5 index through its own trigger program; measured
at 20k rows that is about 70% of the load time and three times slower than one
``INSERT INTO memories_fts(rowid, content) SELECT id, content FROM memories WHERE id IN (...)``
per index and batch (``benchmarks/bulk_load.py``; docs/decisions.md#bulk-keyword-index).

SQLite cannot switch a trigger off, so the two insert triggers carry a ``WHEN NOT EXISTS (SELECT 1
FROM fts_deferred)`` clause (migration 6): the batch's transaction inserts a row there, writes its
rows, indexes exactly the ids it inserted, and deletes the row again before it commits. Other
connections never see the row (it is never committed) and the schema never changes at import time;
an earlier design dropped and re-created the triggers in the transaction, and a second connection
writing meanwhile could fail with "no such table: memories" (1 run in 10 on a busy core). A crash or
an error rolls the row back together with the batch, so no state with unindexed rows is committed.
Only the memories' insert triggers are deferred; updates and deletes keep theirs.

Each deferred batch also writes its segment with FTS5's incremental merging held back
(``BATCH_MERGE``, set and restored inside the transaction), and the import's end merges what is
left: ``optimize_after_bulk`` after a large import, ``merge_after_bulk`` after a smaller one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

#: (insert trigger, FTS table) pairs the deferral replaces with one set-based insert per batch.
DEFERRED = (("memories_fts_insert", "memories_fts"), ("memories_words_insert", "memories_words"))

#: Fewer memories than this in a batch keep the per-row triggers: the two set-based statements cost more.
MIN_DEFERRED_ROWS = 32


@contextmanager
def deferred_memory_fts(conn: sqlite3.Connection, expected_rows: int) -> Iterator[list[int]]:
    """Inside the caller's write transaction: collect inserted memory ids, index them at the end.

    The caller appends every memory id it inserts to the yielded list. Below ``MIN_DEFERRED_ROWS``
    expected rows (or when a trigger is missing, which ``repair`` restores) nothing is deferred
    and the list is ignored: the triggers index each row as usual.
    """
    ids: list[int] = []
    deferring = False
    if expected_rows >= MIN_DEFERRED_ROWS:
        found = conn.execute(
            "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name IN (?, ?)",
            [name for name, _ in DEFERRED],
        ).fetchone()[0]
        deferring = found == len(DEFERRED)
    if deferring:
        conn.execute("INSERT INTO fts_deferred(held) VALUES (1)")
    try:
        yield ids
    finally:
        # Also on an error: should anyone commit what came before it, the index still matches the rows.
        if deferring and conn.in_transaction:
            _index(conn, ids)
            conn.execute("DELETE FROM fts_deferred")


#: FTS5's own ``automerge`` / ``crisismerge`` values (what an unset table uses).
FTS5_MERGE_DEFAULTS = {"automerge": 4, "crisismerge": 16}

#: Merge settings while a deferred batch writes its segment: no incremental merging (automerge 0),
#: and a level is merged at once only when it holds 64 segments. With FTS5's defaults each row was
#: rewritten once per level of four (log4 of the batches: ~5.5 times at 1M rows in 500-row batches);
#: with these about twice (log64), and the import's end merges what is left (``optimize_after_bulk``
#: or ``merge_after_bulk``). Set inside the batch's transaction and restored before it commits, so no
#: other connection and no crash ever sees them (docs/decisions.md#bulk-keyword-index).
BATCH_MERGE = {"automerge": 0, "crisismerge": 64}

#: Pages of work per FTS5 ``merge`` step in ``merge_after_bulk``, and a bound on the steps per index
#: (FTS5 stops finding work long before: this only guards the write lock against a surprise).
MERGE_STEP_PAGES = 1000
MAX_MERGE_STEPS = 10_000

#: An import that wrote at least this many memories, and at least a quarter of the table, merges the
#: keyword indexes into one segment each at its end (``optimize_after_bulk``).
OPTIMIZE_FROM_ROWS = 5000


def memory_count(conn: sqlite3.Connection) -> int:
    """Rows in the memories table."""
    return int(conn.execute("SELECT count(*) FROM memories").fetchone()[0])


def optimize_after_bulk(conn: sqlite3.Connection, inserted: int, total: int) -> bool:
    """Inside a write transaction: FTS5 ``optimize`` of both memory keyword indexes after a large import.

    Batches leave each index as many small segments (FTS5's automerge keeps their number bounded,
    not one); every keyword query reads each segment's b-tree for each term. Merging them gives the
    same matches and scores (checked on all LoCoMo questions at 100k) and took 28% off the keyword
    channels' CPU there (docs/decisions.md#bulk-keyword-index). It rewrites the whole index (about
    2.4 s at 100k rows here), so only an import that wrote a large share of the table pays for it;
    small imports into a large store leave the merging to automerge. True when it ran.
    """
    if inserted < OPTIMIZE_FROM_ROWS or inserted * 4 < total:
        return False
    for _, table in DEFERRED:
        conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
    return True


def _index(conn: sqlite3.Connection, ids: list[int]) -> None:
    if not ids:
        return
    wanted = ",".join(str(int(i)) for i in ids)  # ints only: no text reaches the statement
    previous = {table: merge_settings(conn, table) for _, table in DEFERRED}
    try:
        for _, table in DEFERRED:
            _set_merge(conn, table, BATCH_MERGE)
            conn.execute(
                f"INSERT INTO {table}(rowid, content) SELECT id, content FROM memories WHERE id IN ({wanted}) ORDER BY id"
            )
        # Opening a savepoint makes FTS5 write its pending terms out as a segment now, under the
        # batch's merge settings; the settings are restored before the transaction commits.
        conn.execute("SAVEPOINT bulk_fts_flush")
        conn.execute("RELEASE bulk_fts_flush")
    finally:
        if conn.in_transaction:
            for table, settings in previous.items():
                _set_merge(conn, table, settings)


def merge_settings(conn: sqlite3.Connection, table: str) -> dict[str, int]:
    """The FTS5 table's committed ``automerge`` and ``crisismerge`` (FTS5's defaults when unset)."""
    stored = dict(conn.execute(f"SELECT k, v FROM {table}_config WHERE k IN ('automerge', 'crisismerge')"))
    return {key: int(stored.get(key, default)) for key, default in FTS5_MERGE_DEFAULTS.items()}


def _set_merge(conn: sqlite3.Connection, table: str, settings: dict[str, int]) -> None:
    for key, value in settings.items():
        conn.execute(f"INSERT INTO {table}({table}, rank) VALUES (?, ?)", (key, int(value)))


def merge_after_bulk(conn: sqlite3.Connection, pages: int = MERGE_STEP_PAGES) -> int:
    """Inside a write transaction: FTS5 ``merge`` steps on both memory indexes until neither has work.

    For an import too small for ``optimize_after_bulk``: its batches wrote their segments without
    incremental merging (``BATCH_MERGE``), so this folds every level holding ``usermerge`` (4) or more
    segments, as automerge would have done along the way. The work is bounded by what the import
    wrote (older levels were already below the threshold). Returns the steps that did work.
    """
    steps = 0
    for _, table in DEFERRED:
        for _step in range(MAX_MERGE_STEPS):
            before = conn.total_changes
            conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('merge', ?)", (pages,))
            if conn.total_changes - before <= 1:  # the command's own row: no segment was merged
                break
            steps += 1
    return steps
