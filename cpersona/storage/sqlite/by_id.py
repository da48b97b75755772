"""Fetching rows by id in chunks (SQLite caps the number of bound parameters)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from cpersona.storage.scope import Scope

_CHUNK = 500


def fetch_by_ids(
    conn: sqlite3.Connection, table: str, columns: str, ids: Sequence[int], scope: Scope | None = None
) -> dict[int, sqlite3.Row]:
    """Rows of ``table`` whose id is in ``ids`` and which ``scope`` admits, keyed by id.

    ``NOT INDEXED`` keeps the planner on rowid lookups: left alone it picks the scope index for
    ``agent_id = ?`` and walks every row of the agent (O(corpus) instead of O(ids); ~1.9 ms for 66
    ids at 10k rows, ~0.3 ms by rowid). The scope is then checked on the rows found.
    """
    found: dict[int, sqlite3.Row] = {}
    where, params = (scope or Scope()).where()
    for start in range(0, len(ids), _CHUNK):
        chunk = list(ids[start : start + _CHUNK])
        marks = ",".join("?" * len(chunk))
        for row in conn.execute(
            f"SELECT {columns} FROM {table} NOT INDEXED WHERE id IN ({marks}) AND {where}", [*chunk, *params]
        ):
            found[int(row["id"])] = row
    return found
