"""The durable task queue (``pending_memory_tasks``).

A task is deleted in the same transaction that records its result, so a
crash in between leaves it queued and the next worker redoes it.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

EMBED = "embed"  # compute (or recompute) the vector of one memory or episode


@dataclass(frozen=True)
class Task:
    """One queued unit of work."""

    id: int
    kind: str
    target_table: str
    target_id: int
    attempts: int


def enqueue(conn: sqlite3.Connection, kind: str, table: str, target_id: int, when: str) -> None:
    """Queue a task once (an identical pending task is kept as it is)."""
    conn.execute(
        "INSERT OR IGNORE INTO pending_memory_tasks(kind, target_table, target_id, not_before, created_at) "
        "VALUES (?, ?, ?, ?, ?)",
        (kind, table, target_id, when, when),
    )


def due(conn: sqlite3.Connection, now: str, limit: int) -> list[Task]:
    """Tasks whose retry time has come, oldest first."""
    rows = conn.execute(
        "SELECT id, kind, target_table, target_id, attempts FROM pending_memory_tasks "
        "WHERE not_before <= ? ORDER BY id LIMIT ?",
        (now, limit),
    ).fetchall()
    return [Task(r[0], r[1], r[2], r[3], r[4]) for r in rows]


def complete(conn: sqlite3.Connection, task_id: int) -> None:
    """Remove a finished task."""
    conn.execute("DELETE FROM pending_memory_tasks WHERE id = ?", (task_id,))


def retry_later(conn: sqlite3.Connection, task_id: int, error: str, not_before: str) -> None:
    """Record a failure and when to try again."""
    conn.execute(
        "UPDATE pending_memory_tasks SET attempts = attempts + 1, last_error = ?, not_before = ? WHERE id = ?",
        (error[:500], not_before, task_id),
    )


def remove_for_target(conn: sqlite3.Connection, table: str, target_id: int) -> None:
    """Drop tasks of a row that no longer exists."""
    conn.execute(
        "DELETE FROM pending_memory_tasks WHERE target_table = ? AND target_id = ?", (table, target_id)
    )


def status(conn: sqlite3.Connection) -> dict[str, Any]:
    """Depth, tasks that failed at least once, the oldest task, and depth per kind."""
    depth, retrying, oldest = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(attempts > 0), 0), MIN(created_at) FROM pending_memory_tasks"
    ).fetchone()
    by_kind = {
        kind: n
        for kind, n in conn.execute("SELECT kind, COUNT(*) FROM pending_memory_tasks GROUP BY kind ORDER BY kind")
    }
    last_error = conn.execute(
        "SELECT last_error FROM pending_memory_tasks WHERE last_error IS NOT NULL ORDER BY id DESC LIMIT 1"
    ).fetchone()
    return {
        "depth": int(depth),
        "retrying": int(retrying),
        "oldest_task": oldest,
        "by_kind": by_kind,
        "last_error": last_error[0] if last_error else None,
    }
