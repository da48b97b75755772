"""SQLite queries for browsing the store as a person would: agents with counts, filtered pages, a timeline."""

from __future__ import annotations

import sqlite3

from cpersona.storage.interface import BrowseFilter, Row
from cpersona.storage.row_shapes import (
    EPISODE_COLUMNS,
    MEMORY_COLUMNS,
    episode_dict,
    memory_dict,
    profile_dict,
)
from cpersona.storage.sql_text import browse_filter
from cpersona.storage.sqlite.sql import SQLITE


class SqliteBrowse:
    """``BrowseQueries`` over one SQLite connection."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def axes(self) -> list[Row]:
        """Rows per (agent, project, channel): memories, episodes, embedded memories, locked memories."""
        merged: dict[tuple[str, str, str], Row] = {}
        queries = (
            (
                "memories",
                "SELECT agent_id, project_id, channel, COUNT(*), "
                "SUM(embedding IS NOT NULL), SUM(locked) FROM memories GROUP BY 1, 2, 3",
            ),
            (
                "episodes",
                "SELECT agent_id, project_id, channel, COUNT(*), "
                "SUM(embedding IS NOT NULL), 0 FROM episodes GROUP BY 1, 2, 3",
            ),
        )
        for table, sql in queries:
            for agent, project, channel, n, embedded, locked in self.conn.execute(sql):
                row = merged.setdefault(
                    (agent, project, channel),
                    {
                        "agent_id": agent,
                        "project_id": project,
                        "channel": channel,
                        "memories": 0,
                        "episodes": 0,
                        "embedded_memories": 0,
                        "locked_memories": 0,
                    },
                )
                row[table] = int(n)
                if table == "memories":
                    row["embedded_memories"] = int(embedded or 0)
                    row["locked_memories"] = int(locked or 0)
        return [merged[k] for k in sorted(merged)]

    def profile_counts(self) -> dict[str, int]:
        """Profiles per agent."""
        return {a: int(n) for a, n in self.conn.execute("SELECT agent_id, COUNT(*) FROM profiles GROUP BY 1")}

    def memories(self, f: BrowseFilter, offset: int, limit: int) -> tuple[list[Row], int]:
        """One page of memories newest first, and how many match in all."""
        where, params = browse_filter(f, SQLITE, memories=True)
        rows = self.conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {where} ORDER BY created_at DESC, id DESC "
            "LIMIT ? OFFSET ?",
            [*params, limit, offset],
        ).fetchall()
        total = int(self.conn.execute(f"SELECT COUNT(*) FROM memories WHERE {where}", params).fetchone()[0])
        return [memory_dict(r) for r in rows], total

    def episodes(self, f: BrowseFilter, offset: int, limit: int) -> tuple[list[Row], int]:
        """One page of episodes newest first, and how many match in all."""
        where, params = browse_filter(f, SQLITE, memories=False)
        rows = self.conn.execute(
            f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE {where} ORDER BY created_at DESC, id DESC "
            "LIMIT ? OFFSET ?",
            [*params, limit, offset],
        ).fetchall()
        total = int(self.conn.execute(f"SELECT COUNT(*) FROM episodes WHERE {where}", params).fetchone()[0])
        return [episode_dict(r) for r in rows], total

    def profiles(self, agent_id: str) -> list[Row]:
        """Every profile of one agent, newest first."""
        rows = self.conn.execute(
            "SELECT * FROM profiles WHERE agent_id = ? ORDER BY updated_at DESC, project_id, user_id",
            (agent_id,),
        ).fetchall()
        return [profile_dict(r) for r in rows]

    def daily(self, agent_id: str | None) -> list[Row]:
        """Memories stored per UTC day (from created_at) and how many of them hold a vector, oldest day first."""
        where, params = ("agent_id = ?", [agent_id]) if agent_id is not None else ("1", [])
        rows = self.conn.execute(
            f"SELECT substr(created_at, 1, 10) AS day, COUNT(*), SUM(embedding IS NOT NULL) FROM memories "
            f"WHERE {where} GROUP BY day ORDER BY day",
            params,
        ).fetchall()
        return [{"day": d, "stored": int(n), "embedded": int(e or 0)} for d, n, e in rows]
