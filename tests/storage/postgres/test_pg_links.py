"""PostgreSQL: a migration number skipped by a branch still applies later, and links follow deletes by foreign key."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from pg_cluster import PgCluster

from cpersona.storage.postgres.migrations import MIGRATIONS, Migration, migrate

pytestmark = pytest.mark.slow


@pytest.fixture
def pg_url(pg_cluster: PgCluster) -> Iterator[str]:
    url = pg_cluster.create(template=False)
    yield url
    pg_cluster.drop(url)


def test_a_later_step_runs_first_and_the_missing_one_still_applies(pg_url: str) -> None:
    latest = MIGRATIONS[-1].version
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert migrate(conn) == [m.version for m in MIGRATIONS]
        ahead = Migration(
            latest + 2, "a branch's step", lambda c: c.execute("ALTER TABLE profiles ADD COLUMN ahead TEXT")
        )
        assert migrate(conn, (*MIGRATIONS, ahead)) == [latest + 2]
        late = Migration(
            latest + 1,
            "the other branch's step",
            lambda c: c.execute("ALTER TABLE profiles ADD COLUMN note TEXT"),
        )
        merged = (*MIGRATIONS, late, ahead)
        assert migrate(conn, merged) == [latest + 1]
        assert migrate(conn, merged) == []
        # the foreign keys take a memory's links with it, both directions
        ids = [
            conn.execute(
                "INSERT INTO memories(agent_id, content, timestamp, created_at) VALUES ('a', %s, 't', 't') RETURNING id",
                (text,),
            ).fetchone()[0]
            for text in ("one", "two", "three")
        ]
        conn.execute(
            "INSERT INTO memory_links(from_id, relation, to_id, created_at) VALUES (%s, 'r', %s, 't'), (%s, 'r', %s, 't')",
            (ids[0], ids[1], ids[1], ids[2]),
        )
        conn.execute("DELETE FROM memories WHERE id = %s", (ids[1],))
        assert conn.execute("SELECT COUNT(*) FROM memory_links").fetchone()[0] == 0
