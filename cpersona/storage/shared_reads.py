"""Reads both engines run with the same statement: profiles, the episode boundary, table rows in scope.

The statements differ between SQLite and PostgreSQL only in the parameter mark, so each engine
passes its ``fetch`` (a statement and its parameters in, rows readable by column name out) and
its ``Dialect``; the isolation rule comes from ``Scope.where`` as everywhere else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from cpersona.storage.interface import Row
from cpersona.storage.row_shapes import RowLike, TableShape, profile_dict
from cpersona.storage.scope import Scope
from cpersona.storage.sql_text import Dialect

#: Run one statement with its parameters; the rows it returns, read by column name.
Fetch = Callable[[str, Sequence[Any]], Iterable[RowLike]]


def first(fetch: Fetch, sql: str, params: Sequence[Any]) -> RowLike | None:
    """The first row ``sql`` returns, or None."""
    return next(iter(fetch(sql, params)), None)


def profile_by_key(
    fetch: Fetch, dialect: Dialect, agent_id: str, project_id: str, user_id: str
) -> Row | None:
    """The profile stored under exactly this key (``ProfileRows.get``)."""
    m = dialect.mark
    row = first(
        fetch,
        f"SELECT * FROM profiles WHERE agent_id = {m} AND project_id = {m} AND user_id = {m}",
        (agent_id, project_id, user_id),
    )
    return None if row is None else profile_dict(row)


def newest_profiles(fetch: Fetch, dialect: Dialect, scope: Scope, limit: int) -> list[Row]:
    """Up to ``limit`` profiles in scope, newest first (``ProfileRows.newest_in_scope``)."""
    clause, params = scope.where(dialect, has_channel=False)
    rows = fetch(
        f"SELECT * FROM profiles WHERE {clause} ORDER BY updated_at DESC, user_id LIMIT {dialect.mark}",
        [*params, limit],
    )
    return [profile_dict(r) for r in rows]


def newest_boundary(fetch: Fetch, dialect: Dialect, scope: Scope) -> str | None:
    """created_at of the newest episode in scope, the episode boundary (``EpisodeRows.newest_boundary``)."""
    clause, params = scope.where(dialect)
    row = first(fetch, f"SELECT MAX(created_at) AS newest FROM episodes WHERE {clause}", params)
    return str(row["newest"]) if row is not None and row["newest"] else None


def recent_rows(fetch: Fetch, dialect: Dialect, shape: TableShape, scope: Scope, limit: int) -> list[Row]:
    """Rows in scope newest first (created_at, then id, so equal timestamps still order stably)."""
    clause, params = scope.where(dialect)
    rows = fetch(
        f"SELECT {shape.columns} FROM {shape.table} WHERE {clause} ORDER BY created_at DESC, id DESC "
        f"LIMIT {dialect.mark}",
        [*params, limit],
    )
    return [shape.to_dict(r) for r in rows]


def count_rows(fetch: Fetch, dialect: Dialect, shape: TableShape, scope: Scope) -> int:
    """Rows of ``shape``'s table in scope."""
    clause, params = scope.where(dialect)
    row = first(fetch, f"SELECT COUNT(*) AS n FROM {shape.table} WHERE {clause}", params)
    return 0 if row is None else int(row["n"])
