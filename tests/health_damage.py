"""Deliberate damage to a real CPersona database, shared by the API, MCP and CLI health tests.

Each function opens the database directly (plain sqlite3 on a file, psycopg on a
``postgresql://`` URL), as a careless tool or a crash would, breaks one thing, and
returns the ids it touched. SQL is written with ``?`` placeholders and runs on either.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

#: The content cap the damaged databases are checked with (small, so oversize rows stay small).
CAP = 200
NOW = "2026-01-01T00:00:00.000000Z"

Target = Path | str  # a SQLite file, or a PostgreSQL URL


def location(mem: Any) -> Target:
    """Where ``mem``'s data lives: its PostgreSQL URL, or its file."""
    return str(mem.storage.url) if hasattr(mem.storage, "url") else Path(mem.storage.path)


def is_postgres(target: Target) -> bool:
    return isinstance(target, str) and target.startswith("postgresql")


class Raw:
    """One direct connection: ``execute`` (``?`` placeholders) and ``insert`` returning the new id."""

    def __init__(self, conn: Any, postgres: bool) -> None:
        self.conn = conn
        self.postgres = postgres

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        cursor = self.conn.execute(sql.replace("?", "%s") if self.postgres else sql, params)
        if cursor.description is None:
            return []
        return [dict(r) for r in cursor.fetchall()]

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if self.postgres:
            with self.conn.cursor() as cur:
                cur.executemany(sql.replace("?", "%s"), rows)
        else:
            self.conn.executemany(sql, rows)

    def insert(self, table: str, columns: dict[str, Any]) -> int:
        names = ", ".join(columns)
        marks = ", ".join("?" for _ in columns)
        sql = f"INSERT INTO {table}({names}) VALUES ({marks})"
        if self.postgres:
            return int(self.execute(sql + " RETURNING id", list(columns.values()))[0]["id"])
        return int(self.conn.execute(sql, list(columns.values())).lastrowid)


@contextmanager
def connect(target: Target) -> Iterator[Raw]:
    if is_postgres(target):
        with psycopg.connect(str(target), autocommit=True, row_factory=dict_row) as conn:
            yield Raw(conn, True)
        return
    with closing(sqlite3.connect(str(target), isolation_level=None)) as conn:
        conn.execute("PRAGMA busy_timeout = 30000")
        conn.row_factory = sqlite3.Row
        yield Raw(conn, False)


def execute(target: Target, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
    """Run one statement directly on the database."""
    with connect(target) as raw:
        return raw.execute(sql, params)


def insert_memory(raw: Raw, agent: str, content: str, **extra: Any) -> int:
    return raw.insert(
        "memories", {"agent_id": agent, "content": content, "timestamp": NOW, "created_at": NOW, **extra}
    )


def seed(target: Target, agent: str, n: int = 4) -> list[int]:
    """Healthy rows of ``agent`` (inserted through the triggers)."""
    with connect(target) as raw:
        return [
            insert_memory(raw, agent, f"{agent} healthy memory number {i} about the staging server")
            for i in range(n)
        ]


def damage_rows(target: Target, agent: str, *, locked: bool = False) -> dict[str, int]:
    """Row-level damage to ``agent``: oversize, bad JSON, naive timestamp, duplicate (unique index dropped).

    With ``locked`` the damaged rows are locked (a repair must leave them alone).
    """
    with connect(target) as raw:
        ids = {
            "oversized": insert_memory(raw, agent, f"{agent} long " + "x" * (CAP + 100), locked=locked),
            "bad_json": insert_memory(
                raw, agent, f"{agent} with broken metadata", metadata="{not json", locked=locked
            ),
            "naive_ts": insert_memory(
                raw, agent, f"{agent} with a naive time", timestamp="2024-01-02T03:04:05", locked=locked
            ),
        }
        raw.execute("DROP INDEX IF EXISTS memories_dedup_content")
        original = insert_memory(raw, agent, f"{agent} said this twice")
        ids["duplicate_original"] = original
        ids["duplicate_copy"] = insert_memory(raw, agent, f"{agent} said this twice", locked=locked)
    return ids


def damage_file(target: Target, agent: str) -> dict[str, int]:
    """Store-level damage and an orphan task.

    SQLite: a trigger dropped (and a row written without it), an FTS entry removed. PostgreSQL
    keeps its keyword indexes itself, so there the keyword postings index is dropped (a missing schema object).
    """
    with connect(target) as raw:
        task = (
            "INSERT INTO pending_memory_tasks(kind, target_table, target_id, not_before, created_at) "
            "VALUES ('embed', 'memories', 987654, ?, ?)"
        )
        if raw.postgres:
            raw.execute("DROP INDEX memory_tokens_read")
            written = insert_memory(raw, agent, f"{agent} row written while the index was gone")
            raw.execute(task, (NOW, NOW))
            return {"unindexed": written}
        victim = insert_memory(raw, agent, f"{agent} row whose index entry is deleted")
        raw.execute(
            "INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', ?, ?)",
            (victim, f"{agent} row whose index entry is deleted"),
        )
        raw.execute("DROP TRIGGER memories_fts_insert")
        unindexed = insert_memory(raw, agent, f"{agent} row written while the trigger was gone")
        raw.execute(task, (NOW, NOW))
    return {"fts_deleted": victim, "unindexed": unindexed}


def row(target: Target, rid: int) -> dict[str, Any]:
    found = execute(target, "SELECT * FROM memories WHERE id = ?", (rid,))
    return found[0] if found else {}
