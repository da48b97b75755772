"""The first search prepares what a bulk load leaves unprepared: statistics, GIN pending lists.

``storage/postgres/statistics.py`` (docs/history/decisions-rounds.md#postgresql-recall-at-10k); the plans it
protects are checked in test_pg_plans.py. Here: what it analyses and merges, once per process, and
that a role which may not do either gets a logged warning, never a failed recall.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import numpy as np
import psycopg
import pytest
from pg_cluster import PgCluster
from psycopg import sql
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from cpersona.core.text import format_ts, utc_now
from cpersona.storage.postgres.sql import Executor
from cpersona.storage.postgres.statistics import (
    RECALL_TABLES,
    ensure_statistics,
    gin_indexes,
    tables_without_statistics,
)
from cpersona.storage.postgres.store import PgStore
from cpersona.storage.scope import Scope
from cpersona.storage.values import NewMemory, VectorQuery
from cpersona.storage.vectors import to_blob

MODEL, DIM = "test-8", 8


def _pending_pages(url: str) -> int:
    """Pages the vocabulary's trigram index still holds in its pending list (merging them reports the count)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("BEGIN")
        row = conn.execute("SELECT gin_clean_pending_list('keyword_vocab_trgm'::regclass)").fetchone()
        conn.execute("ROLLBACK")  # count, leave as it was
        assert row is not None
        return int(row[0])


@pytest.fixture
def loaded(pg_cluster: PgCluster) -> Iterator[str]:
    """A database holding 300 memories with vectors, as a bulk load leaves it (autovacuum off)."""
    url = pg_cluster.create()
    PgStore(url).close()
    with psycopg.connect(url, autocommit=True) as conn:
        for table in RECALL_TABLES:
            conn.execute(
                sql.SQL("ALTER TABLE {} SET (autovacuum_enabled = off)").format(sql.Identifier(table))
            )
    store = PgStore(url)
    rng = np.random.default_rng(0)
    now = format_ts(utc_now())
    with store.write() as session:
        for i in range(300):
            vector = rng.normal(size=DIM).astype(np.float32)
            session.memories.insert(
                NewMemory("a", "", "", "", f"note {i} about word{i % 37} and w{i}", None, None, now, now,
                          to_blob(vector / np.linalg.norm(vector)), MODEL, DIM)
            )  # fmt: skip
    store.close()
    yield url
    pg_cluster.drop(url)


def test_the_first_search_analyses_and_merges_once_per_process(loaded: str) -> None:
    store = PgStore(loaded)
    try:
        ex = store.session().ex
        assert {"memories", "memory_tokens", "keyword_vocab", "memory_counts", "memory_lengths"} <= set(
            tables_without_statistics(ex)
        )
        assert _pending_pages(loaded) > 0
        query = VectorQuery(np.ones(DIM, dtype=np.float32) / np.sqrt(DIM), MODEL, DIM)
        with store.read() as session:
            assert session.vector_search.nearest("memories", query, Scope("a"), 5, window=None)
        # Only the tables without a row are left without statistics (ANALYZE writes none for them).
        assert set(tables_without_statistics(ex)) == {
            "episodes",
            "episode_tokens",
            "episode_counts",
            "episode_lengths",
        }
        assert _pending_pages(loaded) == 0
        assert "keyword_vocab_trgm" in gin_indexes(ex)
        with psycopg.connect(loaded, autocommit=True) as conn:  # nothing analysed a second time
            before = conn.execute(
                "SELECT last_analyze FROM pg_stat_user_tables WHERE relname = 'memories'"
            ).fetchone()
        with store.read() as session:
            session.vector_search.nearest("episodes", query, Scope("a"), 5, window=None)
            session.vector_search.nearest("memories", query, Scope("a"), 5, window=None)
        with psycopg.connect(loaded, autocommit=True) as conn:
            after = conn.execute(
                "SELECT last_analyze FROM pg_stat_user_tables WHERE relname = 'memories'"
            ).fetchone()
        assert before == after
    finally:
        store.close()


def test_a_role_that_may_not_prepare_gets_a_warning_not_an_error(
    loaded: str, caplog: pytest.LogCaptureFixture
) -> None:
    with psycopg.connect(loaded, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS cpersona_reader")
        conn.execute("CREATE ROLE cpersona_reader LOGIN")
        conn.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO cpersona_reader")
    reader_url = loaded.replace("postgres:@", "cpersona_reader:@", 1)
    assert reader_url != loaded
    pool: ConnectionPool = ConnectionPool(
        reader_url, min_size=1, max_size=1, open=False, kwargs={"autocommit": True, "row_factory": dict_row}
    )
    try:
        pool.open(wait=True)
        with caplog.at_level(logging.WARNING, logger="cpersona.storage.postgres.statistics"):
            assert ensure_statistics(Executor(pool)) == []
        assert "cannot ANALYZE" in caplog.text
    finally:
        pool.close()
        with psycopg.connect(loaded, autocommit=True) as conn:
            conn.execute("REVOKE ALL ON ALL TABLES IN SCHEMA public FROM cpersona_reader")
            conn.execute("DROP ROLE cpersona_reader")
