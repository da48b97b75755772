"""What the PostgreSQL ``memories`` and ``episodes`` repositories share (``TableRows``), over one table shape."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cpersona.storage.columns import VECTOR_POSITION
from cpersona.storage.postgres.sql import POSTGRES, Executor, vector_param, where
from cpersona.storage.scope import Scope
from cpersona.storage.shared_reads import TableReads
from cpersona.storage.values import Row


def pg_values(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """A ``columns`` insert tuple with its vector bound as a pgvector value."""
    bound = list(values)
    bound[VECTOR_POSITION] = vector_param(bound[VECTOR_POSITION])
    return tuple(bound)


class PgTableRows(TableReads):
    """``TableRows`` of the table ``shape`` names, on PostgreSQL."""

    __slots__ = ("ex",)

    def __init__(self, ex: Executor) -> None:
        super().__init__(ex.all, POSTGRES)
        self.ex = ex

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

    def set_embedding(self, row_id: int, blob: bytes | None, model_id: str | None, dim: int | None) -> None:
        """Record (or clear) the vector of one row."""
        self.ex.run(
            f"UPDATE {self.shape.table} SET embedding = %b, embedding_model = %s, embedding_dim = %s WHERE id = %s",
            (vector_param(blob), model_id, dim, row_id),
        )

    def delete(self, row_id: int) -> None:
        """Delete one row."""
        self.ex.run(f"DELETE FROM {self.shape.table} WHERE id = %s", (row_id,))
