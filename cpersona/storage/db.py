"""Connections to the one SQLite file: WAL, busy timeout, serialised writes.

Each thread gets its own connection (reads run concurrently under WAL). Writes
go through ``Database.write()``: a process-wide lock serialises writers inside
this process and ``BEGIN IMMEDIATE`` takes SQLite's write lock up front, so
other processes queue on ``busy_timeout`` instead of failing mid-transaction.
A residual "database is locked" (another process held the lock past the
timeout) is retried with back-off, never surfaced to a client.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from cpersona.errors import DatabaseUnavailable

BUSY_TIMEOUT_MS = 30_000
_WRITE_RETRIES = 5


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


class Database:
    """The SQLite file plus the connections and write lock that guard it."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._local = threading.local()
        self._write_lock = threading.RLock()
        self._all: list[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            mode = self.connection().execute("PRAGMA journal_mode = WAL").fetchone()[0]
        except (sqlite3.Error, OSError) as exc:
            self.close()
            raise DatabaseUnavailable(
                f"cannot open the database {self.path}: {exc} (check CPERSONA_DB_PATH and its permissions)"
            ) from exc
        if str(mode).lower() != "wal":
            self.close()
            raise DatabaseUnavailable(f"could not switch {self.path} to WAL mode (got {mode})")

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (created on first use)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = _connect(self.path)
            self._local.conn = conn
            with self._all_lock:
                self._all.append(conn)
        return conn

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A consistent snapshot for several SELECTs (a deferred read transaction)."""
        conn = self.connection()
        if conn.in_transaction:
            yield conn
            return
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: all of it lands or none of it does."""
        with self._write_lock:
            conn = self.connection()
            if conn.in_transaction:  # nested use inside an outer write: join it
                yield conn
                return
            self._begin_immediate(conn)
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            else:
                conn.execute("COMMIT")

    @staticmethod
    def _begin_immediate(conn: sqlite3.Connection) -> None:
        delay = 0.05
        for attempt in range(_WRITE_RETRIES):
            try:
                conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                if attempt == _WRITE_RETRIES - 1:
                    raise
                time.sleep(delay)
                delay *= 2

    def close(self) -> None:
        """Close every connection this object opened."""
        with self._all_lock:
            for conn in self._all:
                with suppress(sqlite3.Error):
                    conn.close()
            self._all.clear()
        self._local = threading.local()
