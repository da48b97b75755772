"""Deliberate damage to a real CPersona database file, shared by the API, MCP and CLI health tests.

Each function opens the file with plain sqlite3 (as a careless tool or a crash
would), breaks one thing, and returns the ids it touched.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

#: The content cap the damaged databases are checked with (small, so oversize rows stay small).
CAP = 200
NOW = "2026-01-01T00:00:00.000000Z"


def _conn(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 30000")
    return conn


def insert_memory(conn: sqlite3.Connection, agent: str, content: str, **extra: Any) -> int:
    columns = {"agent_id": agent, "content": content, "timestamp": NOW, "created_at": NOW, **extra}
    names = ", ".join(columns)
    marks = ", ".join("?" for _ in columns)
    return int(conn.execute(f"INSERT INTO memories({names}) VALUES ({marks})", list(columns.values())).lastrowid)


def seed(path: Path, agent: str, n: int = 4) -> list[int]:
    """Healthy rows of ``agent`` (inserted through the triggers)."""
    with closing(_conn(path)) as conn:
        return [insert_memory(conn, agent, f"{agent} healthy memory number {i} about the staging server")
                for i in range(n)]


def damage_rows(path: Path, agent: str, *, locked: bool = False) -> dict[str, int]:
    """Row-level damage to ``agent``: oversize, bad JSON, naive timestamp, duplicate (unique index dropped).

    With ``locked`` the damaged rows are locked (a repair must leave them alone).
    """
    lock = 1 if locked else 0
    with closing(_conn(path)) as conn:
        ids = {
            "oversized": insert_memory(conn, agent, f"{agent} long " + "x" * (CAP + 100), locked=lock),
            "bad_json": insert_memory(conn, agent, f"{agent} with broken metadata", metadata="{not json",
                                      locked=lock),
            "naive_ts": insert_memory(conn, agent, f"{agent} with a naive time", timestamp="2024-01-02T03:04:05",
                                      locked=lock),
        }
        conn.execute("DROP INDEX IF EXISTS memories_dedup_content")
        original = insert_memory(conn, agent, f"{agent} said this twice")
        ids["duplicate_original"] = original
        ids["duplicate_copy"] = insert_memory(conn, agent, f"{agent} said this twice", locked=lock)
    return ids


def damage_file(path: Path, agent: str) -> dict[str, int]:
    """File-level damage: a trigger dropped (and a row written without it), an FTS entry removed, an orphan task."""
    with closing(_conn(path)) as conn:
        victim = insert_memory(conn, agent, f"{agent} row whose index entry is deleted")
        conn.execute("INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', ?, ?)",
                     (victim, f"{agent} row whose index entry is deleted"))
        conn.execute("DROP TRIGGER memories_fts_insert")
        unindexed = insert_memory(conn, agent, f"{agent} row written while the trigger was gone")
        conn.execute(
            "INSERT INTO pending_memory_tasks(kind, target_table, target_id, not_before, created_at) "
            "VALUES ('embed', 'memories', 987654, ?, ?)", (NOW, NOW))
    return {"fts_deleted": victim, "unindexed": unindexed}


def row(path: Path, rid: int) -> dict[str, Any]:
    with closing(_conn(path)) as conn:
        conn.row_factory = sqlite3.Row
        found = conn.execute("SELECT * FROM memories WHERE id = ?", (rid,)).fetchone()
        return dict(found) if found else {}
