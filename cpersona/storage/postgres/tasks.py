"""The durable task queue on PostgreSQL, shared by the back-fill workers of every server.

``due`` CLAIMS tasks: ``SELECT ... FOR UPDATE SKIP LOCKED`` picks due rows no
other worker is claiming at that instant, and the same statement pushes their
``not_before`` forward by a lease. Another server's ``due`` therefore skips them
while this worker embeds outside any transaction; ``complete`` deletes them, and
a worker that dies leaves them to reappear when the lease runs out.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from cpersona.core.text import format_ts, parse_ts
from cpersona.storage.postgres.sql import Executor
from cpersona.storage.values import VECTOR_TABLES, Task

#: How long a claimed task stays invisible to other workers (an embedding batch takes seconds).
CLAIM_LEASE = timedelta(minutes=2)


class PgTasks:
    """``TaskQueue`` on PostgreSQL."""

    __slots__ = ("ex",)

    def __init__(self, ex: Executor) -> None:
        self.ex = ex

    def enqueue(self, kind: str, table: str, target_id: int, when: str) -> None:
        """Queue a task once (an identical pending task is kept as it is)."""
        self.ex.run(
            "INSERT INTO pending_memory_tasks(kind, target_table, target_id, not_before, created_at) "
            "VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
            (kind, table, target_id, when, when),
        )

    def enqueue_missing(self, kind: str, model_id: str, dimension: int, when: str) -> int:
        """Queue every row without a vector of this model and dimension."""
        queued = 0
        for table in VECTOR_TABLES:
            queued += self.ex.run(
                "INSERT INTO pending_memory_tasks(kind, target_table, target_id, not_before, created_at) "
                f"SELECT %s, %s, id, %s, %s FROM {table} WHERE embedding IS NULL "
                "OR embedding_model IS DISTINCT FROM %s OR embedding_dim IS DISTINCT FROM %s ORDER BY id "
                "ON CONFLICT DO NOTHING",
                (kind, table, when, when, model_id, dimension),
            )
        return queued

    def due(self, now: str, limit: int) -> list[Task]:
        """Claim up to ``limit`` due tasks, oldest first, skipping those another worker holds."""
        lease_end = format_ts(parse_ts(now) + CLAIM_LEASE)
        rows = self.ex.all(
            "WITH picked AS (SELECT id FROM pending_memory_tasks WHERE not_before <= %s "
            "ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED) "
            "UPDATE pending_memory_tasks t SET not_before = %s FROM picked WHERE t.id = picked.id "
            "RETURNING t.id, t.kind, t.target_table, t.target_id, t.attempts",
            (now, limit, lease_end),
        )
        rows.sort(key=lambda r: r["id"])
        return [
            Task(int(r["id"]), r["kind"], r["target_table"], int(r["target_id"]), int(r["attempts"]))
            for r in rows
        ]

    def complete(self, task_id: int) -> None:
        """Remove a finished task."""
        self.ex.run("DELETE FROM pending_memory_tasks WHERE id = %s", (task_id,))

    def retry_later(self, task_id: int, error: str, not_before: str) -> None:
        """Record a failure and when to try again."""
        self.ex.run(
            "UPDATE pending_memory_tasks SET attempts = attempts + 1, last_error = %s, not_before = %s "
            "WHERE id = %s",
            (error[:500], not_before, task_id),
        )

    def remove_for_target(self, table: str, target_id: int) -> None:
        """Drop tasks of a row that no longer exists."""
        self.ex.run(
            "DELETE FROM pending_memory_tasks WHERE target_table = %s AND target_id = %s", (table, target_id)
        )

    def status(self) -> dict[str, Any]:
        """Depth, tasks that failed at least once, the oldest task, depth per kind, last error."""
        head = (
            self.ex.one(
                "SELECT COUNT(*) AS depth, COUNT(*) FILTER (WHERE attempts > 0) AS retrying, "
                "MIN(created_at) AS oldest FROM pending_memory_tasks"
            )
            or {}
        )
        by_kind = {
            r["kind"]: int(r["n"])
            for r in self.ex.all(
                "SELECT kind, COUNT(*) AS n FROM pending_memory_tasks GROUP BY kind ORDER BY kind"
            )
        }
        last_error = self.ex.value(
            "SELECT last_error FROM pending_memory_tasks WHERE last_error IS NOT NULL ORDER BY id DESC LIMIT 1"
        )
        return {
            "depth": int(head.get("depth") or 0),
            "retrying": int(head.get("retrying") or 0),
            "oldest_task": head.get("oldest"),
            "by_kind": by_kind,
            "last_error": last_error,
        }
