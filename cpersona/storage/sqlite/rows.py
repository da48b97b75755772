"""What the SQLite ``memories`` and ``episodes`` repositories share (``TableRows``), over one table shape."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import ClassVar

from cpersona.storage.interface import Row
from cpersona.storage.row_shapes import TableShape
from cpersona.storage.scope import Scope
from cpersona.storage.shared_reads import count_rows, recent_rows
from cpersona.storage.sqlite.sql import SQLITE, fetch_by_ids


class SqliteTableRows:
    """``TableRows`` of the table ``shape`` names, over one SQLite connection."""

    __slots__ = ("conn",)
    shape: ClassVar[TableShape]

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def get(self, row_id: int) -> Row | None:
        """One row by id, whoever owns it (callers check ownership)."""
        s = self.shape
        row = self.conn.execute(f"SELECT {s.columns} FROM {s.table} WHERE id = ?", (row_id,)).fetchone()
        return None if row is None else s.to_dict(row)

    def get_many(self, ids: Sequence[int], scope: Scope | None = None) -> dict[int, Row]:
        """Rows by id, restricted to ``scope`` when given."""
        s = self.shape
        return {i: s.to_dict(r) for i, r in fetch_by_ids(self.conn, s.table, s.columns, ids, scope).items()}

    def text_of(self, row_id: int) -> str | None:
        """The text an embedding is computed from."""
        s = self.shape
        row = self.conn.execute(f"SELECT {s.text_column} FROM {s.table} WHERE id = ?", (row_id,)).fetchone()
        return None if row is None else str(row[0])

    def set_embedding(self, row_id: int, blob: bytes | None, model_id: str | None, dim: int | None) -> None:
        """Record (or clear) the vector of one row."""
        self.conn.execute(
            f"UPDATE {self.shape.table} SET embedding = ?, embedding_model = ?, embedding_dim = ? WHERE id = ?",
            (blob, model_id, dim, row_id),
        )

    def delete(self, row_id: int) -> None:
        """Delete one row (the FTS triggers follow)."""
        self.conn.execute(f"DELETE FROM {self.shape.table} WHERE id = ?", (row_id,))

    def list_recent(self, scope: Scope, limit: int) -> list[Row]:
        """Newest first (created_at, then id, so equal timestamps still order stably)."""
        return recent_rows(self.conn.execute, SQLITE, self.shape, scope, limit)

    def count(self, scope: Scope) -> int:
        """Rows in scope."""
        return count_rows(self.conn.execute, SQLITE, self.shape, scope)
