"""Whole-database counts and deletions on PostgreSQL (stats, delete_agent_data)."""

from __future__ import annotations

from cpersona.storage.interface import VECTOR_TABLES
from cpersona.storage.postgres.sql import Executor

_COUNTED = ("memories", "episodes", "profiles")


class PgAdmin:
    """``AdminQueries`` on PostgreSQL."""

    __slots__ = ("ex",)

    def __init__(self, ex: Executor) -> None:
        self.ex = ex

    def row_counts(self) -> dict[str, int]:
        """Rows per table: memories, episodes, profiles."""
        return {t: int(self.ex.value(f"SELECT COUNT(*) FROM {t}")) for t in _COUNTED}

    def active_vector_count(self, model_id: str | None) -> int:
        """Memories holding a vector of ``model_id``."""
        return int(
            self.ex.value(
                "SELECT COUNT(*) FROM memories WHERE embedding IS NOT NULL "
                "AND embedding_model IS NOT DISTINCT FROM %s",
                (model_id,),
            )
        )

    def rows_beyond_window(self, model_id: str, window: int) -> dict[str, dict[str, int]]:
        """Per agent and table, rows with vectors of ``model_id`` beyond the ``window`` most recent."""
        outside: dict[str, dict[str, int]] = {}
        for table in VECTOR_TABLES:
            for r in self.ex.all(
                f"SELECT agent_id, COUNT(*) AS n FROM {table} WHERE embedding_model = %s "
                "GROUP BY agent_id HAVING COUNT(*) > %s",
                (model_id, window),
            ):
                outside.setdefault(r["agent_id"], {})[table] = int(r["n"]) - window
        return outside

    def agent_ids(self) -> list[str]:
        """Every agent id owning at least one memory or episode, sorted."""
        rows = self.ex.all("SELECT agent_id FROM memories UNION SELECT agent_id FROM episodes ORDER BY 1")
        return [str(r["agent_id"]) for r in rows]

    def known_agent_ids(self) -> list[str]:
        """Every agent id owning any row at all (memory, episode or profile), sorted."""
        rows = self.ex.all(
            "SELECT agent_id FROM memories UNION SELECT agent_id FROM episodes "
            "UNION SELECT agent_id FROM profiles ORDER BY 1"
        )
        return [str(r["agent_id"]) for r in rows]

    def has_rows(self, agent_id: str) -> bool:
        """Whether ``agent_id`` owns any memory, episode or profile."""
        return bool(
            self.ex.value(
                "SELECT EXISTS (SELECT 1 FROM memories WHERE agent_id = %s) "
                "OR EXISTS (SELECT 1 FROM episodes WHERE agent_id = %s) "
                "OR EXISTS (SELECT 1 FROM profiles WHERE agent_id = %s)",
                (agent_id, agent_id, agent_id),
            )
        )

    def delete_agent(self, agent_id: str) -> dict[str, int]:
        """Delete every memory (locked ones too), episode, profile and queued task of one agent."""
        for table in VECTOR_TABLES:
            self.ex.run(
                f"DELETE FROM pending_memory_tasks WHERE target_table = '{table}' AND target_id IN "
                f"(SELECT id FROM {table} WHERE agent_id = %s)",
                (agent_id,),
            )
        return {
            table: self.ex.run(f"DELETE FROM {table} WHERE agent_id = %s", (agent_id,)) for table in _COUNTED
        }
