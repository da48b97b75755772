"""Database.close while another thread is inside a read or a write: it waits, never closes under a statement.

Closing a connection another thread is stepping through makes the sqlite3 module read freed memory
(a crash seen when Memory.close met the self-calibration thread mid-read).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from cpersona.storage.sqlite.db import Database


def _paused_reader(
    db: Database, inside: threading.Event, release: threading.Event, out: list[object]
) -> None:
    def pause() -> int:
        inside.set()
        release.wait(10)
        return 1

    try:
        with db.read() as conn:
            conn.create_function("pause", 0, pause)
            out.append(conn.execute("SELECT pause() + COUNT(*) FROM t").fetchone()[0])
    except Exception as exc:  # noqa: BLE001 - the test reports whatever the reader met
        out.append(exc)


def _db(tmp_path: Path) -> Database:
    db = Database(tmp_path / "c.db")
    with db.write() as conn:
        conn.execute("CREATE TABLE t (x INTEGER)")
        conn.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(100)])
    return db


def test_close_waits_for_another_threads_read_then_closes_its_connection(tmp_path: Path) -> None:
    db = _db(tmp_path)
    inside, release, out = threading.Event(), threading.Event(), []
    reader = threading.Thread(target=_paused_reader, args=(db, inside, release, out))
    reader.start()
    assert inside.wait(10)
    closer = threading.Thread(target=db.close)
    closer.start()
    closer.join(0.3)
    assert closer.is_alive(), "close must wait while another thread's statement runs"
    release.set()
    closer.join(10)
    reader.join(10)
    assert not closer.is_alive()
    assert out == [101]  # the read finished on its own connection
    assert db._all == [] and db._in_use == {}


def test_close_gives_up_waiting_and_leaves_the_busy_connection_open(tmp_path: Path) -> None:
    db = _db(tmp_path)
    inside, release, out = threading.Event(), threading.Event(), []
    reader = threading.Thread(target=_paused_reader, args=(db, inside, release, out))
    reader.start()
    assert inside.wait(10)
    started = time.monotonic()
    db.close(wait=0.2)
    assert time.monotonic() - started < 5
    release.set()
    reader.join(10)
    assert out == [101]  # not closed under it: the statement completed


def test_close_of_idle_connections_does_not_wait(tmp_path: Path) -> None:
    db = _db(tmp_path)
    done = threading.Event()

    def read_once() -> None:
        with db.read() as conn:
            conn.execute("SELECT COUNT(*) FROM t").fetchone()
        done.set()

    threading.Thread(target=read_once).start()
    assert done.wait(10)
    started = time.monotonic()
    db.close(wait=5)
    assert time.monotonic() - started < 2
    with db.read() as conn:  # a later read opens a fresh connection
        assert conn.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 100
    db.close()
