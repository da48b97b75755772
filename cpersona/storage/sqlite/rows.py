"""What the SQLite ``memories`` and ``episodes`` repositories share (``TableRows``), over one table shape."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from cpersona.storage.scope import Scope
from cpersona.storage.shared_reads import TableReads
from cpersona.storage.sqlite.sql import SQLITE, fetch_by_ids
from cpersona.storage.values import Row


class SqliteTableRows(TableReads):
    """``TableRows`` of the table ``shape`` names, over one SQLite connection."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        super().__init__(conn.execute, SQLITE)
        self.conn = conn

    def get_many(self, ids: Sequence[int], scope: Scope | None = None) -> dict[int, Row]:
        """Rows by id, restricted to ``scope`` when given."""
        s = self.shape
        build = s.values_dict
        return {i: build(r) for i, r in fetch_by_ids(self.conn, s.table, s.columns, ids, scope).items()}

    def set_embedding(self, row_id: int, blob: bytes | None, model_id: str | None, dim: int | None) -> None:
        """Record (or clear) the vector of one row."""
        self.conn.execute(
            f"UPDATE {self.shape.table} SET embedding = ?, embedding_model = ?, embedding_dim = ? WHERE id = ?",
            (blob, model_id, dim, row_id),
        )

    def delete(self, row_id: int) -> None:
        """Delete one row (the FTS triggers follow)."""
        self.conn.execute(f"DELETE FROM {self.shape.table} WHERE id = ?", (row_id,))
