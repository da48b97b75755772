"""Planner statistics for the tables a recall reads: ANALYZE those that have none, before the first search.

Right after a bulk load (an import, the benchmark's loader) the tables hold rows but no column
statistics until autovacuum's first ANALYZE of that database, which can be a minute or more away
(``autovacuum_naptime``). Without statistics PostgreSQL guesses: ``superseded_by IS NOT NULL``
holds for 99.5% of the rows, a posting token matches a handful of rows. Measured at 10k LoCoMo
rows (docs/history/decisions-rounds.md#postgresql-recall-at-10k): the superseded-id lookup then read every row of
the agent through the scope index instead of the (empty) partial index — 10-16 ms per recall — and
the newest fill joined its postings with a nested loop of 100,000 comparisons instead of a hash
join. One ANALYZE of the tables that lack statistics, once per process before its first search,
makes those plans the ones autovacuum's statistics would give.
"""

from __future__ import annotations

import logging

import psycopg
from psycopg import sql

from cpersona.storage.postgres.sql import Executor

log = logging.getLogger(__name__)

#: Every table a recall's statements read (rows, keyword postings and vocabulary, row counts and lengths).
RECALL_TABLES = (
    "memories",
    "episodes",
    "memory_tokens",
    "episode_tokens",
    "keyword_vocab",
    "memory_counts",
    "episode_counts",
    "memory_lengths",
    "episode_lengths",
)


def tables_without_statistics(ex: Executor) -> list[str]:
    """The recall tables the planner has no column statistics for (``pg_stats``; an empty table has none either)."""
    rows = ex.all(
        "SELECT c.relname AS name FROM pg_class c WHERE c.relname = ANY(%s) AND c.relkind = 'r' "
        "AND c.relnamespace = current_schema()::regnamespace "
        "AND NOT EXISTS (SELECT 1 FROM pg_stats s WHERE s.schemaname = current_schema() "
        "AND s.tablename = c.relname) ORDER BY c.relname",
        [list(RECALL_TABLES)],
    )
    return [str(r["name"]) for r in rows]


def gin_indexes(ex: Executor) -> list[str]:
    """The GIN indexes of the recall tables (the vocabulary's trigram index, the episodes' text indexes)."""
    rows = ex.all(
        "SELECT i.relname AS name FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
        "JOIN pg_class t ON t.oid = x.indrelid JOIN pg_am a ON a.oid = i.relam "
        "WHERE a.amname = 'gin' AND t.relname = ANY(%s) AND t.relnamespace = current_schema()::regnamespace "
        "ORDER BY i.relname",
        [list(RECALL_TABLES)],
    )
    return [str(r["name"]) for r in rows]


def refresh_statistics(ex: Executor) -> None:
    """After a bulk load: ANALYZE every recall table and merge the GIN pending lists.

    ``ensure_statistics`` only covers tables that never had statistics, once per process; an import
    into a store that had a few hundred rows leaves statistics that describe those few hundred, and a
    server that imports after its first search would not look again. The import that wrote the rows
    is the one that knows they changed: it refreshes them as its last step (~0.2 s at 20k rows here),
    so the first recall after it is planned on what is there. Failures are logged, never raised.
    """
    _analyze_and_merge(ex, list(RECALL_TABLES))


#: An import refreshes the statistics when it wrote more rows than this share of those already there, plus
#: ``REFRESH_BASE`` (autovacuum's own rule for when a table's statistics are stale: its defaults, 10% + 50).
REFRESH_SHARE = 0.1
REFRESH_BASE = 50


def refresh_due(rows_before: int, rows_written: int) -> bool:
    """Whether an import of ``rows_written`` rows into ``rows_before`` leaves statistics worth refreshing.

    Below autovacuum's threshold the planner's figures still describe the table as well as autovacuum
    would leave them, and an ANALYZE of every recall table (~0.2 s at 20k rows, more at 1M) would be most
    of a small import's time; above it the import refreshes them itself, not a minute later.
    """
    return rows_written > REFRESH_BASE + REFRESH_SHARE * rows_before


def stored_rows(ex: Executor) -> int:
    """Memories and episodes stored (the trigger-kept row counts: no table is scanned)."""
    return int(
        ex.value(
            "SELECT (SELECT COALESCE(sum(rows), 0) FROM memory_counts) "
            "+ (SELECT COALESCE(sum(rows), 0) FROM episode_counts)"
        )
    )


def ensure_statistics(ex: Executor) -> list[str]:
    """ANALYZE every recall table without statistics (an empty one costs nothing) and merge the GIN
    indexes' pending lists; the tables analysed.

    GIN keeps new entries in an unsorted pending list, which a scan reads in full and which the
    planner prices in, until a VACUUM (autovacuum's, after ~1,000 inserts) merges it; a manual
    ANALYZE does not. After a bulk load the vocabulary's trigram index held every token there, and
    the planner matched each term by a sequential scan of the vocabulary (~2 ms a term at 10k)
    instead of the index (0.02 ms). ``gin_clean_pending_list`` merges it without a VACUUM.

    A session that may do neither (read-only, a role that does not own the tables) goes on as it
    is until autovacuum runs: logged, never raised.
    """
    missing = tables_without_statistics(ex)
    return missing if _analyze_and_merge(ex, missing) else []


def _analyze_and_merge(ex: Executor, tables: list[str]) -> bool:
    """ANALYZE these tables and merge every recall GIN index's pending list; False (logged) when this
    session may not."""
    try:
        for name in tables:
            ex.run(sql.SQL("ANALYZE {}").format(sql.Identifier(name)))
        for index in gin_indexes(ex):
            ex.value("SELECT gin_clean_pending_list(%s::regclass)", [index])
    except psycopg.Error as exc:
        log.warning("cannot ANALYZE the recall tables or merge their GIN pending lists: %s", exc)
        return False
    return True
