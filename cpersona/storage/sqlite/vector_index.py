"""The SQLite engine's vector search: an in-memory copy of one table's vectors, kept in step with the file.

Every recall first calls ``sync``, which reads signals that live in the file, so
writes by other processes on the same file are seen on the next recall:

- rows with a higher id than any seen are appended (the common case: new stores);
- the ``vector_changes`` log names rows whose vector or scope changed (back-fill,
  re-embedding, a move between agents, invalidation) or that were deleted; just
  those rows are re-read and patched in place;
- a full reload happens only on a fresh index, when the generation counter moves,
  when the log was pruned past what this index saw, or when more than a third of
  the rows changed (one pass is then cheaper than patching).

Only vectors of the active model id and dimension are held: vectors of different
models are never compared. The matrix grows in place with ~12% headroom, so its
memory stays near the raw vector bytes.

Search, over a small candidate set (up to ``_GATHER_FRACTION`` x the rows it would rescore:
3,200 rows in scope for any recall's depth up to 100), scores every row with one float32
matrix-vector product and selects: a partial sort finds the top candidates, ties break on
the newer id. Over a larger one it first scans int8
codes of the rows (``storage/vector_quant.py``: a quarter of the bytes), then scores
the best few hundred exactly in float32, so the cosines returned are always exact. From
``BITS_FROM`` (81,920) rows in scope a cheaper pass comes first: the Hamming distance of
each row's centred sign bits to the query's (``storage/sqlite/vector_bits.py``: 48 B/row,
an eighth of the int8 bytes) keeps the nearest ``max(8192, 2%)`` of the scope for the
int8 pass. The bits and their centre are taken on the first search that needs them and
kept in step by every append, patch and compaction; a full reload, or the rows doubling
or halving since, takes a fresh centre (docs/decisions.md). Three passes, then: exact
float32 up to 3,200 rows in scope, int8 then float32 up to 81,919, bits then int8 then
float32 above.
Those float32 rows come from the index's own float32 copy, or, when the index keeps
no float32 copy (``keep_vectors=False``: a quarter of the memory), from the file,
read by id in the same snapshot the index was synced in.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np

from cpersona.storage.blocks import MEMORY_BLOCKS
from cpersona.storage.scope import AXIS_COLUMNS, Scope
from cpersona.storage.sqlite.vector_bits import BITS_FROM, BITS_KEEP_MIN, SignBits, keep_count
from cpersona.storage.sqlite.vector_feed import SqliteVectorFeed
from cpersona.storage.sqlite.vector_quant import approximate, quantize, rescore_count
from cpersona.storage.values import VECTOR_TABLES, VectorRow

#: Reads the float32 vectors of some ids from the file (when the index keeps no float32 copy).
Fetch = Callable[[list[int]], dict[int, bytes]]

_PAGE = 8192  # rows fetched per query during a full load
_RELOAD_FRACTION = 3  # more than 1/3 of the rows changed: reload instead of patching
# When the scope admits fewer than 1/_GATHER_FRACTION of the rows, gathering them is
# cheaper than scoring all rows. It also sets where the int8 pass starts: from _GATHER_FRACTION x the
# rows it rescores, the rescoring gathers its few hundred rows instead of scoring the whole matrix, and
# the pass (a quarter of the bytes) wins; below, int8 plus a full float32 product loses to the product
# alone. Measured per search (docs/history/benchmarks-rounds.md round 11): 3,000 rows 0.64 ms float32 against 0.86
# int8 with caches cold, 3,500 rows 0.75 against 0.56, 10k 1.56 against 0.87.
_GATHER_FRACTION = 8
# Indexes smaller than this are scanned on the caller's thread: below it, handing the scan to the worker
# costs more than running it beside the keyword queries saves. Measured interleaved per question
# (Memory.recall, identical answers; docs/history/benchmarks-rounds.md round 10): inline minus offloaded -0.28 to -0.44 ms
# at 10k, -0.19 to -0.46 at 30k, -0.08 at 60k, +0.28 to +0.67 at 100k. (Before round 10: 4,096.)
OFFLOAD_FROM = 50_000


def dot(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``matrix @ query`` computed on the calling thread.

    ``@`` goes to BLAS, which (OpenBLAS, as numpy ships it) splits a matrix-vector product over
    all cores and then spin-waits: at 10k×384 that costs ~3.6 ms of the caller's time and ~7 ms
    of CPU instead of ~0.6 ms on one thread, and the spinning threads take the core the
    keyword channels' SQLite queries need. A recall is one small product; one thread is faster.
    ``einsum`` without ``optimize`` runs numpy's own single-threaded SIMD loop (same results to
    float32 rounding, as fast as single-threaded BLAS at 384-d).
    """
    return np.einsum("ij,j->i", matrix, query)


