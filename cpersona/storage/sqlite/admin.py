"""Whole-database counts and deletions in SQLite (stats, delete_agent_data)."""

from __future__ import annotations

import sqlite3

from cpersona.storage.interface import VECTOR_TABLES

_COUNTED = ("memories", "episodes", "profiles")


class SqliteAdmin:
    """``AdminQueries`` over one SQLite connection."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def row_counts(self) -> dict[str, int]:
        """Rows per table: memories, episodes, profiles."""
        return {t: int(self.conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]) for t in _COUNTED}

    def active_vector_count(self, model_id: str | None) -> int:
        """Memories holding a vector of ``model_id``."""
        return int(
            self.conn.execute(
                "SELECT COUNT(*) FROM memories WHERE embedding IS NOT NULL AND embedding_model IS ?",
                (model_id,),
            ).fetchone()[0]
        )

    def rows_beyond_window(self, model_id: str, window: int) -> dict[str, dict[str, int]]:
        """Per agent and table, rows with vectors of ``model_id`` beyond the ``window`` most recent."""
        outside: dict[str, dict[str, int]] = {}
        for table in VECTOR_TABLES:
            for agent, n in self.conn.execute(
                f"SELECT agent_id, COUNT(*) FROM {table} WHERE embedding_model = ? "
                "GROUP BY agent_id HAVING COUNT(*) > ?",
                (model_id, window),
            ):
                outside.setdefault(agent, {})[table] = int(n) - window
        return outside

    def agent_ids(self) -> list[str]:
        """Every agent id owning at least one memory or episode, sorted."""
        rows = self.conn.execute(
            "SELECT agent_id FROM memories UNION SELECT agent_id FROM episodes ORDER BY 1"
        ).fetchall()
        return [str(r[0]) for r in rows]

    def known_agent_ids(self) -> list[str]:
        """Every agent id owning any row at all (memory, episode or profile), sorted."""
        rows = self.conn.execute(
            "SELECT agent_id FROM memories UNION SELECT agent_id FROM episodes "
            "UNION SELECT agent_id FROM profiles ORDER BY 1"
        ).fetchall()
        return [str(r[0]) for r in rows]

    def has_rows(self, agent_id: str) -> bool:
        """Whether ``agent_id`` owns any memory, episode or profile (three indexed probes)."""
        return any(
            self.conn.execute(f"SELECT 1 FROM {table} WHERE agent_id = ? LIMIT 1", (agent_id,)).fetchone()
            for table in _COUNTED
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
            for table in _COUNTED
        }
