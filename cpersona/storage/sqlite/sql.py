"""What every SQLite repository shares: the dialect, the scope predicate, rows by id, the source filter."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from cpersona.storage.scope import Scope
from cpersona.storage.sql_text import Dialect

#: SQLite's qmark placeholders; 1 and 0 are its true and false.
SQLITE = Dialect("?", "1", "0")

_CHUNK = 500


def where(scope: Scope, alias: str = "", *, has_channel: bool = True) -> tuple[str, list[str]]:
    """The isolation rule of ``storage.scope`` (docs/architecture.md#the-isolation-rule-written-once) with SQLite placeholders."""
    return scope.where(SQLITE, alias, has_channel=has_channel)


def source_clause(source_id: str | None, alias: str = "") -> tuple[str, list[Any]]:
    """``AND source.id starts with source_id`` (empty when no filter)."""
    if source_id is None:
        return "", []
    prefix = f"{alias}." if alias else ""
    return f" AND substr(COALESCE(json_extract({prefix}source, '$.id'), ''), 1, ?) = ?", [
        len(source_id),
        source_id,
    ]


def fetch_by_ids(
    conn: sqlite3.Connection, table: str, columns: str, ids: Sequence[int], scope: Scope | None = None
) -> dict[int, tuple[Any, ...]]:
    """Rows of ``table`` whose id is in ``ids`` and which ``scope`` admits, keyed by id, as plain tuples
    in ``columns`` order (which must begin with ``id``).

    Chunked, as SQLite caps the number of bound parameters. ``NOT INDEXED`` keeps the planner on
    rowid lookups: left alone it picks the scope index for ``agent_id = ?`` and walks every row of
    the agent (O(corpus) instead of O(ids); ~1.9 ms for 66 ids at 10k rows, ~0.3 ms by rowid). The
    scope is then checked on the rows found.
    """
    found: dict[int, tuple[Any, ...]] = {}
    clause, params = where(scope or Scope())
    cursor = conn.cursor()
    cursor.row_factory = None  # tuples: read by position, not by name (see columns.memory_values_dict)
    for start in range(0, len(ids), _CHUNK):
        chunk = list(ids[start : start + _CHUNK])
        marks = ",".join("?" * len(chunk))
        for row in cursor.execute(
            f"SELECT {columns} FROM {table} NOT INDEXED WHERE id IN ({marks}) AND {clause}", [*chunk, *params]
        ):
            found[int(row[0])] = row
    return found
