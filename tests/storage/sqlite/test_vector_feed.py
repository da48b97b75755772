"""The vector index's per-recall state read: what it reports, and that it reads index edges, not the change log."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np

from cpersona.storage.sqlite.store import SqliteStore
from cpersona.storage.sqlite.vector_feed import SqliteVectorFeed
from cpersona.storage.values import NewMemory
from cpersona.storage.vectors import to_blob

NOW = "2026-01-01T00:00:00.000000Z"


def _fill(store: SqliteStore, count: int) -> list[int]:
    with store.write() as s:
        return [
            s.memories.insert(
                NewMemory(
                    "a",
                    "",
                    "",
                    "",
                    f"row {k}",
                    None,
                    None,
                    NOW,
                    NOW,
                    to_blob(np.array([1.0, float(k)], dtype=np.float32)),
                    "m",
                    2,
                )
            )
            for k in range(count)
        ]


def _separately(conn: sqlite3.Connection, table: str) -> tuple[int, int, int, int]:
    generation = conn.execute("SELECT generation FROM index_state WHERE name = ?", (table,)).fetchone()[0]
    max_id = conn.execute(f"SELECT COALESCE(MAX(id), 0) FROM {table}").fetchone()[0]
    newest = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM vector_changes").fetchone()[0]
    oldest = conn.execute("SELECT COALESCE(MIN(seq), 0) FROM vector_changes").fetchone()[0]
    return int(generation), int(max_id), int(newest), int(oldest)


def test_state_reports_generation_ids_and_the_log_edges(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "m.db")
    conn = store.db.connection()
    feed = SqliteVectorFeed(conn)
    for table in ("memories", "episodes"):
        state = feed.state(table)
        assert (state.generation, state.max_id, state.change_seq, state.oldest_change) == _separately(
            conn, table
        )
        assert state.max_id == 0 and state.change_seq == 0 and state.oldest_change == 0
    ids = _fill(store, 5)
    with store.write() as s:
        for rid in ids[1:4]:  # re-embedded rows: three log entries
            s.memories.set_embedding(rid, to_blob(np.array([0.0, 1.0], dtype=np.float32)), "m", 2)
        s.memories.delete(ids[0])
    state = feed.state("memories")
    assert (state.generation, state.max_id, state.change_seq, state.oldest_change) == _separately(
        conn, "memories"
    )
    assert state.max_id == ids[-1] and state.change_seq - state.oldest_change == 3
    store.close()


def test_state_reads_the_change_log_by_its_key_edges_not_by_a_scan(tmp_path: Path) -> None:
    """Each recall reads this state per table: over a full log (65,536 entries) a scan costs milliseconds."""
    store = SqliteStore(tmp_path / "m.db")
    _fill(store, 3)
    conn = store.db.connection()
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        SqliteVectorFeed(conn).state("memories")
    finally:
        conn.set_trace_callback(None)
    assert seen
    for sql in seen:
        plan = " | ".join(str(r[3]) for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}"))
        assert "SCAN" not in plan.replace("SCAN CONSTANT ROW", ""), plan
    store.close()
