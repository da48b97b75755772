"""Stored vectors in SQLite: what the in-memory indexes load, and corpus-wide vector bookkeeping.

``state`` and ``rows_after`` feed ``vector_index`` (the engine's own vector search);
``dimensions`` and ``invalidate`` are the ``VectorFeed`` protocol.

The generation counters in ``index_state`` are kept by triggers (see
migrations): any change to an existing vector, a delete or a move between
scopes bumps them, so every process learns it must reload.
"""

from __future__ import annotations

import sqlite3

from cpersona.storage.interface import VECTOR_TABLES, VectorRow

__all__ = ["VECTOR_TABLES", "SqliteVectorFeed"]


def _table(name: str) -> str:
    if name not in VECTOR_TABLES:
        raise ValueError(f"no vectors in table {name!r}")
    return name


class SqliteVectorFeed:
    """``VectorFeed`` over one SQLite connection."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def state(self, table: str) -> tuple[int, int]:
        """(generation, highest id) of ``table``."""
        generation = int(
            self.conn.execute("SELECT generation FROM index_state WHERE name = ?", (table,)).fetchone()[0]
        )
        max_id = int(self.conn.execute(f"SELECT COALESCE(MAX(id), 0) FROM {_table(table)}").fetchone()[0])
        return generation, max_id

    def rows_after(self, table: str, after_id: int, model_id: str, dimension: int) -> list[VectorRow]:
        """Vectors of this model and dimension with id > ``after_id``, in id order."""
        cursor = self.conn.cursor()
        cursor.row_factory = None  # plain tuples: VectorRow
        rows: list[VectorRow] = cursor.execute(
            f"SELECT id, agent_id, project_id, channel, embedding FROM {_table(table)} "
            "WHERE id > ? AND embedding IS NOT NULL AND embedding_model = ? AND embedding_dim = ? ORDER BY id",
            (after_id, model_id, dimension),
        ).fetchall()
        return rows

    def dimensions(self, model_id: str) -> set[int]:
        """Every dimension stored for ``model_id`` in memories and episodes."""
        rows = self.conn.execute(
            "SELECT DISTINCT embedding_dim FROM memories WHERE embedding_model = ? "
            "UNION SELECT DISTINCT embedding_dim FROM episodes WHERE embedding_model = ?",
            (model_id, model_id),
        ).fetchall()
        return {int(r[0]) for r in rows if r[0] is not None}

    def invalidate(self, model_id: str, dimension: int) -> None:
        """Clear vectors of ``model_id`` whose dimension differs (the queue re-embeds them)."""
        for table in VECTOR_TABLES:
            self.conn.execute(
                f"UPDATE {table} SET embedding = NULL, embedding_model = NULL, embedding_dim = NULL "
                "WHERE embedding_model = ? AND embedding_dim IS NOT ?",
                (model_id, dimension),
            )
