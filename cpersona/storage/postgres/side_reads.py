"""Reads run beside a read transaction, in its snapshot, on connections of their own (``SideReads``).

A PostgreSQL recall runs its statements one after the other on one connection, so the server
works on one of them at a time while the other core idles: the HNSW scan (~3 ms of server CPU at
10k rows, the largest statement of a recall) and the keyword channels' statements (~3 ms together)
do not depend on each other until fusion. ``SideReads`` runs a vector search on a second backend
while the recall's own connection runs the keyword statements, as the SQLite engine scans its
index on a worker thread (``storage/deferred_vectors.py``).

The answer must be the one the recall's connection would give, so the side transaction imports
the recall's snapshot (``pg_export_snapshot`` / ``SET TRANSACTION SNAPSHOT``): it sees exactly
the rows the recall sees. Each worker thread keeps one connection of its own (configured as the
pool's are), not a pooled one: a recall that holds a pooled connection never waits for a second
(concurrent recalls queue for the workers instead, which only costs them the overlap). A failed
side read is the caller's to repeat on its own connection.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import psycopg
from psycopg import IsolationLevel, sql
from psycopg_pool import ConnectionPool

from cpersona.storage.postgres.sql import Executor

T = TypeVar("T")

#: Side reads at once: a recall's two vector searches (memories, episodes).
WORKERS = 2
#: A table's rows (the planner's estimate) from which its vector search runs on the side. The side read
#: costs ~1 ms of client and ~1 ms of server CPU per recall (snapshot export, the side transaction); at 10k
#: rows the scan is too short to pay for it (retrieval +1.0 ms p50 at load 5), at 100k it pays (-2.7 ms):
#: interleaved A/B, docs/history/benchmarks-rounds.md. Between the two the threshold is a guess, not a measurement.
SIDE_FROM_ROWS = 50_000
#: Seconds a table's row estimate is kept before it is read again.
SIZE_TTL_S = 60.0


class SideReads:
    """Worker threads, each with its own connection, that run reads in an exported snapshot."""

    def __init__(self, connect: Callable[[], psycopg.Connection[Any]], pool: ConnectionPool[Any]) -> None:
        self._connect = connect
        self._pool = pool  # for the Executor's signature only: side reads never borrow from it
        self._local = threading.local()
        self._opened: list[psycopg.Connection[Any]] = []
        self._lock = threading.Lock()
        self._closed = False
        self._sizes: dict[str, tuple[float, float]] = {}  # table -> (row estimate, when read)
        self._workers = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="cpersona-pg-side")

    def worth_it(self, ex: Executor, table: str) -> bool:
        """Whether ``table`` is large enough for a side read (the planner's row estimate, read at most once
        a minute on the caller's connection)."""
        now = time.monotonic()
        known = self._sizes.get(table)
        if known is None or now - known[1] > SIZE_TTL_S:
            rows = ex.value("SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s)", (table,))
            known = self._sizes[table] = (float(rows) if rows is not None else -1.0, now)
        return known[0] >= SIDE_FROM_ROWS

    def submit(self, snapshot: str, work: Callable[[Executor], T]) -> Future[T]:
        """Run ``work`` on a worker, in a READ ONLY transaction that imported ``snapshot``."""
        return self._workers.submit(self._run, snapshot, work)

    def _connection(self) -> psycopg.Connection[Any]:
        conn: psycopg.Connection[Any] | None = getattr(self._local, "conn", None)
        if conn is None or conn.closed or conn.broken:
            conn = self._connect()
            conn.isolation_level, conn.read_only = IsolationLevel.REPEATABLE_READ, True
            with self._lock:
                if self._closed:
                    conn.close()
                    raise psycopg.OperationalError("the store is closed")
                self._opened.append(conn)
            self._local.conn = conn
        return conn

    def _run(self, snapshot: str, work: Callable[[Executor], T]) -> T:
        conn = self._connection()
        try:
            # Not pipelined: that saved no wall time and cost ~0.2 ms more CPU per recall (interleaved A/B, loaded);
            # the side path is shorter than the keyword statements it runs beside.
            with conn.transaction():
                conn.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(snapshot)))
                return work(Executor(self._pool, conn))
        except psycopg.OperationalError:
            conn.close()  # a lost connection: the next side read on this worker opens another
            raise

    def close(self) -> None:
        """Stop the workers and close their connections."""
        with self._lock:
            self._closed = True
            opened, self._opened = self._opened, []
        self._workers.shutdown(wait=True)
        for conn in opened:
            conn.close()
