"""The SQLite engine's vector search: an in-memory copy of one table's vectors, kept in step with the file.

Every recall first calls ``sync``: rows with a higher id than any seen are
appended (the common case: new stores), and any change to existing vectors
(back-fill, re-embedding, delete, a move between agents) bumps a generation
counter the store keeps, which triggers a full reload. Both
signals live in the file, so writes by other processes on the same file are
seen on the next recall. Only vectors of the active model id and dimension
are loaded: vectors of different models are never compared.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from cpersona.storage.interface import VectorQuery
from cpersona.storage.scope import Scope
from cpersona.storage.vector_feed import VECTOR_TABLES, SqliteVectorFeed


@dataclass
class _Columns:
    ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    vectors: np.ndarray | None = None
    agent: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    project: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    channel: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))


class VectorIndex:
    """Vectors of ``table`` ('memories' or 'episodes') for one model id and dimension."""

    def __init__(self, table: str, model_id: str, dimension: int) -> None:
        if table not in VECTOR_TABLES:
            raise ValueError(f"no vector index for table {table!r}")
        self.table = table
        self.model_id = model_id
        self.dimension = dimension
        self._lock = threading.Lock()
        self._cols = _Columns(vectors=np.zeros((0, dimension), dtype=np.float32))
        self._codes: dict[str, int] = {}
        self._generation = -1
        self._max_seen_id = 0
        self.reloads = 0

    def __len__(self) -> int:
        return int(self._cols.ids.shape[0])

    def _code(self, value: str) -> int:
        code = self._codes.get(value)
        if code is None:
            code = len(self._codes)
            self._codes[value] = code
        return code

    def sync(self, feed: SqliteVectorFeed) -> None:
        """Bring the index up to date with the store (call inside one read snapshot)."""
        generation, max_id = feed.state(self.table)
        with self._lock:
            if generation != self._generation:
                self._cols = self._load(feed, 0)
                self._generation = generation
                self._max_seen_id = max_id
                self.reloads += 1
            elif max_id > self._max_seen_id:
                fresh = self._load(feed, self._max_seen_id)
                self._max_seen_id = max_id
                if fresh.ids.size:
                    old = self._cols
                    self._cols = _Columns(
                        ids=np.concatenate([old.ids, fresh.ids]),
                        vectors=np.concatenate([old.vectors, fresh.vectors]),
                        agent=np.concatenate([old.agent, fresh.agent]),
                        project=np.concatenate([old.project, fresh.project]),
                        channel=np.concatenate([old.channel, fresh.channel]),
                    )

    def _load(self, feed: SqliteVectorFeed, after_id: int) -> _Columns:
        rows = feed.rows_after(self.table, after_id, self.model_id, self.dimension)
        if not rows:
            return _Columns(vectors=np.zeros((0, self.dimension), dtype=np.float32))
        vectors = np.frombuffer(b"".join(r[4] for r in rows), dtype="<f4").reshape(len(rows), self.dimension)
        return _Columns(
            ids=np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
            vectors=np.ascontiguousarray(vectors, dtype=np.float32),
            agent=np.fromiter((self._code(r[1]) for r in rows), dtype=np.int32, count=len(rows)),
            project=np.fromiter((self._code(r[2]) for r in rows), dtype=np.int32, count=len(rows)),
            channel=np.fromiter((self._code(r[3]) for r in rows), dtype=np.int32, count=len(rows)),
        )

    def _mask(self, cols: _Columns, scope: Scope) -> np.ndarray:
        mask = np.ones(cols.ids.shape[0], dtype=bool)
        if scope.agent_id is not None:
            code = self._codes.get(scope.agent_id)
            if code is None:
                return np.zeros_like(mask)
            mask &= cols.agent == code
        if scope.project_id is not None:
            allowed = [self._codes[v] for v in {scope.project_id, ""} if v in self._codes]
            mask &= np.isin(cols.project, allowed)
        if scope.channel:
            allowed = [self._codes[v] for v in {scope.channel, ""} if v in self._codes]
            mask &= np.isin(cols.channel, allowed)
        return mask

    def search(
        self,
        query: np.ndarray,
        scope: Scope,
        limit: int,
        *,
        window: int,
        allowed_ids: Sequence[int] | None = None,
    ) -> list[tuple[int, float]]:
        """Top ``limit`` (id, cosine) among the ``window`` most recent rows in scope.

        Ties break on the higher (newer) id so results are deterministic.
        """
        cols = self._cols  # a consistent snapshot: sync replaces, never mutates
        if limit <= 0 or cols.ids.size == 0 or cols.vectors is None:
            return []
        mask = self._mask(cols, scope)
        if allowed_ids is not None:
            mask &= np.isin(cols.ids, np.fromiter(allowed_ids, dtype=np.int64, count=len(allowed_ids)))
        positions = np.flatnonzero(mask)
        if positions.size > window:
            positions = positions[-window:]
        if positions.size == 0:
            return []
        scores = cols.vectors[positions] @ np.asarray(query, dtype=np.float32)
        ids = cols.ids[positions]
        order = np.lexsort((-ids, -scores))[:limit]
        return [(int(ids[i]), float(scores[i])) for i in order]


class VectorIndexes:
    """The indexes of one ``SqliteStore``, one per table, rebuilt when the active model or dimension changes."""

    def __init__(self) -> None:
        self._indexes: dict[str, VectorIndex] = {}
        self._lock = threading.Lock()

    def get(self, table: str, model_id: str, dimension: int) -> VectorIndex:
        """The index of ``table`` for this model and dimension (a fresh one after a model change)."""
        with self._lock:
            index = self._indexes.get(table)
            if index is None or index.model_id != model_id or index.dimension != dimension:
                index = VectorIndex(table, model_id, dimension)
                self._indexes[table] = index
            return index


class SqliteVectorSearch:
    """``VectorSearch`` for SQLite: sync the store's in-memory index on this connection, then scan it."""

    __slots__ = ("conn", "indexes")

    def __init__(self, conn: sqlite3.Connection, indexes: VectorIndexes) -> None:
        self.conn = conn
        self.indexes = indexes

    def nearest(
        self,
        table: str,
        query: VectorQuery,
        scope: Scope,
        limit: int,
        *,
        window: int,
        allowed_ids: Sequence[int] | None = None,
    ) -> list[tuple[int, float]]:
        """Top ``limit`` (id, cosine) among the ``window`` most recent rows in scope (exact scan)."""
        index = self.indexes.get(table, query.model_id, query.dimension)
        index.sync(SqliteVectorFeed(self.conn))
        return index.search(query.vector, scope, limit, window=window, allowed_ids=allowed_ids)
