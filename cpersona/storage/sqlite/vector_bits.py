"""The SQLite vector index's cheapest pass over a large scope: one sign bit per dimension, scanned by Hamming distance.

At 1M x 384 the int8 codes are 384 MB and one recall's int8 pass reads all of them (~45-60 ms
here): bandwidth again. Over a scope of at least ``BITS_FROM`` rows the index first keeps, per
row, the signs of its vector minus a centre (48 bytes at 384-d: an eighth of the int8 bytes),
ranks every row by the Hamming distance between its bits and the query's (simsimd's popcount
kernels on packed bits), and hands only the nearest few percent to the int8 pass
(``vector_quant``), which hands its best few hundred to the exact float32 scoring: the cosines
returned are still exact, only the set of rows looked at shrinks.

Why a centre: MiniLM embeddings are not zero-mean (their mean over a corpus has norm ~0.8), so
the plain signs of most dimensions are the same for every row and say little; the signs of
``row - mean`` split each dimension near its median. ``q . row = q . (row - centre) + q . centre``
and the last term is the same for every row, so centring loses nothing the later passes need.

The centre is the mean of the rows the index held when the bits were first needed (the first
search over a scope that large after a load), and frozen: later rows get their bits against it,
so appending and patching stay a pack per row. It is recomputed, with every row's bits, when the
index has since doubled or halved (the corpus drifted enough to matter), and on a full reload
(docs/decisions.md, "SQLite vector scan: sign bits first at large scopes").
"""

from __future__ import annotations

import numpy as np
import simsimd

#: From this many rows in scope the sign-bit pass runs before the int8 one (measured crossover, between
#: 65,536 and 81,920 rows: docs/history/benchmarks-rounds.md, "Sign bits before int8").
BITS_FROM = 81_920
#: Rows the bit pass keeps at least, and the share of the scope it keeps when that is more
#: (1M rows in scope: 20,000 kept).
BITS_KEEP_MIN = 8192
BITS_KEEP_FRACTION = 50
_CHUNK = 8192  # rows dequantised at once when (re)building every row's bits (12 MB of float32)
_DRIFT = 2  # rebuild the centre when the live rows grew or shrank this many times over


def keep_count(candidates: int, at_least: int = BITS_KEEP_MIN) -> int:
    """How many rows of ``candidates`` in scope the bit pass hands to the int8 pass."""
    return max(at_least, candidates // BITS_KEEP_FRACTION)


def sign_bits(codes: np.ndarray, scales: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """Packed signs of ``codes * scales - centre`` (n x ceil(d / 8) uint8), from the int8 codes so that
    an index keeping float32 rows and one reading them from the file hold the same bits."""
    return np.packbits(codes.astype(np.float32) * scales[:, None] > centre, axis=1)


def hamming(bits: np.ndarray, query_bits: np.ndarray) -> np.ndarray:
    """Hamming distance (whole bits, intp) of each row of packed ``bits`` to the packed ``query_bits``."""
    if bits.shape[0] == 0:
        return np.zeros(0, dtype=np.intp)
    # cdist runs on the calling thread (threads=1 by default): AVX-512 popcounts where the CPU has them.
    return np.asarray(simsimd.cdist(query_bits, bits, metric="hamming", dtype="bin8"))[0].astype(np.intp)


def within(distances: np.ndarray, count: int) -> np.ndarray:
    """Indices (ascending) of the ``count`` smallest ``distances``, every one tied with the cut kept, so
    the answer never depends on row order. Distances are whole numbers of bits: a histogram finds the
    cut in one pass instead of a partition of n values."""
    if distances.size <= count:
        return np.arange(distances.size)
    cut = int(np.searchsorted(np.cumsum(np.bincount(distances)), count))
    return np.flatnonzero(distances <= cut)


class SignBits:
    """The sign bits of one index's rows and the centre they were taken against (positions as the index's)."""

    def __init__(self, dimension: int) -> None:
        self.width = (dimension + 7) // 8
        self.centre: np.ndarray | None = None  # none until a search first needs the bits
        self.centre_rows = 0  # live rows when the centre was taken
        self.bits = np.zeros((0, self.width), dtype=np.uint8)
        self.rebuilds = 0  # centre computations (for tests)

    def reset(self) -> None:
        """Forget the centre and every row's bits (a full reload takes a fresh centre)."""
        self.centre = None
        self.centre_rows = 0
        self.bits = np.zeros((0, self.width), dtype=np.uint8)

    def grow(self, capacity: int, used: int) -> None:
        """Room for ``capacity`` positions, the first ``used`` kept (no-op while no centre is held)."""
        if self.centre is None or capacity <= self.bits.shape[0]:
            return
        grown = np.zeros((capacity, self.width), dtype=np.uint8)
        grown[:used] = self.bits[:used]
        self.bits = grown

    def store(self, start: int, codes: np.ndarray, scales: np.ndarray) -> None:
        """Bits of the rows now at positions ``start`` .. (their int8 codes and scales), when held."""
        if self.centre is not None:
            self.bits[start : start + codes.shape[0]] = sign_bits(codes, scales, self.centre)

    def keep(self, order: np.ndarray) -> None:
        """Keep the bits of positions ``order``, in that order (the index compacted its rows)."""
        if self.centre is not None:
            self.bits = np.ascontiguousarray(self.bits[order])

    def ensure(self, codes: np.ndarray, scales: np.ndarray, live: np.ndarray, capacity: int) -> None:
        """Take the centre and every row's bits when none are held, or when the live rows drifted
        ``_DRIFT`` times from those the centre was taken over. ``codes``/``scales``/``live``: the
        index's positions in use; ``capacity``: the positions it has room for."""
        live_count = int(live.sum())
        if (
            self.centre is not None
            and live_count <= self.centre_rows * _DRIFT
            and (live_count * _DRIFT >= self.centre_rows)
        ):
            return
        n = codes.shape[0]
        weights = np.where(live, scales, np.float32(0)).astype(np.float32)  # holes count for nothing
        total = np.zeros(codes.shape[1], dtype=np.float64)
        for start in range(0, n, _CHUNK):
            block = slice(start, min(start + _CHUNK, n))
            total += np.einsum("ij,i->j", codes[block].astype(np.float32), weights[block])
        centre = (total / max(live_count, 1)).astype(np.float32)
        bits = np.zeros((max(n, capacity), self.width), dtype=np.uint8)
        for start in range(0, n, _CHUNK):
            block = slice(start, min(start + _CHUNK, n))
            bits[block] = sign_bits(codes[block], scales[block], centre)
        self.centre, self.centre_rows, self.bits = centre, live_count, bits
        self.rebuilds += 1

    def best(self, positions: np.ndarray, used: int, q: np.ndarray, count: int, gather: bool) -> np.ndarray:
        """The positions of ``positions`` nearest ``q`` by Hamming distance (``within``'s rule): scanning
        the bits of the ``used`` positions and picking, or of ``positions`` gathered when ``gather``."""
        if self.centre is None:
            raise RuntimeError("SignBits.best before ensure")
        query_bits = np.packbits(np.asarray(q, dtype=np.float32) > self.centre)[None, :]
        if gather:
            distances = hamming(self.bits[positions], query_bits)
        elif positions.size == used:  # every position is in scope (one agent's store): no pick needed
            distances = hamming(self.bits[:used], query_bits)
        else:  # every row's distance, then the scope's: the cut is taken among the scope's rows only
            distances = hamming(self.bits[:used], query_bits)[positions]
        return positions[within(distances, count)]
