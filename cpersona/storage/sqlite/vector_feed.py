"""Stored vectors in SQLite: what the in-memory indexes load, and corpus-wide vector bookkeeping.

``state``, ``rows_after``, ``changed_since`` and ``rows_by_id`` feed ``vector_index`` (the engine's own
vector search, behind ``VectorSearch``); ``dimensions`` and ``invalidate`` are the ``VectorFeed`` protocol.

The ``vector_changes`` log is kept by triggers (see migration 3): an update of a
vector or of its scope, and a delete, append the row id, so an index in any
process applies just those rows. New rows need no entry: their ids are higher
than any an index has seen.
"""

from __future__ import annotations

import sqlite3

from cpersona.storage.blocks import MEMORY_BLOCKS
from cpersona.storage.values import VECTOR_TABLES, VectorRow, VectorState

# SQLite's default limit on bound parameters is 32766; stay well below it.
_ID_CHUNK = 5000


def _table(name: str) -> str:
    if name not in (*VECTOR_TABLES, MEMORY_BLOCKS):
        raise ValueError(f"no vectors in table {name!r}")
    return name


class SqliteVectorFeed:
    """``VectorFeed`` over one SQLite connection."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def state(self, table: str) -> VectorState:
        """Generation, highest id and change-log positions of ``table``, in one statement.

        Every recall asks this once per table (and again for the gate's cosines), so each part is a
        scalar subquery SQLite answers from an index edge: ``MAX(seq), MIN(seq)`` in one SELECT
        is not min/max-optimised and scanned the whole change log (up to 65,536 entries) each time.
        """
        generation, max_id, newest, oldest = self.conn.execute(
            "SELECT (SELECT generation FROM index_state WHERE name = ?), "
            f"(SELECT COALESCE(MAX(id), 0) FROM {_table(table)}), "
            "(SELECT COALESCE(MAX(seq), 0) FROM vector_changes), "
            "(SELECT COALESCE(MIN(seq), 0) FROM vector_changes)",
            (table,),
        ).fetchone()
        return VectorState(int(generation), int(max_id), int(newest), int(oldest))

    def _plain(self) -> sqlite3.Cursor:
        cursor = self.conn.cursor()
        cursor.row_factory = None  # plain tuples: VectorRow
        return cursor

    def rows_after(
        self, table: str, after_id: int, model_id: str, dimension: int, limit: int | None = None
    ) -> list[VectorRow]:
        """Vectors of this model and dimension with id > ``after_id``, in id order (at most ``limit``)."""
        rows: list[VectorRow] = (
            self._plain()
            .execute(
                f"SELECT id, agent_id, project_id, channel, embedding FROM {_table(table)} "
                "WHERE id > ? AND embedding IS NOT NULL AND embedding_model = ? AND embedding_dim = ? "
                "ORDER BY id LIMIT ?",
                (after_id, model_id, dimension, -1 if limit is None else limit),
            )
            .fetchall()
        )
        return rows

    def changed_since(self, table: str, seq: int) -> list[int]:
        """Distinct ids of rows whose vector or scope changed, or that were deleted, after ``seq``."""
        return [
            int(r[0])
            for r in self.conn.execute(
                "SELECT DISTINCT row_id FROM vector_changes WHERE seq > ? AND tbl = ?", (seq, _table(table))
            )
        ]

    def rows_by_id(self, table: str, ids: list[int], model_id: str, dimension: int) -> list[VectorRow]:
        """The current vectors of this model and dimension among ``ids``."""
        rows: list[VectorRow] = []
        for start in range(0, len(ids), _ID_CHUNK):
            chunk = ids[start : start + _ID_CHUNK]
            marks = ",".join("?" * len(chunk))
            rows += (
                self._plain()
                .execute(
                    f"SELECT id, agent_id, project_id, channel, embedding FROM {_table(table)} "
                    f"WHERE id IN ({marks}) AND embedding IS NOT NULL AND embedding_model = ? AND embedding_dim = ?",
                    (*chunk, model_id, dimension),
                )
                .fetchall()
            )
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
        """Clear vectors of ``model_id`` whose dimension differs (the queue re-embeds them, blocks too)."""
        self.conn.execute(
            f"DELETE FROM {MEMORY_BLOCKS} WHERE embedding_model = ? AND embedding_dim IS NOT ?",
            (model_id, dimension),
        )
        for table in VECTOR_TABLES:
            self.conn.execute(
                f"UPDATE {table} SET embedding = NULL, embedding_model = NULL, embedding_dim = NULL "
                "WHERE embedding_model = ? AND embedding_dim IS NOT ?",
                (model_id, dimension),
            )
