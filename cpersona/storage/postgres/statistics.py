"""Planner statistics for the tables a recall reads: ANALYZE those that have none, before the first search.

Right after a bulk load (an import, the benchmark's loader) the tables hold rows but no column
statistics until autovacuum's first ANALYZE of that database, which can be a minute or more away
(``autovacuum_naptime``). Without statistics PostgreSQL guesses: ``superseded_by IS NOT NULL``
holds for 99.5% of the rows, a posting token matches a handful of rows. Measured at 10k LoCoMo
rows (docs/decisions.md#postgresql-recall-at-10k): the superseded-id lookup then read every row of
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

#: Every table a recall's statements read (rows, keyword postings and vocabulary, row counts).
RECALL_TABLES = (
    "memories",
    "episodes",
    "memory_tokens",
    "episode_tokens",
    "keyword_vocab",
    "memory_counts",
    "episode_counts",
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


def ensure_statistics(ex: Executor) -> list[str]:
    """ANALYZE every recall table without statistics (an empty one costs nothing); the tables analysed.

    A server that may not ANALYZE (a read-only session, a role that does not own the tables) keeps
    planning without statistics until autovacuum runs: logged, never raised.
    """
    missing = tables_without_statistics(ex)
    for name in missing:
        try:
            ex.run(sql.SQL("ANALYZE {}").format(sql.Identifier(name)))
        except psycopg.Error as exc:
            log.warning(
                "cannot ANALYZE %s (recalls plan without statistics until autovacuum does): %s", name, exc
            )
            return []
    return missing
