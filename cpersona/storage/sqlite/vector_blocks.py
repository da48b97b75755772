"""The SQLite vector channel's share of block vectors (docs/retrieval.md#long-records).

Blocks live in ``memory_blocks``, each with its memory's scope columns, so the in-memory
``VectorIndex`` holds them like rows (its own index, synced from the same change log). A memory's
score is its best vector: the row hits of ``memories`` and the block hits merged by memory id
(``vectors.merge_best``), so a memory takes one place whatever its block count. The block index is
asked for a few times ``limit`` blocks, more when blocks of the same memories crowd that list.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import numpy as np

from cpersona.storage.blocks import MEMORY_BLOCKS, BlockHit
from cpersona.storage.scope import Scope
from cpersona.storage.sqlite.memories import SqliteMemories
from cpersona.storage.sqlite.sql import where
from cpersona.storage.sqlite.vector_index import Fetch, VectorIndex
from cpersona.storage.values import MEMORIES, VectorQuery
from cpersona.storage.vectors import best_blocks, merge_best

#: Blocks asked per memory wanted, at first (a long memory's neighbouring blocks often score alike).
_BLOCKS_PER_ROW = 3
_ID_CHUNK = 5000


def _column(
    conn: sqlite3.Connection, sql: str, ids: Sequence[int], tail: Sequence[object] = ()
) -> list[tuple]:
    rows: list[tuple] = []
    for start in range(0, len(ids), _ID_CHUNK):
        chunk = list(ids[start : start + _ID_CHUNK])
        marks = ",".join("?" * len(chunk))
        rows += conn.execute(sql.format(marks=marks), (*chunk, *tail)).fetchall()
    return rows


def _admitted_blocks(
    conn: sqlite3.Connection,
    query: VectorQuery,
    scope: Scope,
    window: int | None,
    allowed_ids: Sequence[int] | None,
) -> list[int] | None:
    """Block ids the search may return: those of ``allowed_ids`` and of the ``window`` newest memories in
    scope with this model's vectors (None: no restriction beyond the scope)."""
    if window is None and allowed_ids is None:
        return None
    floor = 0
    if window is not None:
        clause, params = where(scope)
        row = conn.execute(
            f"SELECT id FROM {MEMORIES} WHERE embedding IS NOT NULL AND embedding_model = ? AND embedding_dim = ? "
            f"AND {clause} ORDER BY id DESC LIMIT 1 OFFSET ?",
            (query.model_id, query.dimension, *params, window - 1),
        ).fetchone()
        floor = int(row[0]) if row else 0
    if allowed_ids is None:
        return [
            int(r[0]) for r in conn.execute(f"SELECT id FROM {MEMORY_BLOCKS} WHERE memory_id >= ?", (floor,))
        ]
    found = _column(
        conn,
        f"SELECT id FROM {MEMORY_BLOCKS} WHERE memory_id IN ({{marks}}) AND memory_id >= ?",
        allowed_ids,
        (floor,),
    )
    return [int(r[0]) for r in found]


def block_hits(
    conn: sqlite3.Connection,
    index: VectorIndex,
    fetch: Fetch,
    query: VectorQuery,
    scope: Scope,
    limit: int,
    *,
    window: int | None,
    allowed_ids: Sequence[int] | None,
) -> list[tuple[int, float]]:
    """(memory id, cosine) of the best blocks, enough of them to name ``limit`` memories when there are."""
    if limit <= 0 or len(index) == 0:
        return []
    admitted = _admitted_blocks(conn, query, scope, window, allowed_ids)
    if admitted is not None and not admitted:
        return []
    q = np.asarray(query.vector, dtype=np.float32)
    ask = limit * _BLOCKS_PER_ROW
    while True:
        found = index.search(q, scope, ask, allowed_ids=admitted, fetch=fetch)
        owners = {
            int(r[0]): int(r[1])
            for r in _column(
                conn,
                f"SELECT id, memory_id FROM {MEMORY_BLOCKS} WHERE id IN ({{marks}})",
                [i for i, _ in found],
            )
        }
        hits = [(owners[b], s) for b, s in found if b in owners]
        if len({m for m, _ in hits}) >= limit or len(found) < ask:
            return hits
        ask *= 4


def with_blocks(
    rows: list[tuple[int, float]], blocks: list[tuple[int, float]], limit: int
) -> list[tuple[int, float]]:
    """The row hits alone when no block hit came back (the common case: no long memories), else merged."""
    return merge_best(rows, blocks, limit) if blocks else rows


def best_of(
    memories: SqliteMemories, query: VectorQuery, memory_ids: Sequence[int], rows: dict[int, float]
) -> dict[int, BlockHit]:
    """The block of each of ``memory_ids`` that beats the memory's own cosine (``rows``; absent: no vector)."""
    blocks = best_blocks(memories.blocks_of(memory_ids, query.model_id, query.dimension), query.vector)
    return {m: hit for m, hit in blocks.items() if hit.cosine > rows.get(m, -2.0)}
