"""The PostgreSQL vector channel's share of block vectors (docs/retrieval.md#long-records; SQLite's
``storage/sqlite/vector_blocks.py``).

``memory_blocks`` carries its memory's scope columns and a partial HNSW index per model like the
memories' (``vector_search.build_index``), so the block search is the row search's statement on that
table; its hits name their memory, and the caller merges them with the row hits by memory id
(``vectors.merge_best``): each memory once, at its best vector.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from psycopg import sql

from cpersona.storage.blocks import MEMORY_BLOCKS
from cpersona.storage.postgres.sql import Executor, PgVector, where
from cpersona.storage.scope import Scope
from cpersona.storage.values import VectorQuery
from cpersona.storage.vectors import to_blob

#: Blocks asked per memory wanted, at first (a long memory's neighbouring blocks often score alike).
_BLOCKS_PER_ROW = 3


def _filters(
    query: VectorQuery, scope: Scope, floor: int | None, allowed_ids: Sequence[int] | None
) -> tuple[Any, list[Any]]:
    clause, scope_params = where(scope)
    filters = sql.SQL("embedding_model = {model} AND embedding_dim = {dim} AND {clause}").format(
        model=sql.Literal(query.model_id), dim=sql.Literal(query.dimension), clause=sql.SQL(clause)
    )
    params: list[Any] = list(scope_params)
    if allowed_ids is not None:
        filters = sql.SQL("{f} AND memory_id = ANY(%s)").format(f=filters)
        params.append(list(allowed_ids))
    if floor is not None:
        filters = sql.SQL("{f} AND memory_id >= %s").format(f=filters)
        params.append(floor)
    return filters, params


def block_hits(
    ex: Executor,
    ensure_index: Callable[[str, str, int], None],
    query: VectorQuery,
    scope: Scope,
    limit: int,
    *,
    floor: int | None,
    allowed_ids: Sequence[int] | None,
    exact: bool,
) -> list[tuple[int, float]]:
    """(memory id, cosine) of the best blocks, enough of them to name ``limit`` memories when there are."""
    if limit <= 0 or (allowed_ids is not None and not allowed_ids):
        return []
    filters, params = _filters(query, scope, floor, allowed_ids)
    if exact:
        rows = ex.all_binary(
            sql.SQL("SELECT memory_id, embedding FROM {t} WHERE {f}").format(
                t=sql.Identifier(MEMORY_BLOCKS), f=filters
            ),
            params,
        )
        if not rows:
            return []
        owners = [int(r["memory_id"]) for r in rows]
        matrix = np.frombuffer(b"".join(r["embedding"] for r in rows), dtype="<f4").reshape(len(rows), -1)
        scores = matrix @ np.asarray(query.vector, dtype=np.float32)
        return list(zip(owners, (float(s) for s in scores), strict=True))
    if ex.value(sql.SQL("SELECT 1 FROM {t} LIMIT 1").format(t=sql.Identifier(MEMORY_BLOCKS))) is None:
        return []  # no long memory anywhere: no index to build, nothing to ask
    ensure_index(MEMORY_BLOCKS, query.model_id, query.dimension)
    vector = PgVector(to_blob(query.vector))
    distance = sql.SQL("embedding::vector({dim}) <=> %b::vector({dim})").format(
        dim=sql.Literal(query.dimension)
    )
    ask = limit * _BLOCKS_PER_ROW
    while True:
        rows = ex.all(
            sql.SQL(
                "SELECT memory_id, {distance} AS distance FROM {t} WHERE {f} ORDER BY {distance} LIMIT %s"
            ).format(distance=distance, t=sql.Identifier(MEMORY_BLOCKS), f=filters),
            [vector, *params, vector, ask],
        )
        hits = [(int(r["memory_id"]), 1.0 - float(r["distance"])) for r in rows]
        if len({m for m, _ in hits}) >= limit or len(rows) < ask:
            return hits
        ask *= 4
