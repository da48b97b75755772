"""PostgreSQL migration 12: bm25's avgdl over every posted row in scope (storage/postgres/lengths.py).

A schema-11 database with rows in several scopes (one still queued by an import) upgrades in place: a
posting's word length becomes every token of its row (FTS5 counts a row's words; schema 11 held the
distinct ones), the length tables start from what its postings hold, writes after it keep them, and the
keyword channels' scores then divide by the mean length of the rows in scope, not of the rows that match
(what FTS5 does with its table), so a ranking no longer depends on how long the matching rows happen to be.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from pg_cluster import PgCluster

from cpersona.storage.postgres import migrations as pg_migrations
from cpersona.storage.postgres.keyword_sql import TRIGRAM, WORDS, PostingsQuery
from cpersona.storage.postgres.store import PgStore
from cpersona.storage.scope import Scope

pytestmark = pytest.mark.slow

STAMP = "2024-01-01T00:00:00.000000Z"


@pytest.fixture
def url(pg_cluster: PgCluster) -> Iterator[str]:
    """A fresh database at the newest schema."""
    made = pg_cluster.create()
    yield made
    pg_cluster.drop(made)


def _insert(conn: psycopg.Connection[Any], agent: str, channel: str, content: str) -> None:
    conn.execute(
        "INSERT INTO memories(agent_id, channel, content, timestamp, created_at) VALUES (%s, %s, %s, %s, %s)",
        (agent, channel, content, STAMP, STAMP),
    )


def _kept(conn: psycopg.Connection[Any]) -> dict[tuple[str, str, str], tuple[int, int, int]]:
    rows = conn.execute(
        "SELECT agent_id, project_id, channel, sum(posted), sum(dl), sum(dw) FROM memory_lengths "
        "GROUP BY 1, 2, 3 HAVING sum(posted) <> 0"
    ).fetchall()
    return {(r[0], r[1], r[2]): (int(r[3]), int(r[4]), int(r[5])) for r in rows}


def _fresh(conn: psycopg.Connection[Any]) -> dict[tuple[str, str, str], tuple[int, int, int]]:
    rows = conn.execute(
        "SELECT agent_id, project_id, channel, count(*), sum(GREATEST(char_length(content) - 2, 1)), "
        "sum((SELECT sum(cardinality(y.positions)) FROM unnest(cpersona_posted_tsv(content)) y)) FROM memories m "
        "WHERE length(cpersona_posted_tsv(content)) > 0 "
        "AND NOT EXISTS (SELECT 1 FROM memory_unposted q WHERE q.memory_id = m.id) GROUP BY 1, 2, 3"
    ).fetchall()
    return {(r[0], r[1], r[2]): (int(r[3]), int(r[4]), int(r[5])) for r in rows}


def _word_lengths(conn: psycopg.Connection[Any], like: str) -> list[int]:
    """The word lengths (``dw``) the postings of the rows whose content is ``LIKE like`` carry."""
    rows = conn.execute(
        "SELECT DISTINCT p.dw FROM memory_tokens p JOIN memories m ON m.id = p.memory_id WHERE m.content LIKE %s",
        [like],
    ).fetchall()
    return [int(r[0]) for r in rows]


def test_a_schema_11_database_starts_its_lengths_from_its_postings(pg_cluster: PgCluster) -> None:
    url = pg_cluster.create(template=False)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            assert pg_migrations.migrate(conn, pg_migrations.MIGRATIONS[:11]) == list(range(1, 12))
            _insert(conn, "a", "", "Caroline painted the fence on 2023-05-08")
            _insert(conn, "a", "", "a much longer note about the garden, the fence and the shed roof")
            _insert(conn, "a", "slack", "deploy runbook lives in ops/deploy.md")
            _insert(conn, "b", "", "東京タワーに行った")
            _insert(conn, "b", "", "!!! ???")  # no token: posted nowhere, counted nowhere
            with conn.transaction():  # an import's queued row: no posting yet
                conn.execute("SET LOCAL cpersona.defer_postings = on")
                _insert(conn, "a", "", "queued by an import that has not drained")
            _insert(conn, "a", "", "the fence, the fence and the shed")  # "the" three times, "fence" twice
            assert _word_lengths(conn, "the fence%") == [4]  # schema 11: the row's distinct tokens
            assert pg_migrations.migrate(conn, pg_migrations.MIGRATIONS) == [12]
            assert _word_lengths(conn, "the fence%") == [7]  # schema 12: every token, as FTS5 counts words
            assert _kept(conn) == _fresh(conn)
            assert _kept(conn)[("a", "", "")][0] == 3
            # Writes under 12 keep them: an edit, a move, a delete, the queued row drained by an edit.
            conn.execute("UPDATE memories SET content = 'short' WHERE content LIKE 'Caroline%'")
            conn.execute("UPDATE memories SET agent_id = 'b' WHERE channel = 'slack'")
            conn.execute("DELETE FROM memories WHERE content LIKE '東京%'")
            conn.execute("UPDATE memories SET content = 'drained at last' WHERE content LIKE 'queued%'")
            _insert(conn, "c", "", "a new agent's first row")
            assert _kept(conn) == _fresh(conn)
            conn.execute("TRUNCATE memories, memory_links, memory_blocks")
            assert _kept(conn) == {}
    finally:
        pg_cluster.drop(url)


def test_avgdl_is_the_mean_of_the_rows_in_scope_not_of_the_matching_ones(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        _insert(conn, "a", "", "fence painted")
        _insert(conn, "a", "", "x" * 400 + " a long row that does not hold the query's word")
        _insert(conn, "a", "", "y" * 800 + " another long row")
        _insert(conn, "other", "", "fence " + "z" * 5000)  # another agent: not in the scope
        lengths = [len("fence painted"), len("x" * 400) + 47, len("y" * 800) + 17]
        assert conn.execute("SELECT char_length(content) FROM memories WHERE agent_id = 'a' ORDER BY id").fetchall() == [
            (n,) for n in lengths
        ]  # fmt: skip
        query = PostingsQuery("memories", TRIGRAM, Scope("a"))
        avgdl = conn.execute(query.avgdl[0], query.avgdl[1]).fetchone()[0]
        assert avgdl == pytest.approx(sum(n - 2 for n in lengths) / 3)
        words = PostingsQuery("memories", WORDS, Scope("a"))
        every_token = conn.execute(  # every token, as FTS5 counts a row's words
            "SELECT avg((SELECT sum(cardinality(y.positions)) FROM unnest(cpersona_posted_tsv(content)) y)) "
            "FROM memories WHERE agent_id = 'a'"
        ).fetchone()[0]
        assert conn.execute(words.avgdl[0], words.avgdl[1]).fetchone()[0] == pytest.approx(float(every_token))
        # bm25 of the one matching row, with the scope's mean length (FTS5's k1 1.2, b 0.75): it is
        # shorter than the mean, so it scores above its idf (with the matching rows' own mean, its
        # length would be the mean and the score exactly its idf).
        store = PgStore(url)
        try:
            with store.read() as session:
                terms = query.resolve(session.ex, ["fence"], cap=None)
                ((row, score),) = query.bm25(session.ex, dict(enumerate(terms)), 10)
        finally:
            store.close()
        n_rows, df, tf, dl = 3, 1, 1, lengths[0] - 2
        idf = max(math.log((n_rows - df + 0.5) / (df + 0.5)), 1e-6)
        mean = sum(n - 2 for n in lengths) / 3
        expected = idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / mean))
        assert score == pytest.approx(expected)
        assert row == conn.execute("SELECT id FROM memories WHERE content = 'fence painted'").fetchone()[0]


def test_edits_fold_their_deltas_and_a_fold_keeps_the_sums(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        _insert(conn, "a", "", "the first text")
        for n in range(1000):  # each edit adds two deltas; about one in 64 folds its key
            conn.execute("UPDATE memories SET content = %s", [f"edit {n} of the row, {'word ' * (n % 7)}"])
        assert _kept(conn) == _fresh(conn)
        deltas = conn.execute("SELECT count(*) FROM memory_lengths").fetchone()[0]
        assert deltas < 2 * 1000 + 1  # folded at least once (unfolded: 2,001 rows; P(no fold) ~ 1e-7)
        conn.execute("SELECT cpersona_settle_memory_lengths('a', '', '')")
        assert conn.execute("SELECT count(*) FROM memory_lengths").fetchone()[0] == 1
        assert _kept(conn) == _fresh(conn)
