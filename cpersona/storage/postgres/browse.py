"""PostgreSQL queries for browsing the store as a person would (``BrowseQueries``, the ``cpersona ui`` pages).

The same answers as ``cpersona.storage.sqlite.browse`` (SQLite): exact axis values, newest first.
"""

from __future__ import annotations

from cpersona.storage.interface import BrowseFilter, Row
from cpersona.storage.postgres.sql import POSTGRES, Executor
from cpersona.storage.row_shapes import (
    EPISODE_COLUMNS,
    MEMORY_COLUMNS,
    episode_dict,
    memory_dict,
    profile_dict,
)
from cpersona.storage.sql_text import browse_filter


class PgBrowse:
    """``BrowseQueries`` over one ``Executor``."""

    __slots__ = ("ex",)

    def __init__(self, ex: Executor) -> None:
        self.ex = ex

    def axes(self) -> list[Row]:
        """Rows per (agent, project, channel): memories, episodes, embedded memories, locked memories."""
        merged: dict[tuple[str, str, str], Row] = {}
        queries = (
            (
                "memories",
                "SELECT agent_id, project_id, channel, COUNT(*) AS n, COUNT(embedding) AS embedded, "
                "COUNT(*) FILTER (WHERE locked) AS locked FROM memories GROUP BY 1, 2, 3",
            ),
            (
                "episodes",
                "SELECT agent_id, project_id, channel, COUNT(*) AS n, COUNT(embedding) AS embedded, "
                "0 AS locked FROM episodes GROUP BY 1, 2, 3",
            ),
        )
        for table, sql in queries:
            for r in self.ex.all(sql):
                key = (r["agent_id"], r["project_id"], r["channel"])
                row = merged.setdefault(
                    key,
                    {
                        "agent_id": key[0],
                        "project_id": key[1],
                        "channel": key[2],
                        "memories": 0,
                        "episodes": 0,
                        "embedded_memories": 0,
                        "locked_memories": 0,
                    },
                )
                row[table] = int(r["n"])
                if table == "memories":
                    row["embedded_memories"] = int(r["embedded"] or 0)
                    row["locked_memories"] = int(r["locked"] or 0)
        return [merged[k] for k in sorted(merged)]

    def profile_counts(self) -> dict[str, int]:
        """Profiles per agent."""
        rows = self.ex.all("SELECT agent_id, COUNT(*) AS n FROM profiles GROUP BY 1")
        return {r["agent_id"]: int(r["n"]) for r in rows}

    def memories(self, f: BrowseFilter, offset: int, limit: int) -> tuple[list[Row], int]:
        """One page of memories newest first, and how many match in all."""
        clause, params = browse_filter(f, POSTGRES, memories=True)
        rows = self.ex.all(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {clause} ORDER BY created_at DESC, id DESC "
            "LIMIT %s OFFSET %s",
            [*params, limit, offset],
        )
        total = int(self.ex.value(f"SELECT COUNT(*) FROM memories WHERE {clause}", params))
        return [memory_dict(r) for r in rows], total

    def episodes(self, f: BrowseFilter, offset: int, limit: int) -> tuple[list[Row], int]:
        """One page of episodes newest first, and how many match in all."""
        clause, params = browse_filter(f, POSTGRES, memories=False)
        rows = self.ex.all(
            f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE {clause} ORDER BY created_at DESC, id DESC "
            "LIMIT %s OFFSET %s",
            [*params, limit, offset],
        )
        total = int(self.ex.value(f"SELECT COUNT(*) FROM episodes WHERE {clause}", params))
        return [episode_dict(r) for r in rows], total

    def profiles(self, agent_id: str) -> list[Row]:
        """Every profile of one agent, newest first."""
        rows = self.ex.all(
            "SELECT * FROM profiles WHERE agent_id = %s ORDER BY updated_at DESC, project_id, user_id",
            (agent_id,),
        )
        return [profile_dict(r) for r in rows]

    def daily(self, agent_id: str | None) -> list[Row]:
        """Memories stored per UTC day (from created_at) and how many of them hold a vector, oldest day first."""
        clause, params = ("agent_id = %s", [agent_id]) if agent_id is not None else ("TRUE", [])
        rows = self.ex.all(
            "SELECT substr(created_at, 1, 10) AS day, COUNT(*) AS n, COUNT(embedding) AS embedded FROM memories "
            f"WHERE {clause} GROUP BY day ORDER BY day",
            params,
        )
        return [{"day": r["day"], "stored": int(r["n"]), "embedded": int(r["embedded"] or 0)} for r in rows]
