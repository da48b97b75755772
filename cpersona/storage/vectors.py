"""How embeddings are stored: float32 bytes plus the model id and dimension."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cpersona.storage.blocks import BLOCK_DISCOUNT, BlockHit, StoredBlock


def to_blob(vector: np.ndarray) -> bytes:
    """Serialise one vector as little-endian float32."""
    return np.asarray(vector, dtype="<f4").tobytes()


def from_blob(blob: bytes) -> np.ndarray:
    """The float32 vector stored in ``blob``."""
    return np.frombuffer(blob, dtype="<f4")


def best_blocks(blocks: Sequence[StoredBlock], query: np.ndarray) -> dict[int, BlockHit]:
    """Each memory's best-scoring block among ``blocks`` (exact float32 cosines less ``BLOCK_DISCOUNT``,
    lowest index on a tie)."""
    if not blocks:
        return {}
    matrix = np.frombuffer(b"".join(b.embedding for b in blocks), dtype="<f4").reshape(len(blocks), -1)
    scores = np.einsum("ij,j->i", matrix, np.asarray(query, dtype=np.float32))
    best: dict[int, BlockHit] = {}
    for block, cosine in zip(blocks, scores.tolist(), strict=True):
        score = float(cosine) - BLOCK_DISCOUNT
        held = best.get(block.memory_id)
        if held is None or score > held.cosine:
            best[block.memory_id] = BlockHit(block.index, block.start, block.end, score)
    return best


def merge_best(
    rows: Sequence[tuple[int, float]], blocks: Sequence[tuple[int, float]], limit: int
) -> list[tuple[int, float]]:
    """Row hits and block hits (memory id, cosine) merged: each memory once at its best score (a block's
    cosine less ``BLOCK_DISCOUNT``), the top ``limit``, best first, ties on the newer id. The row count is
    the unit: a memory never takes two places."""
    best: dict[int, float] = {}
    for memory_id, score in (*rows, *((m, cosine - BLOCK_DISCOUNT) for m, cosine in blocks)):
        if score > best.get(memory_id, -2.0):
            best[memory_id] = score
    return sorted(best.items(), key=lambda hit: (-hit[1], -hit[0]))[:limit]
