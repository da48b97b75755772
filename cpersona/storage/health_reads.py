"""The ``HealthQueries`` both engines answer with the same statement, written once.

The queue, the vector window, the oversized-memory and the timestamp questions read plain columns with SQL that
SQLite and PostgreSQL both run; each engine's health class inherits these and passes its
``fetch`` and ``Dialect`` (the questions that need an engine's own functions - FTS5 shadow
tables, pgvector headers, JSON and pattern tests - stay in ``sqlite/health.py`` and
``postgres/health.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cpersona.storage.shared_reads import Fetch, first, rows_outside_window
from cpersona.storage.sql_text import (
    FAILING_TASK_COLUMNS,
    ORPHAN_TASK,
    Dialect,
    failing_task_filter,
    timestamp_scans,
)


class HealthReads:
    """Part of ``HealthQueries`` over one engine's ``fetch`` and ``Dialect``."""

    __slots__ = ("_dialect", "_fetch")

    def __init__(self, fetch: Fetch, dialect: Dialect) -> None:
        self._fetch = fetch
        self._dialect = dialect

    def _count(self, sql: str, params: list[Any] | tuple[Any, ...] = ()) -> int:
        row = first(self._fetch, sql, params)
        return 0 if row is None else int(row["n"])

    def _agent(self, agent: str | None) -> tuple[str, list[Any]]:
        return (f" AND agent_id = {self._dialect.mark}", [agent]) if agent is not None else ("", [])

    def _not_a_timestamp(self, column: str) -> tuple[str, list[Any]]:
        """The engine's test that ``column`` is not in ``format_ts``'s stored form, and its parameters."""
        raise NotImplementedError  # each engine's pattern test (GLOB on SQLite, a regex on PostgreSQL)

    def stored_texts(
        self, table: str, columns: Sequence[str], agent: str | None, after: int, limit: int
    ) -> list[dict[str, Any]]:
        """Rows of ``table`` with ``id`` above ``after``, by id: ``id`` and the raw stored ``columns``."""
        assert table in ("memories", "episodes") and all(c.isidentifier() for c in columns)
        where, params = self._agent(agent)
        mark = self._dialect.mark
        sql = (
            f"SELECT id, {', '.join(columns)} FROM {table} WHERE id > {mark}{where} ORDER BY id LIMIT {mark}"
        )
        return [{k: r[k] for k in ("id", *columns)} for r in self._fetch(sql, [after, *params, limit])]

    def malformed_timestamps(
        self, agent: str | None, limit: int
    ) -> tuple[int, list[tuple[str, Any, str, str, bool]]]:
        """Timestamps not in the stored form: (count, [(table, key, column, value, locked)]).

        ``key`` is the row id, or (agent, project, user) for profiles.
        """
        where, params = self._agent(agent)
        found: list[tuple[str, Any, str, str, bool]] = []
        count = 0
        for scan in timestamp_scans(self._dialect):
            test, test_params = self._not_a_timestamp(scan.column)
            cond = f"{scan.column} IS NOT NULL AND {test}{where}"
            count += self._count(
                f"SELECT COUNT(*) AS n FROM {scan.table} WHERE {cond}", [*test_params, *params]
            )
            for r in self._fetch(
                f"SELECT {scan.select} FROM {scan.table} WHERE {cond} ORDER BY {scan.order} LIMIT {self._dialect.mark}",
                [*test_params, *params, limit],
            ):
                found.append(scan.finding(r))
        return count, found

    def queue_depth(self) -> int:
        """Number of queued tasks."""
        return self._count("SELECT COUNT(*) AS n FROM pending_memory_tasks")

    def rows_outside_window(
        self, agent: str | None, model_id: str | None, window: int
    ) -> dict[str, dict[str, int]]:
        """Per agent and table, vector rows beyond the newest ``window`` (vector search never sees them)."""
        return rows_outside_window(self._fetch, self._dialect, agent, model_id, window)

    def oversized_memories(
        self, agent: str | None, cap: int, limit: int
    ) -> tuple[int, list[tuple[int, int, bool]]]:
        """Memories longer than ``cap`` characters: (count, [(id, length, locked)])."""
        m = self._dialect.mark
        where, params = self._agent(agent)
        cond = f"length(content) > {m}{where}"
        count = self._count(f"SELECT COUNT(*) AS n FROM memories WHERE {cond}", [cap, *params])
        rows = self._fetch(
            f"SELECT id, length(content) AS n, locked FROM memories WHERE {cond} ORDER BY locked, id LIMIT {m}",
            [cap, *params, limit],
        )
        return count, [(int(r["id"]), int(r["n"]), bool(r["locked"])) for r in rows]

    def orphan_tasks(self, limit: int) -> tuple[int, list[int]]:
        """Queued tasks whose target row no longer exists (or whose table is unknown)."""
        count = self._count(f"SELECT COUNT(*) AS n FROM pending_memory_tasks WHERE {ORPHAN_TASK}")
        rows = self._fetch(
            f"SELECT id FROM pending_memory_tasks WHERE {ORPHAN_TASK} ORDER BY id LIMIT {self._dialect.mark}",
            (limit,),
        )
        return count, [int(r["id"]) for r in rows]

    def failing_tasks(
        self, agent: str | None, min_attempts: int, created_before: str, limit: int
    ) -> tuple[int, list[dict[str, Any]]]:
        """Tasks that failed ``min_attempts`` times or wait since before ``created_before``."""
        cond, params = failing_task_filter(agent, min_attempts, created_before, self._dialect)
        count = self._count(f"SELECT COUNT(*) AS n FROM pending_memory_tasks p WHERE {cond}", params)
        rows = self._fetch(
            f"SELECT {FAILING_TASK_COLUMNS} FROM pending_memory_tasks p WHERE {cond} ORDER BY p.id "
            f"LIMIT {self._dialect.mark}",
            [*params, limit],
        )
        names = ("id", "kind", "table", "target_id", "attempts", "created_at", "last_error")
        return count, [{name: r[name] for name in names} for r in rows]
