"""Whole-database counts and deletions on PostgreSQL (stats, delete_agent_data)."""

from __future__ import annotations

from cpersona.storage.postgres.sql import POSTGRES, Executor
from cpersona.storage.shared_reads import COUNTED_TABLES, AdminReads
from cpersona.storage.values import VECTOR_TABLES


class PgAdmin(AdminReads):
    """``AdminQueries`` on PostgreSQL."""

    __slots__ = ("ex",)

    def __init__(self, ex: Executor) -> None:
        super().__init__(ex.all, POSTGRES)
        self.ex = ex

    def active_vector_count(self, model_id: str | None) -> int:
        """Memories holding a vector of ``model_id``."""
        return int(
            self.ex.value(
                "SELECT COUNT(*) FROM memories WHERE embedding IS NOT NULL "
                "AND embedding_model IS NOT DISTINCT FROM %s",
                (model_id,),
            )
        )

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
            table: self.ex.run(f"DELETE FROM {table} WHERE agent_id = %s", (agent_id,))
            for table in COUNTED_TABLES
        }
