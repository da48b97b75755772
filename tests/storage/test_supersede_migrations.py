"""SQLite migration 4 and PostgreSQL migration 5 (supersede links): an older database upgrades with
its rows intact and unsuperseded, and the splice trigger keeps chains whole when a newer row goes."""

from __future__ import annotations

from pathlib import Path

import psycopg
from pg_cluster import PgCluster
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from cpersona.storage.postgres import migrations as pg_migrations
from cpersona.storage.postgres.sql import Executor
from cpersona.storage.postgres.supersede import PgSupersedeLinks
from cpersona.storage.scope import Scope
from cpersona.storage.sqlite.db import Database
from cpersona.storage.sqlite.memories import insert_memory
from cpersona.storage.sqlite.migrations import LATEST_VERSION, MIGRATIONS, current_version, migrate
from cpersona.storage.sqlite.supersede import SqliteSupersedeLinks
from cpersona.storage.values import NewMemory

STAMP = "2026-01-01T00:00:00.000000Z"


def _row(content: str) -> NewMemory:
    return NewMemory("a", "", "", "", content, None, None, STAMP, STAMP)


def test_sqlite_schema_3_file_upgrades_and_splices(tmp_path: Path) -> None:
    old = Database(tmp_path / "m.db")
    assert migrate(old, MIGRATIONS[:3]) == [1, 2, 3]  # a file of the previous release
    with old.write() as conn:
        ids = [insert_memory(conn, _row(f"fact {n}")) for n in range(3)]
    old.close()

    db = Database(tmp_path / "m.db")
    assert migrate(db) == [m.version for m in MIGRATIONS if m.version >= 4]  # numbers may have gaps
    conn = db.connection()
    assert current_version(conn) == LATEST_VERSION
    links = SqliteSupersedeLinks(conn)
    assert links.hidden_ids(Scope(agent_id="a")) == set() and links.successors(ids) == {}
    with db.write() as w:
        SqliteSupersedeLinks(w).mark([ids[0]], ids[1], STAMP)
        SqliteSupersedeLinks(w).mark([ids[1]], ids[2], STAMP)
    assert links.hidden_ids(Scope(agent_id="a")) == {ids[0], ids[1]}
    with db.write() as w:
        w.execute("DELETE FROM memories WHERE id = ?", (ids[1],))
    assert links.successors([ids[0]])[ids[0]].newer == ids[2]  # spliced to the successor
    with db.write() as w:
        w.execute("DELETE FROM memories WHERE id = ?", (ids[2],))
    assert links.successors([ids[0]]) == {} and links.dangling() == []  # current again
    assert migrate(db) == []
    db.close()


def test_postgres_schema_4_database_upgrades_and_splices(pg_cluster: PgCluster) -> None:
    url = pg_cluster.create(template=False)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            assert pg_migrations.migrate(conn, pg_migrations.MIGRATIONS[:4]) == [1, 2, 3, 4]
            ids = [
                int(
                    conn.execute(
                        "INSERT INTO memories(agent_id, content, timestamp, created_at) VALUES ('a', %s, %s, %s) "
                        "RETURNING id",
                        (f"fact {n}", STAMP, STAMP),
                    ).fetchone()[0]
                )
                for n in range(3)
            ]
            applied = pg_migrations.migrate(conn)
            assert applied == [m.version for m in pg_migrations.MIGRATIONS if m.version >= 5]
            assert pg_migrations.migrate(conn) == []
        with ConnectionPool(url, kwargs={"autocommit": True, "row_factory": dict_row}, open=True) as pool:
            links = PgSupersedeLinks(Executor(pool))
            assert links.successors(ids) == {}
            links.mark([ids[0]], ids[1], STAMP)
            links.mark([ids[1]], ids[2], STAMP)
            assert links.hidden_ids(Scope(agent_id="a")) == {ids[0], ids[1]}
            with pool.connection() as conn:
                conn.execute("DELETE FROM memories WHERE id = %s", (ids[1],))
            assert links.successors([ids[0]])[ids[0]].newer == ids[2]
            with pool.connection() as conn:
                conn.execute("DELETE FROM memories WHERE id = %s", (ids[2],))
            assert links.successors([ids[0]]) == {} and links.dangling() == []
    finally:
        pg_cluster.drop(url)
