"""Whole-database counts and deletions in SQLite (stats, delete_agent_data)."""

from __future__ import annotations

import sqlite3

from cpersona.storage.shared_reads import COUNTED_TABLES, AdminReads
from cpersona.storage.sqlite.sql import SQLITE
from cpersona.storage.values import VECTOR_TABLES


class SqliteAdmin(AdminReads):
    """``AdminQueries`` over one SQLite connection."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        super().__init__(conn.execute, SQLITE)
        self.conn = conn

    def active_vector_count(self, model_id: str | None) -> int:
        """Memories holding a vector of ``model_id``."""
        return int(
            self.conn.execute(
                "SELECT COUNT(*) FROM memories WHERE embedding IS NOT NULL AND embedding_model IS ?",
                (model_id,),
            ).fetchone()[0]
        )

    def has_rows(self, agent_id: str) -> bool:
        """Whether ``agent_id`` owns any memory, episode or profile (three indexed probes)."""
        return any(
            self.conn.execute(f"SELECT 1 FROM {table} WHERE agent_id = ? LIMIT 1", (agent_id,)).fetchone()
            for table in COUNTED_TABLES
        )

    def delete_agent(self, agent_id: str) -> dict[str, int]:
        """Delete every memory (locked ones too), episode, profile and queued task of one agent."""
        for table in VECTOR_TABLES:
            self.conn.execute(
                f"DELETE FROM pending_memory_tasks WHERE target_table = '{table}' AND target_id IN "
                f"(SELECT id FROM {table} WHERE agent_id = ?)",
                (agent_id,),
            )
        return {
            table: self.conn.execute(f"DELETE FROM {table} WHERE agent_id = ?", (agent_id,)).rowcount
            for table in COUNTED_TABLES
        }
