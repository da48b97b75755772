"""PostgreSQL migration 7: the same postings, cheaper to make (storage/postgres/postings.py ``_V7``).

A schema-6 database with postings upgrades in place: every posting is kept as it was, the postings'
token is in the C collation with its read index rebuilt, and a row posted under 6 is still unposted
whole by a delete under 7 (its tokens are the ones 7 computes). The new ``cpersona_posted_tsv`` (the
cut of long runs only in a text that holds one) returns the migration-4 function's tsvector for any
text: edge cases around the 250-character cut, and generated texts.
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pg_cluster import PgCluster

from cpersona.storage.postgres import migrations as pg_migrations
from cpersona.storage.postgres.postings import CHUNK_CHARS, read_index_sql

pytestmark = pytest.mark.slow

STAMP = "2024-01-01T00:00:00.000000Z"
# Migration 4's definition of the posted tsvector, inline.
V4_TSV = "to_tsvector('cpersona_tokens'::regconfig, regexp_replace(t, '(\\S{250})', '\\1 ', 'g'))"
EDGES = [
    "",
    "Caroline painted the fence on 2023-05-08, see /home/ana/notes.txt or ana@example.org",
    "x" * (CHUNK_CHARS - 1),
    "y" * CHUNK_CHARS,
    "z" * (CHUNK_CHARS + 1) + " tail",
    "a" * 600 + " " + "b" * 249,
    "東京" * 300,  # a long CJK run, 3 bytes a character
    "word " * 400,  # long, but no long run
    "mixed" + "q" * 251 + "-hyphen-ated " + "https://example.org/" + "p" * 300,
]


def _postings(conn: psycopg.Connection[Any]) -> set[tuple[Any, ...]]:
    return set(
        conn.execute("SELECT token, agent_id, memory_id, project_id, channel, n, dl, dw FROM memory_tokens")
    )


def test_a_schema_6_database_keeps_its_postings_and_sorts_tokens_bytewise(pg_cluster: PgCluster) -> None:
    url = pg_cluster.create(template=False)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            assert pg_migrations.migrate(conn, pg_migrations.MIGRATIONS[:6]) == [1, 2, 3, 4, 5, 6]
            for n, text in enumerate(EDGES[1:]):
                conn.execute(
                    "INSERT INTO memories(agent_id, content, timestamp, created_at) VALUES ('a', %s, %s, %s)",
                    (f"{text} {n}", STAMP, STAMP),
                )
            before = _postings(conn)
            assert len(before) > 20
            assert pg_migrations.migrate(conn, pg_migrations.MIGRATIONS[:7]) == [7]
            assert _postings(conn) == before
            for table in ("memory_tokens", "episode_tokens"):
                collation = conn.execute(
                    "SELECT collation_name FROM information_schema.columns WHERE table_name = %s "
                    "AND column_name = 'token'",
                    [table],
                ).fetchone()
                assert collation == ("C",)
            index, _ = read_index_sql("memories")
            assert conn.execute("SELECT to_regclass(%s) IS NOT NULL", [index]).fetchone() == (True,)
            conn.execute("DELETE FROM memories")  # rows posted under 6, unposted by 7's tokens
            assert conn.execute("SELECT count(*) FROM memory_tokens").fetchone() == (0,)
            assert pg_migrations.migrate(conn, pg_migrations.MIGRATIONS[:7]) == []
    finally:
        pg_cluster.drop(url)


@pytest.fixture(scope="module")
def conn(pg_cluster: PgCluster) -> Any:
    url = pg_cluster.create()
    with psycopg.connect(url, autocommit=True) as c:
        yield c
    pg_cluster.drop(url)


def _same_tsvector(conn: psycopg.Connection[Any], texts: list[str]) -> None:
    rows = conn.execute(
        f"SELECT t, cpersona_posted_tsv(t)::text AS new, {V4_TSV}::text AS old FROM unnest(%s::text[]) t",
        [texts],
    ).fetchall()
    assert len(rows) == len(texts)
    for text, new, old in rows:
        assert new == old, text


def test_the_posted_tsvector_is_migration_4s_at_the_cut(conn: psycopg.Connection[Any]) -> None:
    _same_tsvector(conn, EDGES)


@given(
    st.lists(
        st.text(
            st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
            | st.sampled_from(" \n\t"),
            max_size=700,
        ),
        min_size=1,
        max_size=8,
    )
)
def test_the_posted_tsvector_is_migration_4s_for_any_text(
    conn: psycopg.Connection[Any], texts: list[str]
) -> None:
    _same_tsvector(conn, texts)
