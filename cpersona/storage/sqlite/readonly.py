"""A read-only view of the database file, for report-only health checks.

The connection is opened with ``mode=ro`` and ``PRAGMA query_only``, so
nothing can be written through it: no migration, no WAL checkpoint on close,
no journal-mode switch. It offers the same ``read`` / ``connection`` /
``close`` methods as ``Database``; ``write`` raises.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from cpersona.errors import DatabaseUnavailable
from cpersona.storage.sqlite.db import BUSY_TIMEOUT_MS, Database, map_file


class ReadOnlyDatabase(Database):
    """``Database`` whose every connection is read-only (``write()`` is refused)."""

    def __init__(self, path: Path | str) -> None:  # noqa: D107 - deliberately skips Database's WAL switch
        self._start(path)
        if not self.path.is_file():
            raise DatabaseUnavailable(f"no database at {self.path} (check CPERSONA_DB_PATH)")
        try:
            self.connection().execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as exc:
            self.close()
            raise DatabaseUnavailable(f"cannot open the database {self.path} read-only: {exc}") from exc

    def _connect(self) -> sqlite3.Connection:
        """A new read-only connection for one thread."""
        # Without a -wal file no connection has the database open in WAL mode, and mode=ro alone
        # would create empty -wal/-shm files; immutable=1 reads the main file and creates nothing.
        wal = self.path.with_name(self.path.name + "-wal")
        flags = "mode=ro" if wal.exists() else "mode=ro&immutable=1"
        uri = f"file:{quote(str(self.path.resolve()))}?{flags}"
        conn = sqlite3.connect(
            uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
        )
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA query_only = 1")
        map_file(conn)
        return conn

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """Refused: this view never writes."""
        raise PermissionError("the database was opened read-only (report-only health check)")
        yield  # pragma: no cover - makes this a generator
