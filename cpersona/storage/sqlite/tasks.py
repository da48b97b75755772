"""The durable task queue (``pending_memory_tasks``) in SQLite.

A task is deleted in the same transaction that records its result, so a
crash in between leaves it queued and the next worker redoes it.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from cpersona.storage.values import VECTOR_TABLES, Task


class SqliteTasks:
    """``TaskQueue`` over one SQLite connection."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def enqueue(self, kind: str, table: str, target_id: int, when: str) -> None:
        """Queue a task once (an identical pending task is kept as it is)."""
        self.conn.execute(
            "INSERT OR IGNORE INTO pending_memory_tasks(kind, target_table, target_id, not_before, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (kind, table, target_id, when, when),
        )

    def enqueue_missing(self, kind: str, model_id: str, dimension: int, when: str) -> int:
        """Queue every row without a vector of this model and dimension (startup, model change)."""
        queued = 0
        for table in VECTOR_TABLES:
            cursor = self.conn.execute(
                "INSERT OR IGNORE INTO pending_memory_tasks(kind, target_table, target_id, not_before, created_at) "
                f"SELECT ?, ?, id, ?, ? FROM {table} WHERE embedding IS NULL "
                "OR embedding_model IS NOT ? OR embedding_dim IS NOT ? ORDER BY id",
                (kind, table, when, when, model_id, dimension),
            )
            queued += cursor.rowcount
        return queued

    def due(self, now: str, limit: int) -> list[Task]:
        """Tasks whose retry time has come, oldest first."""
        rows = self.conn.execute(
            "SELECT id, kind, target_table, target_id, attempts FROM pending_memory_tasks "
            "WHERE not_before <= ? ORDER BY id LIMIT ?",
            (now, limit),
        ).fetchall()
        return [Task(r[0], r[1], r[2], r[3], r[4]) for r in rows]

    def complete(self, task_id: int) -> None:
        """Remove a finished task."""
        self.conn.execute("DELETE FROM pending_memory_tasks WHERE id = ?", (task_id,))

    def retry_later(self, task_id: int, error: str, not_before: str) -> None:
        """Record a failure and when to try again."""
        self.conn.execute(
            "UPDATE pending_memory_tasks SET attempts = attempts + 1, last_error = ?, not_before = ? WHERE id = ?",
            (error[:500], not_before, task_id),
        )

    def remove_for_target(self, table: str, target_id: int) -> None:
        """Drop tasks of a row that no longer exists."""
        self.conn.execute(
            "DELETE FROM pending_memory_tasks WHERE target_table = ? AND target_id = ?", (table, target_id)
        )

    def status(self) -> dict[str, Any]:
        """Depth, tasks that failed at least once, the oldest task, and depth per kind."""
        depth, retrying, oldest = self.conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(attempts > 0), 0), MIN(created_at) FROM pending_memory_tasks"
        ).fetchone()
        by_kind = {
            kind: n
            for kind, n in self.conn.execute(
                "SELECT kind, COUNT(*) FROM pending_memory_tasks GROUP BY kind ORDER BY kind"
            )
        }
        last_error = self.conn.execute(
            "SELECT last_error FROM pending_memory_tasks WHERE last_error IS NOT NULL ORDER BY id DESC LIMIT 1"
        ).fetchone()
        return {
            "depth": int(depth),
            "retrying": int(retrying),
            "oldest_task": oldest,
            "by_kind": by_kind,
            "last_error": last_error[0] if last_error else None,
        }
