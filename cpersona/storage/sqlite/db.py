"""Connections to the one SQLite file: WAL, busy timeout, serialised writes.

Each thread gets its own connection (reads run concurrently under WAL). Writes
go through ``Database.write()``: a process-wide lock serialises writers inside
this process and ``BEGIN IMMEDIATE`` takes SQLite's write lock up front, so
other processes queue on ``busy_timeout`` instead of failing mid-transaction.
A residual "database is locked" (another process held the lock past the
timeout) is retried with back-off, never surfaced to a client.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from cpersona.errors import DatabaseUnavailable, ReadOnlyStorage, StorageFault, StorageFull

BUSY_TIMEOUT_MS = 30_000
#: Bytes of the file a connection reads through a memory map. A recall at 100k reads a few hundred
#: scattered pages of the FTS indexes and of ``memories``; through SQLite's 2 MB page cache each miss
#: is a pread() and a copy, about a sixth of the recalling thread's CPU. The mapped pages a process
#: touches count in its RSS (file-backed, reclaimable), and loading the vector index reads every row,
#: so the map is bounded: 256 MB kept ~80% of what mapping the whole 100k file (309 MB) gained, with
#: the RSS growth capped at 256 MB at any size (docs/decisions.md "Reads through a memory map").
MMAP_BYTES = 0 if sys.platform == "win32" else 256 * 1024**2
_WRITE_RETRIES = 5
#: How long ``Database.close`` waits for another thread's read or write to end before leaving its
#: connection open (as long as a write may wait for the lock).
CLOSE_WAIT_S = BUSY_TIMEOUT_MS / 1000
# Primary SQLite result codes (extended codes carry them in the low byte).
_SQLITE_READONLY = 8
_SQLITE_FULL = 13

log = logging.getLogger("cpersona.storage")


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(
        str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
    )
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA synchronous = NORMAL")
    # Deleted and rewritten text is zeroed, not left in free pages: a redacted secret or a deleted
    # memory must not stay readable in the file's bytes (docs/secrets-and-forgetting.md). Many builds
    # default to it already; this makes it so everywhere.
    conn.execute("PRAGMA secure_delete = ON")
    map_file(conn)
    return conn


def map_file(conn: sqlite3.Connection) -> None:
    """Read the file through a memory map (``MMAP_BYTES``; off on Windows, where another connection's
    map stops the file being truncated): pages come from the OS cache without a copy, shared by every
    connection, instead of each connection's small page cache."""
    if MMAP_BYTES:
        conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")


class Database:
    """The SQLite file plus the connections and write lock that guard it."""

    def __init__(self, path: Path | str) -> None:
        self._start(path)
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

    def _start(self, path: Path | str) -> None:
        """The state every ``Database`` holds before its first connection (subclasses share it)."""
        self.path = Path(path)
        self._local = threading.local()
        self._write_lock = threading.RLock()
        self._all: list[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        # Connections inside a read() or write() right now (by id, nesting counted): close() waits for them.
        self._in_use: dict[int, int] = {}
        self._released = threading.Condition(self._all_lock)
        self._faults_seen: dict[str, int] = {}

    def _connect(self) -> sqlite3.Connection:
        """A new connection for one thread (``ReadOnlyDatabase`` opens read-only ones instead)."""
        return _connect(self.path)

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (created on first use)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
            with self._all_lock:
                self._all.append(conn)
        return conn

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A consistent snapshot for several SELECTs (a deferred read transaction)."""
        conn = self.connection()
        with self._using(conn):
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
    def _using(self, conn: sqlite3.Connection) -> Iterator[None]:
        """Mark ``conn`` in use for the block, so ``close`` on another thread waits instead of
        closing it under a running statement (the sqlite3 module then reads freed memory)."""
        key = id(conn)
        with self._released:
            self._in_use[key] = self._in_use.get(key, 0) + 1
        try:
            yield
        finally:
            with self._released:
                left = self._in_use[key] - 1
                if left:
                    self._in_use[key] = left
                else:
                    del self._in_use[key]
                    self._released.notify_all()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: all of it lands or none of it does.

        A read-only file or a full disk raises ``ReadOnlyStorage`` / ``StorageFull`` (stable codes,
        nothing written) instead of the driver's OperationalError.
        """
        with self._write_lock, self._using(conn := self.connection()):
            if conn.in_transaction:  # nested use inside an outer write: join it
                yield conn
                return
            try:
                self._begin_immediate(conn)
                try:
                    yield conn
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:  # SQLITE_FULL may already have rolled it back
                        with suppress(sqlite3.Error):
                            conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                fault = self.storage_fault(exc)
                if fault is None:
                    raise
                raise fault from exc

    def read_only(self) -> bool:
        """Whether this process may not write the file (permissions, immutable flag, read-only mount)."""
        return self.path.exists() and not os.access(self.path, os.W_OK)

    def storage_fault(self, exc: sqlite3.Error) -> StorageFault | None:
        """The domain error for a read-only or full database, logged once per kind; None for others."""
        code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
        fault: StorageFault
        if code == _SQLITE_READONLY:
            fault = ReadOnlyStorage(
                f"the database {self.path} is read-only for this process (file permissions, an immutable "
                "flag or a read-only mount); nothing was written. Reads and recall still work.",
                str(self.path),
            )
        elif code == _SQLITE_FULL:
            fault = StorageFull(
                f"no space left for the database {self.path} (the disk or its size limit is full); nothing "
                "was written and everything stored before is intact. Free space, then retry.",
                str(self.path),
            )
        else:
            return None
        seen = self._faults_seen.get(fault.code, 0)
        self._faults_seen[fault.code] = seen + 1
        if seen == 0:
            log.warning("%s (%s; later occurrences are logged at debug level)", fault, exc)
        else:
            log.debug("%s again (%d times so far)", fault.code, seen + 1)
        return fault

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

    def close(self, wait: float = CLOSE_WAIT_S) -> None:
        """Close every connection this object opened.

        A connection another thread is reading or writing through (a background pass still running
        when the server stops) is closed once its block ends, waiting up to ``wait`` seconds; one still
        busy after that is left to be closed when its thread lets go of it, never closed under a
        running statement.
        """
        mine = getattr(self._local, "conn", None)
        deadline = time.monotonic() + wait
        with self._released:
            for conn in self._all:
                while conn is not mine and id(conn) in self._in_use:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._released.wait(left)
                if conn is not mine and id(conn) in self._in_use:
                    log.warning(
                        "%s: a connection still in use by another thread was left open at close", self.path
                    )
                    continue
                with suppress(sqlite3.Error):
                    conn.close()
            self._all.clear()
        self._local = threading.local()
