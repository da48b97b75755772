"""Schema migrations: fresh file, re-open, refusal of newer schemas, atomic steps."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from cpersona.errors import SchemaTooNew
from cpersona.storage.sqlite.db import Database
from cpersona.storage.sqlite.migrations import LATEST_VERSION, MIGRATIONS, Migration, current_version, migrate


def test_fresh_file_gets_every_table_in_wal(tmp_path: Path) -> None:
    db = Database(tmp_path / "m.db")
    assert migrate(db) == [m.version for m in MIGRATIONS]
    conn = db.connection()
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    for table in (
        "memories",
        "episodes",
        "profiles",
        "pending_memory_tasks",
        "schema_version",
        "memories_fts",
        "memories_words",
        "episodes_fts",
    ):
        assert table in names
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] > 0
    assert current_version(conn) == LATEST_VERSION
    db.close()


def test_reopen_is_idempotent(tmp_path: Path) -> None:
    db = Database(tmp_path / "m.db")
    migrate(db)
    db.connection().execute(
        "INSERT INTO memories(agent_id, content, timestamp, created_at) VALUES ('a', 'kept', 't', 't')"
    )
    db.close()
    again = Database(tmp_path / "m.db")
    assert migrate(again) == []
    assert again.connection().execute("SELECT content FROM memories").fetchone()[0] == "kept"
    assert again.connection().execute("SELECT COUNT(*) FROM schema_version").fetchone()[0] == len(MIGRATIONS)
    again.close()


def test_newer_schema_is_refused_and_left_untouched(tmp_path: Path) -> None:
    db = Database(tmp_path / "m.db")
    migrate(db)
    db.connection().execute(
        "INSERT INTO schema_version(version, description, applied_at) VALUES (?, 'future', 'now')",
        (LATEST_VERSION + 1,),
    )
    db.close()
    again = Database(tmp_path / "m.db")
    with pytest.raises(SchemaTooNew, match=f"schema version {LATEST_VERSION + 1}"):
        migrate(again)
    assert current_version(again.connection()) == LATEST_VERSION + 1
    again.close()


def test_failed_migration_rolls_back_whole_step(tmp_path: Path) -> None:
    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE half_done (x)")
        raise RuntimeError("boom")

    db = Database(tmp_path / "m.db")
    steps = (*MIGRATIONS, Migration(LATEST_VERSION + 1, "broken", broken))
    with pytest.raises(RuntimeError):
        migrate(db, steps)
    conn = db.connection()
    assert current_version(conn) == LATEST_VERSION
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'half_done'").fetchone() is None
    db.close()


def test_new_migration_applies_on_existing_file(tmp_path: Path) -> None:
    db = Database(tmp_path / "m.db")
    migrate(db)
    extra = Migration(
        LATEST_VERSION + 1, "add a column", lambda c: c.execute("ALTER TABLE profiles ADD COLUMN note TEXT")
    )
    assert migrate(db, (*MIGRATIONS, extra)) == [LATEST_VERSION + 1]
    assert migrate(db, (*MIGRATIONS, extra)) == []
    cols = [r[1] for r in db.connection().execute("PRAGMA table_info(profiles)")]
    assert "note" in cols
    db.close()


def test_dedup_probes_use_the_unique_indexes(tmp_path: Path) -> None:
    from cpersona.storage.sqlite.memories import NewMemory, SqliteMemories

    db = Database(tmp_path / "m.db")
    migrate(db)
    conn = db.connection()
    plans: list[str] = []
    probe = NewMemory("a", "", "", "m1", "text", None, None, "t", "t")
    original_execute = conn.execute

    class Spy:
        def execute(self, sql: str, params: tuple = ()) -> sqlite3.Cursor:
            plans.extend(r[3] for r in original_execute("EXPLAIN QUERY PLAN " + sql, params))
            return original_execute(sql, params)

    SqliteMemories(Spy()).find_duplicate(probe)  # type: ignore[arg-type]
    assert any("memories_dedup_msg_id" in p for p in plans), plans
    assert any("memories_dedup_content" in p for p in plans), plans
    db.close()


def test_unusable_paths_fail_with_one_clear_error(tmp_path: Path) -> None:
    from cpersona.errors import DatabaseUnavailable

    not_sqlite = tmp_path / "notes.txt"
    not_sqlite.write_text("this is not a database, but a shopping list")
    with pytest.raises(DatabaseUnavailable, match="cannot open the database .*notes.txt"):
        Database(not_sqlite)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(DatabaseUnavailable, match="CPERSONA_DB_PATH"):
        Database(blocker / "sub" / "memory.db")
    assert not_sqlite.read_text().startswith("this is not a database")


def test_a_gap_in_the_numbers_is_filled_when_the_missing_step_arrives(tmp_path: Path) -> None:
    # Branches take numbers apart: a file may get step N+2 before N+1 exists; N+1 must still run later.
    latest = MIGRATIONS[-1].version
    db = Database(tmp_path / "m.db")
    assert migrate(db) == [m.version for m in MIGRATIONS]
    ahead = Migration(
        latest + 2, "a branch's step", lambda c: c.execute("ALTER TABLE profiles ADD COLUMN ahead TEXT")
    )
    assert migrate(db, (*MIGRATIONS, ahead)) == [latest + 2]
    late = Migration(
        latest + 1,
        "the other branch's step",
        lambda c: c.execute("ALTER TABLE profiles ADD COLUMN note TEXT"),
    )
    merged = (*MIGRATIONS, late, ahead)
    assert migrate(db, merged) == [latest + 1]
    assert migrate(db, merged) == []
    columns = [r[1] for r in db.connection().execute("PRAGMA table_info(profiles)")]
    assert "note" in columns and "ahead" in columns
    assert current_version(db.connection()) == latest + 2
    db.close()