class VectorIndex:
    """Vectors of ``table`` ('memories' or 'episodes') for one model id and dimension."""

    def __init__(
        self,
        table: str,
        model_id: str,
        dimension: int,
        *,
        keep_vectors: bool = True,
        exact_below: int | None = None,
        bits_from: int = BITS_FROM,
        bits_keep_min: int = BITS_KEEP_MIN,
    ) -> None:
        if table not in (*VECTOR_TABLES, MEMORY_BLOCKS):
            raise ValueError(f"no vector index for table {table!r}")
        self.table = table
        self.keep_vectors = keep_vectors  # hold the float32 rows too (else they are read from the file)
        # Up to this many candidates are scored exactly in float32 at once (with a float32 copy at hand);
        # None: _GATHER_FRACTION x the rows the int8 pass would rescore. Tests set 0 to force the pass.
        self.exact_below = exact_below
        # From this many candidates a sign-bit pass picks the rows the int8 pass scores (vector_bits).
        self.bits_from = bits_from
        self.bits_keep_min = bits_keep_min
        self._signs = SignBits(dimension)
        self.model_id = model_id
        self.dimension = dimension
        self._lock = threading.Lock()
        self._codes: dict[str, int] = {}
        self._generation: int | None = None
        self._max_seen_id = 0
        self._seen_seq = 0
        self.reloads = 0
        self.patched = 0  # rows applied from the change log (for tests and benchmarks)
        self._reset(0)

    # -- storage of the columns -----------------------------------------------------------------

    def _reset(self, capacity: int) -> None:
        self._n = 0  # positions in use (live or holes)
        self._live_count = 0
        self._vectors = np.zeros((capacity if self.keep_vectors else 0, self.dimension), dtype=np.float32)
        self._int8 = np.zeros((capacity, self.dimension), dtype=np.int8)
        self._scales = np.zeros(capacity, dtype=np.float32)
        self._ids = np.zeros(capacity, dtype=np.int64)
        self._axes = np.zeros((3, capacity), dtype=np.int32)  # agent, project, channel codes
        self._live = np.zeros(capacity, dtype=bool)
        self._ordered = True  # ids ascend with position (false after a back-filled old row)
        self._positions: dict[int, int] | None = None  # id -> position, built on first change
        self._signs.reset()  # a fresh load takes a fresh centre

    def _reserve(self, extra: int) -> None:
        need = self._n + extra
        capacity = self._ids.shape[0]
        if need <= capacity:
            return
        grown = max(need, capacity + capacity // 8 + 1024)
        if self.keep_vectors:
            vectors = np.zeros((grown, self.dimension), dtype=np.float32)
            vectors[: self._n] = self._vectors[: self._n]
            self._vectors = vectors
        codes = np.zeros((grown, self.dimension), dtype=np.int8)
        codes[: self._n] = self._int8[: self._n]
        self._int8 = codes
        self._scales = np.concatenate([self._scales[: self._n], np.zeros(grown - self._n, dtype=np.float32)])
        self._ids = np.concatenate([self._ids[: self._n], np.zeros(grown - self._n, dtype=np.int64)])
        axes = np.zeros((3, grown), dtype=np.int32)
        axes[:, : self._n] = self._axes[:, : self._n]
        self._axes = axes
        self._live = np.concatenate([self._live[: self._n], np.zeros(grown - self._n, dtype=bool)])
        self._signs.grow(grown, self._n)

    def __len__(self) -> int:
        return self._live_count

    def _code(self, value: str) -> int:
        code = self._codes.get(value)
        if code is None:
            code = len(self._codes)
            self._codes[value] = code
        return code

    def _append(self, rows: list[VectorRow]) -> None:
        if not rows:
            return
        self._reserve(len(rows))
        start, end = self._n, self._n + len(rows)
        block = np.frombuffer(b"".join(r[4] for r in rows), dtype="<f4").reshape(len(rows), self.dimension)
        if self.keep_vectors:
            self._vectors[start:end] = block
        self._int8[start:end], self._scales[start:end] = quantize(block)
        self._signs.store(start, self._int8[start:end], self._scales[start:end])
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        if start and self._ordered and int(ids[0]) < int(self._ids[start - 1]):
            self._ordered = False
        self._ids[start:end] = ids
        self._axes[0, start:end] = np.fromiter(
            (self._code(r[1]) for r in rows), dtype=np.int32, count=len(rows)
        )
        self._axes[1, start:end] = np.fromiter(
            (self._code(r[2]) for r in rows), dtype=np.int32, count=len(rows)
        )
        self._axes[2, start:end] = np.fromiter(
            (self._code(r[3]) for r in rows), dtype=np.int32, count=len(rows)
        )
        self._live[start:end] = True
        if self._positions is not None:
            for offset, row_id in enumerate(ids.tolist()):
                self._positions[row_id] = start + offset
        self._n = end
        self._live_count += len(rows)

    def _position_map(self) -> dict[int, int]:
        if self._positions is None:
            live = np.flatnonzero(self._live[: self._n])
            self._positions = dict(zip(self._ids[live].tolist(), live.tolist(), strict=True))
        return self._positions

    # -- keeping in step ------------------------------------------------------------------------

    def sync(self, feed: SqliteVectorFeed) -> None:
        """Bring the index up to date with the store (call inside one read snapshot)."""
        state = feed.state(self.table)
        with self._lock:
            missed_log = state.oldest_change > self._seen_seq + 1
            if self._generation != state.generation or missed_log:
                self._full_load(feed)
            elif state.change_seq > self._seen_seq:
                changed = feed.changed_since(self.table, self._seen_seq)
                # Changed rows above max_seen_id arrive with the append below.
                changed = [i for i in changed if i <= self._max_seen_id]
                if len(changed) * _RELOAD_FRACTION > max(self._live_count, 1) and len(changed) > 64:
                    self._full_load(feed)
                else:
                    self._patch(feed, changed)
            self._generation = state.generation
            self._seen_seq = state.change_seq
            if state.max_id > self._max_seen_id:
                self._load_after(feed, self._max_seen_id)
                self._max_seen_id = state.max_id

    def _full_load(self, feed: SqliteVectorFeed) -> None:
        self._reset(0)
        self._max_seen_id = 0  # the append step of sync loads every row
        self.reloads += 1

    def _load_after(self, feed: SqliteVectorFeed, after_id: int) -> None:
        while True:
            rows = feed.rows_after(self.table, after_id, self.model_id, self.dimension, _PAGE)
            self._append(rows)
            if len(rows) < _PAGE:
                return
            after_id = rows[-1][0]

    def _patch(self, feed: SqliteVectorFeed, changed: list[int]) -> None:
        if not changed:
            return
        positions = self._position_map()
        current = {r[0]: r for r in feed.rows_by_id(self.table, changed, self.model_id, self.dimension)}
        fresh: list[VectorRow] = []
        for row_id in changed:
            pos = positions.get(row_id)
            row = current.get(row_id)
            if row is None:  # deleted, or no longer a vector of this model
                if pos is not None:
                    self._live[pos] = False
                    del positions[row_id]
                    self._live_count -= 1
            elif pos is None:  # back-filled: a row this index has not held
                fresh.append(row)
            else:
                vector = np.frombuffer(row[4], dtype="<f4")
                if self.keep_vectors:
                    self._vectors[pos] = vector
                codes, scales = quantize(vector[None, :])
                self._int8[pos], self._scales[pos] = codes[0], scales[0]
                self._signs.store(pos, codes, scales)
                self._axes[:, pos] = (self._code(row[1]), self._code(row[2]), self._code(row[3]))
        self._append(sorted(fresh))
        self.patched += len(changed)
        if self._n - self._live_count > max(1024, self._n // 4):
            self._compact()

    def _compact(self) -> None:
        keep = np.flatnonzero(self._live[: self._n])
        order = keep[np.argsort(self._ids[keep], kind="stable")]
        if self.keep_vectors:
            self._vectors = np.ascontiguousarray(self._vectors[order])
        self._int8 = np.ascontiguousarray(self._int8[order])
        self._signs.keep(order)
        self._scales = self._scales[order].copy()
        self._ids = self._ids[order].copy()
        self._axes = np.ascontiguousarray(self._axes[:, order])
        self._live = np.ones(order.size, dtype=bool)
        self._n = self._live_count = int(order.size)
        self._ordered = True
        self._positions = None

    # -- search ---------------------------------------------------------------------------------

    def _mask(self, scope: Scope) -> np.ndarray:
        """Live rows that pass every test of ``scope`` (the rule of ``storage.scope``, on the axis codes)."""
        n = self._n
        mask = self._live[:n].copy()
        for test in scope.tests():
            column = self._axes[AXIS_COLUMNS.index(test.column), :n]
            allowed = sorted({self._codes[v] for v in test.admitted if v in self._codes})
            if not allowed:  # no row holds an admitted value (or the test admits none)
                return np.zeros(n, dtype=bool)
            if len(allowed) == 1:
                mask &= column == allowed[0]
            elif len(allowed) == 2:
                mask &= (column == allowed[0]) | (column == allowed[1])
            else:
                mask &= np.isin(column, allowed)
        return mask

    def search(
        self,
        query: np.ndarray,
        scope: Scope,
        limit: int,
        *,
        window: int | None = None,
        allowed_ids: Sequence[int] | np.ndarray | None = None,
        fetch: Fetch | None = None,
    ) -> list[tuple[int, float]]:
        """Top ``limit`` (id, cosine) among rows in scope (the ``window`` most recent when set).

        Ties break on the higher (newer) id so results are deterministic. ``fetch`` reads float32 rows
        from the file; it is needed when the index keeps no float32 copy.
        """
        q = np.asarray(query, dtype=np.float32)
        ids, scores = self.candidates(q, scope, limit, window=window, allowed_ids=allowed_ids)
        return self.finish(ids, scores, q, limit, fetch)

    def candidates(
        self,
        q: np.ndarray,
        scope: Scope,
        limit: int,
        *,
        window: int | None = None,
        allowed_ids: Sequence[int] | np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """The scan of ``search`` (no database read, so it may run on a worker thread): the ids worth
        scoring exactly, with their float32 cosines when this index keeps float32 rows (else None)."""
        with self._lock:  # sync patches rows in place; a search never sees half a change
            n = self._n
            if limit <= 0 or self._live_count == 0:
                return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
            mask = self._mask(scope)
            if allowed_ids is not None:
                mask &= np.isin(self._ids[:n], np.asarray(allowed_ids, dtype=np.int64))
            positions = np.flatnonzero(mask)
            if window is not None and positions.size > window:
                if self._ordered:
                    positions = positions[-window:]
                else:
                    newest = np.argpartition(self._ids[positions], positions.size - window)[-window:]
                    positions = np.sort(positions[newest])
            if positions.size == 0:
                return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
            rescore = rescore_count(limit)
            if positions.size > self._exact_up_to(rescore):
                if positions.size >= self.bits_from:
                    positions = self._best_bits(positions, q, keep_count(positions.size, self.bits_keep_min))
                positions = self._best_approximate(positions, q, rescore)
            ids = self._ids[positions].copy()
            return ids, (self._exact(positions, q) if self.keep_vectors else None)

    def _exact_up_to(self, rescore: int) -> int:
        """The most candidates scored by the float32 scan alone (more go through the int8 pass first)."""
        if not self.keep_vectors:
            return rescore  # the float32 rows come from the file: read no more of them than the pass would
        return _GATHER_FRACTION * rescore if self.exact_below is None else self.exact_below

    def finish(
        self, ids: np.ndarray, scores: np.ndarray | None, q: np.ndarray, limit: int, fetch: Fetch | None
    ) -> list[tuple[int, float]]:
        """The top ``limit`` of ``candidates``' answer, best first (float32 rows read by ``fetch`` first
        when the index keeps none: on the caller's thread, the one its connection belongs to)."""
        if scores is None:
            ids, scores = self._exact_from_file(ids, q, fetch)
        if scores.size > limit:
            # Keep everything tied with the limit-th score, then order exactly.
            kth = np.partition(scores, scores.size - limit)[scores.size - limit]
            keep = np.flatnonzero(scores >= kth)
            scores, ids = scores[keep], ids[keep]
        order = np.lexsort((-ids, -scores))[:limit]
        return [(int(ids[i]), float(scores[i])) for i in order]

    def _exact(self, positions: np.ndarray, q: np.ndarray) -> np.ndarray:
        """float32 cosines of ``positions``: scoring every row and picking beats gathering most of them.

        A gather of all 10k rows copies 15 MB per query (3.4 ms against 0.8 ms for the product over
        the contiguous matrix); each row's product is the same loop over the same 384 floats either
        way, so the scores are bit for bit those of the gathered rows.
        """
        n = self._n
        if positions.size * _GATHER_FRACTION < n:
            return dot(self._vectors[positions], q)
        return dot(self._vectors[:n], q)[positions]

    def _best_approximate(self, positions: np.ndarray, q: np.ndarray, count: int) -> np.ndarray:
        """The ``count`` positions of ``positions`` with the best int8 scores, every tie at the cut kept."""
        n = self._n
        if positions.size * _GATHER_FRACTION < n:
            approx = approximate(self._int8[positions], self._scales[positions], q)
        else:
            approx = approximate(self._int8[:n], self._scales[:n], q)[positions]
        if approx.size <= count:
            return positions
        kth = np.partition(approx, approx.size - count)[approx.size - count]
        return positions[approx >= kth]

    def _best_bits(self, positions: np.ndarray, q: np.ndarray, count: int) -> np.ndarray:
        """The ``count`` positions of ``positions`` nearest by sign bits (ties at the cut kept), taking the
        centre and the bits first when none are held or the rows drifted (``vector_bits.SignBits``)."""
        n = self._n
        self._signs.ensure(self._int8[:n], self._scales[:n], self._live[:n], self._ids.shape[0])
        return self._signs.best(positions, n, q, count, gather=positions.size * _GATHER_FRACTION < n)

    def _exact_from_file(
        self, ids: np.ndarray, q: np.ndarray, fetch: Fetch | None
    ) -> tuple[np.ndarray, np.ndarray]:
        if fetch is None:
            raise ValueError("this vector index keeps no float32 rows: search needs a fetch from the file")
        blobs = fetch([int(i) for i in ids])
        found = np.fromiter((i for i in ids.tolist() if i in blobs), dtype=np.int64)
        if found.size == 0:
            return found, np.zeros(0, dtype=np.float32)
        matrix = np.frombuffer(b"".join(blobs[int(i)] for i in found), dtype="<f4").reshape(found.size, -1)
        return found, dot(matrix, q)

    def cosines(self, query: np.ndarray, ids: Sequence[int], fetch: Fetch | None = None) -> dict[int, float]:
        """Cosine of ``query`` with each of ``ids`` that holds a vector of this index's model."""
        q = np.asarray(query, dtype=np.float32)
        with self._lock:
            if not ids or self._live_count == 0:
                return {}
            positions = self._positions_of(np.asarray(ids, dtype=np.int64))
            held = self._ids[positions].copy()
            scores = dot(self._vectors[positions], q) if self.keep_vectors else None
        if scores is None:
            held, scores = self._exact_from_file(held, q, fetch)
        return {int(i): float(v) for i, v in zip(held, scores, strict=True)}

    def _positions_of(self, ids: np.ndarray) -> np.ndarray:
        """Ascending positions of the live rows holding ``ids`` (call under the lock).

        The gate asks for a few dozen ids per recall: while ids ascend with position a binary search
        finds them without scanning all rows (``np.isin`` sorts the whole id column each call); an id
        held at more than one position (a re-appended row) falls back to that scan.
        """
        n = self._n
        column = self._ids[:n]
        if self._ordered:
            wanted = np.unique(ids)
            lo = np.searchsorted(column, wanted, "left")
            hi = np.searchsorted(column, wanted, "right")
            if bool(np.all(hi - lo <= 1)):
                found = lo[hi > lo]
                return found[self._live[found]]
        return np.flatnonzero(self._live[:n] & np.isin(column, ids))

    def agent_rows(self, agent_id: str, fetch: Fetch | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(ids, vectors) of one agent's rows in id order (copies; empty arrays when none)."""
        empty = np.zeros(0, dtype=np.int64), np.zeros((0, self.dimension), dtype=np.float32)
        with self._lock:
            n = self._n
            code = self._codes.get(agent_id)
            if code is None or self._live_count == 0:
                return empty
            positions = np.flatnonzero(self._live[:n] & (self._axes[0, :n] == code))
            order = positions[np.argsort(self._ids[positions], kind="stable")]
            ids = self._ids[order].copy()
            if self.keep_vectors:
                return ids, self._vectors[order].copy()
        if fetch is None:
            raise ValueError(
                "this vector index keeps no float32 rows: agent_rows needs a fetch from the file"
            )
        blobs = fetch([int(i) for i in ids])
        ids = np.fromiter((i for i in ids.tolist() if i in blobs), dtype=np.int64)
        if ids.size == 0:
            return empty
        rows = np.frombuffer(b"".join(blobs[int(i)] for i in ids), dtype="<f4").reshape(ids.size, -1)
        return ids, rows.copy()

    def agent_counts(self) -> dict[str, int]:
        """Live rows per agent (a count over the in-memory columns: no database read)."""
        with self._lock:
            n = self._n
            if self._live_count == 0:
                return {}
            counts = np.bincount(self._axes[0, :n][self._live[:n]], minlength=len(self._codes) + 1)
            return {agent: int(counts[code]) for agent, code in self._codes.items() if counts[code]}


class VectorIndexes:
    """The indexes of one ``SqliteStore``, one per table, rebuilt when the active model or dimension changes.

    ``keep_vectors`` (``CPERSONA_VECTOR_FLOAT32``): whether each index holds its float32 rows as well as the
    int8 codes, or reads the few it rescores from the file.
    """

    def __init__(self, *, keep_vectors: bool = True) -> None:
        self._indexes: dict[str, VectorIndex] = {}
        self._lock = threading.Lock()
        self.keep_vectors = keep_vectors

    def get(self, table: str, model_id: str, dimension: int) -> VectorIndex:
        """The index of ``table`` for this model and dimension (a fresh one after a model change)."""
        with self._lock:
            index = self._indexes.get(table)
            if index is None or index.model_id != model_id or index.dimension != dimension:
                index = VectorIndex(table, model_id, dimension, keep_vectors=self.keep_vectors)
                self._indexes[table] = index
            return index
