"""SQLite migration 7 and PostgreSQL migration 9 (issue 36 point 3): timestamps written before the fix
with fewer than four year digits ("385-07-25T…") are padded, so period scans and sorting find them;
four-digit timestamps are left as they were."""

from __future__ import annotations

from pathlib import Path

import psycopg
from pg_cluster import PgCluster

from cpersona.storage.postgres import migrations as pg_migrations
from cpersona.storage.sqlite.db import Database
from cpersona.storage.sqlite.migrations import MIGRATIONS, migrate

NOW = "2026-01-01T00:00:00.000000Z"
#: As format_ts wrote them on glibc before the fix, beside an ordinary one.
WRITTEN = ["385-07-25T07:06:40.000000Z", "5-01-01T00:00:00.000000Z", "42-12-31T23:59:59.999999Z", NOW]
PADDED = ["0385-07-25T07:06:40.000000Z", "0005-01-01T00:00:00.000000Z", "0042-12-31T23:59:59.999999Z", NOW]


def test_sqlite_migration_7_pads_short_years(tmp_path: Path) -> None:
    old = Database(tmp_path / "m.db")
    assert migrate(old, MIGRATIONS[:6]) == [1, 2, 3, 4, 5, 6]
    with old.write() as conn:
        for n, stamp in enumerate(WRITTEN):
            conn.execute(
                "INSERT INTO memories(agent_id, content, timestamp, created_at) VALUES ('a', ?, ?, ?)",
                (f"fact {n}", stamp, NOW),
            )
            conn.execute(
                "INSERT INTO episodes(agent_id, summary, keywords, start_time, end_time, created_at) "
                "VALUES ('a', ?, '', ?, ?, ?)",
                (f"episode {n}", stamp, stamp, NOW),
            )
    assert 7 in migrate(old)
    conn = old.connection()
    assert [r[0] for r in conn.execute("SELECT timestamp FROM memories ORDER BY id")] == PADDED
    episodes = conn.execute("SELECT start_time, end_time FROM episodes ORDER BY id").fetchall()
    assert [tuple(r) for r in episodes] == [(p, p) for p in PADDED]
    assert migrate(old) == []
    old.close()


def test_postgres_migration_9_pads_short_years(pg_cluster: PgCluster) -> None:
    url = pg_cluster.create(template=False)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            assert pg_migrations.migrate(conn, pg_migrations.MIGRATIONS[:8]) == list(range(1, 9))
            for n, stamp in enumerate(WRITTEN):
                conn.execute(
                    "INSERT INTO memories(agent_id, content, timestamp, created_at) VALUES ('a', %s, %s, %s)",
                    (f"fact {n}", stamp, NOW),
                )
                conn.execute(
                    "INSERT INTO episodes(agent_id, summary, keywords, start_time, end_time, created_at) "
                    "VALUES ('a', %s, '', %s, %s, %s)",
                    (f"episode {n}", stamp, stamp, NOW),
                )
            assert 9 in pg_migrations.migrate(conn)
            stamps = [r[0] for r in conn.execute("SELECT timestamp FROM memories ORDER BY id")]
            assert stamps == PADDED
            episodes = conn.execute("SELECT start_time, end_time FROM episodes ORDER BY id").fetchall()
            assert [tuple(r) for r in episodes] == [(p, p) for p in PADDED]
            assert pg_migrations.migrate(conn) == []
    finally:
        pg_cluster.drop(url)
