"""``BrowseQueries`` (the ``cpersona ui`` pages) for both engines: one set of statements, one shaping.

Browsing reads with plain SQL that SQLite and PostgreSQL both run (counts by ``COUNT(column)``
and ``COUNT(CASE ...)``, exact filters from ``sql_text``), so the engines differ only in how a
statement is run and how a parameter is marked: each passes its ``fetch`` (a statement and its
parameters in, rows readable by column name out) and its ``Dialect``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cpersona.storage.columns import EPISODE_SHAPE, MEMORY_SHAPE, TableShape, profile_dict
from cpersona.storage.shared_reads import Fetch
from cpersona.storage.sql_text import Dialect, agent_filter, browse_filter
from cpersona.storage.values import BrowseFilter, Row

# Per (agent, project, channel): rows, rows with a vector, locked rows (episodes have no lock).
_AXIS_QUERIES = (
    (
        "memories",
        "SELECT agent_id, project_id, channel, COUNT(*) AS n, COUNT(embedding) AS embedded, "
        "COUNT(CASE WHEN locked THEN 1 END) AS locked FROM memories GROUP BY 1, 2, 3",
    ),
    (
        "episodes",
        "SELECT agent_id, project_id, channel, COUNT(*) AS n, COUNT(embedding) AS embedded, "
        "0 AS locked FROM episodes GROUP BY 1, 2, 3",
    ),
)


class SharedBrowse:
    """``BrowseQueries`` over one engine's ``fetch`` and ``Dialect`` (each engine binds its own)."""

    __slots__ = ("_dialect", "_fetch")

    def __init__(self, fetch: Fetch, dialect: Dialect) -> None:
        self._fetch = fetch
        self._dialect = dialect

    def axes(self) -> list[Row]:
        """Rows per (agent, project, channel): memories, episodes, embedded memories, locked memories."""
        merged: dict[tuple[str, str, str], Row] = {}
        for table, sql in _AXIS_QUERIES:
            for r in self._fetch(sql, ()):
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

    def agents_after(self, after: str | None, limit: int, among: Sequence[str] | None = None) -> list[str]:
        """Up to ``limit`` agents owning a row, after ``after``, in order (each table read through its
        index from ``after`` on, stopping at ``limit`` agents)."""
        if among is not None and not among:
            return []
        m = self._dialect.mark
        where, params = "", []
        if after is not None:
            where, params = f" WHERE agent_id > {m}", [after]
        if among is not None:
            marks = ",".join([m] * len(among))
            where += f"{' AND' if where else ' WHERE'} agent_id IN ({marks})"
            params += list(among)
        parts = [
            f"SELECT agent_id FROM (SELECT DISTINCT agent_id FROM {table}{where} ORDER BY agent_id LIMIT {m}) {table}_page"
            for table in ("memories", "episodes", "profiles")
        ]
        rows = self._fetch(
            f"SELECT agent_id FROM ({' UNION '.join(parts)}) agents ORDER BY agent_id LIMIT {m}",
            [*params, limit, *params, limit, *params, limit, limit],
        )
        return [str(r["agent_id"]) for r in rows]

    def profile_counts(self) -> dict[str, int]:
        """Profiles per agent."""
        rows = self._fetch("SELECT agent_id, COUNT(*) AS n FROM profiles GROUP BY 1", ())
        return {r["agent_id"]: int(r["n"]) for r in rows}

    def memories(self, f: BrowseFilter, offset: int, limit: int) -> tuple[list[Row], int]:
        """One page of memories newest first, and how many match in all."""
        return self._page(MEMORY_SHAPE, browse_filter(f, self._dialect, memories=True), offset, limit)

    def episodes(self, f: BrowseFilter, offset: int, limit: int) -> tuple[list[Row], int]:
        """One page of episodes newest first, and how many match in all."""
        return self._page(EPISODE_SHAPE, browse_filter(f, self._dialect, memories=False), offset, limit)

    def profiles(self, agent_id: str) -> list[Row]:
        """Every profile of one agent, newest first."""
        rows = self._fetch(
            f"SELECT * FROM profiles WHERE agent_id = {self._dialect.mark} "
            "ORDER BY updated_at DESC, project_id, user_id",
            (agent_id,),
        )
        return [profile_dict(r) for r in rows]

    def daily(self, agent_id: str | None) -> list[Row]:
        """Memories stored per UTC day (from created_at) and how many of them hold a vector, oldest day first."""
        clause, params = agent_filter(agent_id, self._dialect)
        rows = self._fetch(
            "SELECT substr(created_at, 1, 10) AS day, COUNT(*) AS n, COUNT(embedding) AS embedded FROM memories "
            f"WHERE {clause} GROUP BY day ORDER BY day",
            params,
        )
        return [{"day": r["day"], "stored": int(r["n"]), "embedded": int(r["embedded"] or 0)} for r in rows]

    def _page(
        self, shape: TableShape, where: tuple[str, list[Any]], offset: int, limit: int
    ) -> tuple[list[Row], int]:
        clause, params = where
        mark = self._dialect.mark
        rows = self._fetch(
            f"SELECT {shape.columns} FROM {shape.table} WHERE {clause} ORDER BY created_at DESC, id DESC "
            f"LIMIT {mark} OFFSET {mark}",
            [*params, limit, offset],
        )
        page = [shape.to_dict(r) for r in rows]
        total = next(iter(self._fetch(f"SELECT COUNT(*) AS n FROM {shape.table} WHERE {clause}", params)))[
            "n"
        ]
        return page, int(total)
