"""Connections read the file through a memory map (storage/sqlite/db.py ``MMAP_BYTES``)."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from cpersona.storage.sqlite.db import MMAP_BYTES, Database
from cpersona.storage.sqlite.readonly import ReadOnlyDatabase

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="no memory map on Windows (db.MMAP_BYTES)")


def _mapped(conn: object) -> int:
    return int(conn.execute("PRAGMA mmap_size").fetchone()[0])  # type: ignore[attr-defined]


def test_every_connection_maps_the_file(tmp_path: Path) -> None:
    db = Database(tmp_path / "m.db")
    try:
        assert MMAP_BYTES > 0
        assert _mapped(db.connection()) > 0
        seen: list[int] = []
        worker = threading.Thread(target=lambda: seen.append(_mapped(db.connection())))
        worker.start()
        worker.join()
        assert seen and seen[0] == _mapped(db.connection())
    finally:
        db.close()


def test_read_only_connections_map_the_file(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    Database(path).close()
    ro = ReadOnlyDatabase(path)
    try:
        assert _mapped(ro.connection()) > 0
    finally:
        ro.close()


def test_mapped_readers_see_each_commit(tmp_path: Path) -> None:
    """A reader on another thread sees every committed write through its map (WAL pages and, after a
    checkpoint, the main file), and never a half-written one."""
    db = Database(tmp_path / "m.db")
    try:
        with db.write() as conn:
            conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)")
        counts: list[int] = []

        def read() -> None:
            with db.read() as conn:
                counts.append(int(conn.execute("SELECT count(*) FROM t").fetchone()[0]))

        for n in range(1, 6):
            with db.write() as conn:
                conn.executemany("INSERT INTO t(body) VALUES (?)", [("x" * 3000,)] * 200)
            if n == 3:
                db.connection().execute("PRAGMA wal_checkpoint(TRUNCATE)")
            reader = threading.Thread(target=read)
            reader.start()
            reader.join()
        assert counts == [200, 400, 600, 800, 1000]
    finally:
        db.close()
