"""Rows by id (recall's hydration): scope is honoured, and the lookup walks the ids, never the agent's rows."""

from __future__ import annotations

from pathlib import Path

from cpersona.storage.scope import Scope
from cpersona.storage.sqlite.store import SqliteStore
from cpersona.storage.values import NewMemory

NOW = "2026-01-01T00:00:00.000000Z"


def _fill(store: SqliteStore, agent: str, count: int, project: str = "") -> list[int]:
    with store.write() as s:
        return [
            s.memories.insert(
                NewMemory(agent, project, "", "", f"{agent} row {k}", None, None, NOW, NOW, None, None, None)
            )
            for k in range(count)
        ]


def test_get_many_returns_rows_in_scope_across_chunks(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "m.db")
    mine = _fill(store, "a", 1200)  # more than one 500-id chunk
    other = _fill(store, "b", 5)
    in_project = _fill(store, "a", 3, project="p")
    with store.read() as s:
        got = s.memories.get_many(mine + other, Scope("a"))
        assert sorted(got) == mine
        assert got[mine[7]]["content"] == "a row 7" and got[mine[7]]["embedded"] is False
        assert s.memories.get_many(mine[:3] + in_project, Scope("a", "")) == {
            i: s.memories.get(i) for i in mine[:3]
        }
        assert sorted(s.memories.get_many(other, None)) == other
        assert s.memories.get_many(other, Scope(None, agents=frozenset({"a"}))) == {}
        assert s.memories.get_many([], Scope("a")) == {}
    store.close()


def test_get_many_looks_rows_up_by_rowid_not_by_the_scope_index(tmp_path: Path) -> None:
    """Left to itself SQLite serves ``id IN (…) AND agent_id = ?`` from the scope index, reading every
    row of the agent: hydration then grows with the corpus. The plan must be a rowid search."""
    store = SqliteStore(tmp_path / "m.db")
    ids = _fill(store, "a", 50)
    conn = store.db.connection()
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        with store.read() as s:
            s.memories.get_many(ids[:5], Scope("a", "p", "c"))
            s.episodes.get_many([1, 2], Scope("a"))
    finally:
        conn.set_trace_callback(None)
    selects = [sql for sql in seen if sql.lstrip().upper().startswith("SELECT")]
    assert len(selects) == 2
    for sql in selects:
        plan = " ".join(str(r[3]) for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}"))
        assert "INTEGER PRIMARY KEY" in plan and "INDEX" not in plan.replace("INTEGER PRIMARY KEY", ""), plan
    store.close()
