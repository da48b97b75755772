"""SQL text both engines build the same way: the dialect they differ in, LIKE patterns, exact filters.

The engines run the same statements where their SQL agrees; what differs in the pieces
built here is only the placeholder and the boolean literals, so each engine passes its
``Dialect`` (``storage.sqlite.sql.SQLITE``, ``storage.postgres.sql.POSTGRES``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: interface imports scope, which imports this module
    from cpersona.storage.values import BrowseFilter


#: The columns a merge's ``copy`` copies per table: all but ``id`` and ``agent_id`` (the
#: target's), the same on both engines since their tables match column for column.
MERGE_COPY_COLUMNS = {
    "memories": (
        "project_id, channel, msg_id, content, source, metadata, timestamp, created_at, embedding, "
        "embedding_model, embedding_dim, recall_count, last_recalled_at, locked, expires_at, retired_at, "
        "retire_reason"
    ),
    "episodes": (
        "project_id, channel, summary, keywords, start_time, end_time, resolved, created_at, embedding, "
        "embedding_model, embedding_dim"
    ),
}


@dataclass(frozen=True)
class Dialect:
    """How an engine writes a bound parameter and the constants true and false."""

    mark: str
    true: str
    false: str


#: The timestamp columns the health checks read, per table (each must be in ``format_ts``'s form).
TIMESTAMP_COLUMNS = {
    "memories": ("timestamp", "created_at", "last_recalled_at"),
    "episodes": ("created_at", "start_time", "end_time"),
    "profiles": ("updated_at",),
}


@dataclass(frozen=True)
class TimestampScan:
    """One timestamp column to check: the columns a finding needs and their order (locked rows last).

    ``select`` names the row's key (``id``, or the profile key), ``value`` and ``locked``, so each
    engine runs it with its own pattern test and hands every row to ``finding``.
    """

    table: str
    column: str
    select: str
    order: str

    def finding(self, row: Any) -> tuple[str, Any, str, str, bool]:
        """(table, key, column, value, locked) for one selected row (a mapping by column name)."""
        key: Any = (
            (row["agent_id"], row["project_id"], row["user_id"])
            if self.table == "profiles"
            else int(row["id"])
        )
        return self.table, key, self.column, str(row["value"]), bool(row["locked"])


def timestamp_scans(dialect: Dialect) -> Iterator[TimestampScan]:
    """Every timestamp column of ``TIMESTAMP_COLUMNS``, as the engines' malformed-timestamp check reads it."""
    for table, columns in TIMESTAMP_COLUMNS.items():
        key = "agent_id, project_id, user_id" if table == "profiles" else "id"
        locked = "locked" if table == "memories" else f"{dialect.false} AS locked"
        order = "locked, id" if table == "memories" else key
        for column in columns:
            yield TimestampScan(table, column, f"{key}, {column} AS value, {locked}", order)


#: Queued tasks whose target row no longer exists (or whose table is unknown).
ORPHAN_TASK = (
    "(target_table = 'memories' AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = target_id)) OR "
    "(target_table = 'episodes' AND NOT EXISTS (SELECT 1 FROM episodes e WHERE e.id = target_id)) OR "
    "target_table NOT IN ('memories', 'episodes')"
)
#: What a failing-task finding shows of a queued task ``p`` (``table``: the target table).
FAILING_TASK_COLUMNS = (
    'p.id, p.kind, p.target_table AS "table", p.target_id, p.attempts, p.created_at, p.last_error'
)


def failing_task_filter(
    agent: str | None, min_attempts: int, created_before: str, dialect: Dialect
) -> tuple[str, list[Any]]:
    """The condition on ``pending_memory_tasks p`` for tasks tried ``min_attempts`` times or queued
    before ``created_before`` (only those whose target row is ``agent``'s when it is set), and its parameters.
    """
    mark = dialect.mark
    cond = f"(p.attempts >= {mark} OR p.created_at < {mark})"
    params: list[Any] = [min_attempts, created_before]
    if agent is not None:
        cond += (
            " AND ((p.target_table = 'memories' AND EXISTS (SELECT 1 FROM memories m WHERE m.id = p.target_id "
            f"AND m.agent_id = {mark})) OR (p.target_table = 'episodes' AND EXISTS (SELECT 1 FROM episodes e "
            f"WHERE e.id = p.target_id AND e.agent_id = {mark})))"
        )
        params += [agent, agent]
    return cond, params


def like_pattern(term: str) -> str:
    """``%term%`` with LIKE's wildcards escaped (use with ESCAPE '\\')."""
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def equal_to(
    pairs: Iterable[tuple[str, Any]], dialect: Dialect, alias: str = ""
) -> tuple[list[str], list[Any]]:
    """``column = value`` for each (column, value) whose value is not None: (clauses, parameters).

    Exact values, as a person browsing picks one project or channel (recall's scopes are
    ``storage.scope``'s rule, not this).
    """
    prefix = f"{alias}." if alias else ""
    clauses: list[str] = []
    params: list[Any] = []
    for column, value in pairs:
        if value is not None:
            clauses.append(f"{prefix}{column} = {dialect.mark}")
            params.append(value)
    return clauses, params


def conjunction(clauses: list[str], dialect: Dialect) -> str:
    """``clauses`` joined with AND (the dialect's true literal when there are none)."""
    return " AND ".join(clauses) if clauses else dialect.true


def agent_filter(agent_id: str | None, dialect: Dialect, alias: str = "") -> tuple[str, list[Any]]:
    """``agent_id = ?`` for one agent, or true for the whole store (export, the timeline, health)."""
    clauses, params = equal_to([("agent_id", agent_id)], dialect, alias)
    return conjunction(clauses, dialect), params


def browse_filter(f: BrowseFilter, dialect: Dialect, *, memories: bool) -> tuple[str, list[Any]]:
    """The page filter of ``cpersona ui``: exact axis values, embedded or not, locked (memories only)."""
    clauses, params = equal_to(
        (("agent_id", f.agent_id), ("project_id", f.project_id), ("channel", f.channel)), dialect
    )
    if f.embedded is not None:
        clauses.append("embedding IS NOT NULL" if f.embedded else "embedding IS NULL")
    if memories and f.locked is not None:
        clauses.append(f"locked = {dialect.mark}")
        params.append(bool(f.locked))  # a bool binds as 1/0 in SQLite, as BOOLEAN in PostgreSQL
    return conjunction(clauses, dialect), params


def exported_links(agent_id: str | None, dialect: Dialect) -> tuple[str, str, list[Any]]:
    """(FROM ... WHERE, the SELECT list, params) of the links an export carries: both memory ends exported.

    A link to a memory outside the export (another agent's, in a one-agent export) cannot be
    remapped on import, so it stays out of the file.
    """
    source, source_params = agent_filter(agent_id, dialect, "s")
    target, target_params = agent_filter(agent_id, dialect, "t")
    body = (
        "FROM memory_links l JOIN memories s ON s.id = l.from_id LEFT JOIN memories t ON t.id = l.to_id "
        f"WHERE {source} AND (l.to_id IS NULL OR {target})"
    )
    return body, "l.from_id, l.relation, l.to_id, l.entity", [*source_params, *target_params]
