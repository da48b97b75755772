"""Where calibration state lives: the SQLite sidecar (flock, re-read before writing, unsaved state kept
in the process) and the PostgreSQL table (shared by every server, advisory locks), on real files and a
real PostgreSQL server."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from pg_cluster import PgCluster

from cpersona.storage import open_store
from cpersona.storage.sqlite.calibration import SidecarStates, lock_path, sidecar_path
from cpersona.storage.values import NewProfile


def entry(rows: int) -> dict[str, object]:
    return {"fingerprint": {"model_id": "m", "dimension": 3, "scoring_version": 1}, "rows": rows}


def test_two_writers_on_one_sidecar_keep_each_others_agents(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    first, second = SidecarStates(db), SidecarStates(db)  # two processes' views of one file
    assert first.get("a") is None and second.agents() == {}  # both have read (and cached) the empty file
    assert first.modify("a", lambda _: entry(10)).persisted
    # The second never re-read since; its write must not drop agent a (it re-reads under the lock).
    assert second.modify("b", lambda _: entry(20)).persisted
    assert set(SidecarStates(db).agents()) == {"a", "b"}
    assert second.get("a") == entry(10)
    # A change function sees the freshly read entry, so a read-modify-write keeps the other writer's part.
    first.modify("b", lambda e: {**(e or {}), "precision": {"level": "strict", "beta": None}})
    assert second.get("b") == {**entry(20), "precision": {"level": "strict", "beta": None}}
    assert first.modify("a", lambda _: None).persisted and second.get("a") is None


def test_one_calibration_at_a_time_per_file_within_and_across_processes(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    first, second = SidecarStates(db), SidecarStates(db)
    with first.exclusive("a") as held:
        assert held
        with second.exclusive("b", wait=0.2) as other:
            assert other is False  # a second calibration (any agent) on this file waits its turn
        with first.exclusive("a") as again:
            assert again  # re-entrant for the holder: its own writes inside the calibration go through
            assert first.modify("a", lambda _: entry(1)).persisted
    with second.exclusive("b") as free:
        assert free
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import fcntl, os, sys, time
                fd = os.open({str(lock_path(db))!r}, os.O_RDWR | os.O_CREAT)
                fcntl.flock(fd, fcntl.LOCK_EX)
                print("held", flush=True)
                time.sleep(30)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with first.exclusive("a", wait=0.3) as held:
            assert held is False  # another process is calibrating on this file
        saved = first.modify("a", lambda _: entry(2), wait=0.3)
        assert saved.persisted is False and "held by another process" in (saved.problem or "")
        assert first.get("a") == entry(2)  # in force here meanwhile
    finally:
        holder.kill()
        holder.wait()
    assert first.modify("z", lambda _: entry(3)).persisted  # the next write saves the pending entry too
    assert SidecarStates(db).get("a") == entry(2)


def test_a_sidecar_that_cannot_be_read_or_written_never_raises(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where a folder should be")
    states = SidecarStates(blocker / "memory.db")  # every path below it raises NotADirectoryError
    assert states.get("a") is None and states.agents() == {}
    assert "does not exist" in (states.problem() or "")
    saved = states.modify("a", lambda _: entry(10))
    assert saved.persisted is False and "cannot write" in (saved.problem or "")
    assert states.get("a") == entry(10) and states.agents() == {"a": entry(10)}
    assert "cannot write" in (states.problem() or "")

    corrupt = tmp_path / "ok" / "memory.db"
    corrupt.parent.mkdir()
    sidecar_path(corrupt).write_text("{not json")
    readable = SidecarStates(corrupt)
    assert readable.get("a") is None and "cannot read" in (readable.problem() or "")
    assert readable.modify("a", lambda _: entry(1)).persisted  # the next write replaces it
    assert readable.problem() is None and SidecarStates(corrupt).get("a") == entry(1)


def test_postgresql_keeps_the_state_in_the_database_shared_by_every_server(pg_cluster: PgCluster) -> None:
    url = pg_cluster.create()
    first, second = open_store(url), open_store(url)
    try:
        a, b = first.calibration_states(), second.calibration_states()
        assert a.get("x") is None and a.agents() == {}
        assert a.modify("x", lambda _: entry(10)).persisted
        assert b.modify("y", lambda _: entry(20)).persisted
        assert set(b.agents()) == {"x", "y"} and b.get("x") == entry(10)
        b.modify("x", lambda e: {**(e or {}), "rows": 11})
        time.sleep(2.1)  # another server's write is seen once the short read cache expires
        assert a.get("x") == {**entry(10), "rows": 11}
        with a.exclusive("x") as held:
            assert held
            with b.exclusive("x", wait=0.2) as other:
                assert other is False  # the same agent is never calibrated by two servers at once
            with b.exclusive("y") as another_agent:
                assert another_agent  # other agents may be calibrated meanwhile
        with b.exclusive("x") as free:
            assert free
        assert a.modify("x", lambda _: None).persisted and b.agents().keys() == {"y"}
        assert "calibration_state" in a.location and a.problem() is None
    finally:
        first.close()
        second.close()


def test_postgresql_state_that_cannot_be_saved_stays_in_this_process(pg_cluster: PgCluster) -> None:
    url = pg_cluster.create()
    open_store(url).close()  # migrated
    store = open_store(url, read_only=True)  # default_transaction_read_only: every write is refused
    try:
        states = store.calibration_states()
        saved = states.modify("x", lambda _: entry(5))
        assert saved.persisted is False and "cannot write calibration_state" in (saved.problem or "")
        assert states.get("x") == entry(5) and states.agents() == {"x": entry(5)}
        assert states.problem() == saved.problem
    finally:
        store.close()


@pytest.mark.parametrize("engine", ["sqlite", "postgres"], indirect=True)
def test_agent_counts_and_has_rows(engine: str, db_url: str | None, tmp_path: Path) -> None:
    from cpersona.storage.values import MEMORIES, NewMemory

    store = open_store(db_url or tmp_path / "memory.db")
    blob = (b"\x00\x00\x80\x3f") + b"\x00" * 8  # [1, 0, 0] as float32
    try:
        with store.write() as s:
            for i, agent in enumerate(["a", "a", "b"]):
                s.memories.insert(
                    NewMemory(
                        agent,
                        "",
                        "",
                        "",
                        f"row {i}",
                        None,
                        None,
                        "2024-01-01T00:00:00.000000Z",
                        "2024-01-01T00:00:00.000000Z",
                        blob,
                        "m",
                        3,
                    )
                )
            s.memories.insert(
                NewMemory(
                    "c",
                    "",
                    "",
                    "",
                    "no vector",
                    None,
                    None,
                    "2024-01-01T00:00:00.000000Z",
                    "2024-01-01T00:00:00.000000Z",
                    None,
                    None,
                    None,
                )
            )
            s.profiles.upsert(NewProfile("p", "", "", "profile only", "2024-01-01T00:00:00.000000Z"))
        with store.read() as s:
            assert s.vector_search.agent_counts(MEMORIES, "m", 3) == {"a": 2, "b": 1}
            assert s.vector_search.agent_counts(MEMORIES, "other", 3) == {}
            assert s.admin.has_rows("a") and s.admin.has_rows("c") and s.admin.has_rows("p")
            assert not s.admin.has_rows("nobody")
            assert s.admin.known_agent_ids() == ["a", "b", "c", "p"]
    finally:
        store.close()


@pytest.mark.parametrize("engine", ["sqlite", "postgres"], indirect=True)
def test_peek_reads_what_get_copies(engine: str, db_url: str | None, tmp_path: Path) -> None:
    # Recall reads the entry without copying it (peek); get stays a copy a caller may change.
    store = open_store(db_url or tmp_path / "memory.db")
    try:
        states = store.calibration_states()
        assert states.peek("a") is None
        assert states.modify("a", lambda _: entry(10)).persisted
        assert states.peek("a") == states.get("a") == entry(10)
        copy = states.get("a")
        assert copy is not None
        copy["rows"] = 99  # changing a copy changes nothing held
        assert states.peek("a") == entry(10)
    finally:
        store.close()
