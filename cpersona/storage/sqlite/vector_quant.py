"""The SQLite vector index's first pass: int8 codes of every row, scanned with a SIMD dot product.

At 100k x 384 the float32 matrix is 154 MB, and one recall's matrix-vector product reads all
of it: memory bandwidth, not arithmetic, sets its time (10-14 ms on this project's machine).
Each row is kept as int8 codes with one float32 scale (``row ~ codes * scale``, the scale
being the row's largest magnitude / 127), a quarter of the bytes. A query is quantised the
same way; the int8 dot products (simsimd's SIMD kernels: numpy has no fast int8 product)
times the two scales approximate every cosine to about 1e-3, and the best few hundred rows
are then scored exactly in float32, so what a recall returns is exact float32 cosines
(``storage/vector_index.py``). Over the largest scopes a sign-bit pass picks the rows this
pass scores (``storage/sqlite/vector_bits.py``).
"""

from __future__ import annotations

import numpy as np
import simsimd

#: Rows rescored exactly after the int8 pass (at least; more when a recall asks for more).
RESCORE = 400
_LEVELS = 127.0


def quantize(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 codes and float32 scales of float32 ``rows`` (n x d): each row ~ codes * scale."""
    peak = np.abs(rows).max(axis=1) if rows.size else np.zeros(rows.shape[0], dtype=np.float32)
    scales = np.where(peak > 0, peak / _LEVELS, 1.0).astype(np.float32)
    codes = np.rint(rows / scales[:, None]).astype(np.int8)
    return codes, scales


def approximate(codes: np.ndarray, scales: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Approximate ``rows @ query`` (float64, one per row) from the rows' int8 codes and scales."""
    if codes.shape[0] == 0:
        return np.zeros(0, dtype=np.float64)
    q_codes, q_scale = quantize(np.asarray(query, dtype=np.float32)[None, :])
    # cdist runs on the calling thread (threads=1 by default) and accumulates int8 products exactly.
    raw = np.asarray(simsimd.cdist(q_codes, codes, metric="dot"), dtype=np.float64)[0]
    return raw * scales * float(q_scale[0])


def rescore_count(limit: int) -> int:
    """How many int8 candidates to rescore for a recall asking for ``limit`` rows."""
    return max(RESCORE, 4 * limit)
