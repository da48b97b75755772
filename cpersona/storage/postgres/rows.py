"""What the PostgreSQL ``memories`` and ``episodes`` repositories share (``TableRows``), over one table shape."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from cpersona.storage.interface import Row
from cpersona.storage.postgres.sql import POSTGRES, Executor, vector_param, where
from cpersona.storage.row_shapes import VECTOR_POSITION, TableShape
from cpersona.storage.scope import Scope
from cpersona.storage.shared_reads import count_rows, recent_rows


def pg_values(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """A ``row_shapes`` insert tuple with its vector bound as a pgvector value."""
    bound = list(values)
    bound[VECTOR_POSITION] = vector_param(bound[VECTOR_POSITION])
    return tuple(bound)


class PgTableRows:
    """``TableRows`` of the table ``shape`` names, on PostgreSQL."""

    __slots__ = ("ex",)
    shape: ClassVar[TableShape]

    def __init__(self, ex: Executor) -> None:
        self.ex = ex

    def get(self, row_id: int) -> Row | None:
        """One row by id, whoever owns it (callers check ownership)."""
        s = self.shape
        row = self.ex.one(f"SELECT {s.columns} FROM {s.table} WHERE id = %s", (row_id,))
        return None if row is None else s.to_dict(row)

    def get_many(self, ids: Sequence[int], scope: Scope | None = None) -> dict[int, Row]:
        """Rows by id, restricted to ``scope`` when given."""
        if not ids:
            return {}
        s = self.shape
        clause, params = where(scope or Scope())
        rows = self.ex.all(
            f"SELECT {s.columns} FROM {s.table} WHERE id = ANY(%s) AND {clause}", [list(ids), *params]
        )
        return {int(r["id"]): s.to_dict(r) for r in rows}

    def text_of(self, row_id: int) -> str | None:
        """The text an embedding is computed from."""
        s = self.shape
        found = self.ex.value(f"SELECT {s.text_column} FROM {s.table} WHERE id = %s", (row_id,))
        return None if found is None else str(found)

    def set_embedding(self, row_id: int, blob: bytes | None, model_id: str | None, dim: int | None) -> None:
        """Record (or clear) the vector of one row."""
        self.ex.run(
            f"UPDATE {self.shape.table} SET embedding = %b, embedding_model = %s, embedding_dim = %s WHERE id = %s",
            (vector_param(blob), model_id, dim, row_id),
        )

    def delete(self, row_id: int) -> None:
        """Delete one row."""
        self.ex.run(f"DELETE FROM {self.shape.table} WHERE id = %s", (row_id,))

    def list_recent(self, scope: Scope, limit: int) -> list[Row]:
        """Newest first (created_at, then id, so equal timestamps still order stably)."""
        return recent_rows(self.ex.all, POSTGRES, self.shape, scope, limit)

    def count(self, scope: Scope) -> int:
        """Rows in scope."""
        return count_rows(self.ex.all, POSTGRES, self.shape, scope)
