"""``VectorSearch`` for SQLite: the store's in-memory indexes (``vector_index.py``), synced on the caller's
connection, then scanned; a memory scores its best vector, its own or a block's (``vector_blocks.py``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence

import numpy as np

from cpersona.storage.blocks import MEMORY_BLOCKS, BlockHit
from cpersona.storage.scope import Scope
from cpersona.storage.sqlite import vector_worker
from cpersona.storage.sqlite.memories import SqliteMemories
from cpersona.storage.sqlite.vector_blocks import best_of, block_hits, with_blocks
from cpersona.storage.sqlite.vector_feed import SqliteVectorFeed
from cpersona.storage.sqlite.vector_index import OFFLOAD_FROM, Fetch, VectorIndex, VectorIndexes
from cpersona.storage.values import MEMORIES, VectorQuery


class SqliteVectorSearch:
    """``VectorSearch`` for SQLite: sync the store's in-memory index on this connection, then scan it."""

    __slots__ = ("conn", "indexes")

    def __init__(self, conn: sqlite3.Connection, indexes: VectorIndexes) -> None:
        self.conn = conn
        self.indexes = indexes

    def synced(self, table: str, model_id: str, dimension: int) -> VectorIndex:
        """The index of ``table`` for this model, brought up to date on this connection."""
        index = self.indexes.get(table, model_id, dimension)
        index.sync(SqliteVectorFeed(self.conn))
        return index

    def _fetch(self, table: str, model_id: str, dimension: int) -> Fetch:
        """Reads float32 rows by id on this connection (the snapshot the index was just synced in)."""
        feed = SqliteVectorFeed(self.conn)

        def fetch(ids: list[int]) -> dict[int, bytes]:
            return {int(r[0]): r[4] for r in feed.rows_by_id(table, ids, model_id, dimension)}

        return fetch

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
        """Top ``limit`` (id, exact cosine) among the ``window`` most recent rows in scope."""
        index = self.synced(table, query.model_id, query.dimension)
        fetch = self._fetch(table, query.model_id, query.dimension)
        found = index.search(query.vector, scope, limit, window=window, allowed_ids=allowed_ids, fetch=fetch)
        return self._with_blocks(table, found, query, scope, limit, window, allowed_ids)

    def _with_blocks(
        self,
        table: str,
        rows: list[tuple[int, float]],
        query: VectorQuery,
        scope: Scope,
        limit: int,
        window: int | None,
        allowed_ids: Sequence[int] | None,
    ) -> list[tuple[int, float]]:
        """``rows`` (the memories' own vectors) merged with the best blocks: each memory at its best vector."""
        if table != MEMORIES:
            return rows
        blocks = self.synced(MEMORY_BLOCKS, query.model_id, query.dimension)
        fetch = self._fetch(MEMORY_BLOCKS, query.model_id, query.dimension)
        hits = block_hits(
            self.conn, blocks, fetch, query, scope, limit, window=window, allowed_ids=allowed_ids
        )
        return with_blocks(rows, hits, limit)

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
        """``nearest`` in two halves: the sync (file reads) now, on this thread; the scan on a worker
        thread (``vector_worker``) while the caller runs its keyword queries; the function returned
        waits for the scan and finishes it here (rows read from the file, when needed, on this
        connection's thread). The answer is ``nearest``'s, bit for bit: the same code on the same data."""
        index = self.synced(table, query.model_id, query.dimension)
        fetch = self._fetch(table, query.model_id, query.dimension)
        q = np.asarray(query.vector, dtype=np.float32)
        if len(index) < OFFLOAD_FROM:
            found = index.search(q, scope, limit, window=window, allowed_ids=allowed_ids, fetch=fetch)
            found = self._with_blocks(table, found, query, scope, limit, window, allowed_ids)
            return lambda: found
        pending = vector_worker.submit(
            lambda: index.candidates(q, scope, limit, window=window, allowed_ids=allowed_ids)
        )

        def collect() -> list[tuple[int, float]]:
            ids, scores = pending.result()
            found = index.finish(ids, scores, q, limit, fetch)
            return self._with_blocks(table, found, query, scope, limit, window, allowed_ids)

        return collect

    def cosines(self, table: str, query: VectorQuery, ids: Sequence[int]) -> dict[int, float]:
        """Cosine of the query with each of ``ids`` holding a vector of the query's model."""
        if not ids:
            return {}
        index = self.synced(table, query.model_id, query.dimension)
        found = index.cosines(query.vector, ids, self._fetch(table, query.model_id, query.dimension))
        if table != MEMORIES:
            return found
        for memory_id, hit in best_of(SqliteMemories(self.conn), query, ids, found).items():
            found[memory_id] = hit.cosine
        return found

    def best_blocks(self, query: VectorQuery, memory_ids: Sequence[int]) -> dict[int, BlockHit]:
        """The block of each of ``memory_ids`` that scores it higher than its own vector (read from the file)."""
        if not memory_ids:
            return {}
        rows = self.synced(MEMORIES, query.model_id, query.dimension).cosines(
            query.vector, memory_ids, self._fetch(MEMORIES, query.model_id, query.dimension)
        )
        return best_of(SqliteMemories(self.conn), query, memory_ids, rows)

    def agent_vectors(
        self, table: str, model_id: str, dimension: int, agent_id: str
    ) -> tuple[np.ndarray, np.ndarray]:
        """(ids, vectors) of one agent's rows with vectors of this model, in id order."""
        index = self.synced(table, model_id, dimension)
        return index.agent_rows(agent_id, self._fetch(table, model_id, dimension))

    def agent_counts(self, table: str, model_id: str, dimension: int) -> dict[str, int]:
        """Rows per agent holding a vector of this model (from the synced in-memory index)."""
        return self.synced(table, model_id, dimension).agent_counts()
