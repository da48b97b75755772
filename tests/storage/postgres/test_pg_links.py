"""PostgreSQL: declared associations' migration (6) fills a gap, and links follow deletes by foreign key."""

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


def test_migration_6_runs_first_and_a_later_5_still_applies(pg_url: str) -> None:
    assert [m.version for m in MIGRATIONS][-2:] == [4, 6]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert migrate(conn) == [1, 2, 3, 4, 6]
        late = Migration(
            5, "the other branch's step", lambda c: c.execute("ALTER TABLE profiles ADD COLUMN note TEXT")
        )
        merged = tuple(sorted((*MIGRATIONS, late), key=lambda m: m.version))
        assert migrate(conn, merged) == [5]
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
