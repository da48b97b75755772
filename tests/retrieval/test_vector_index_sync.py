"""The incremental vector index equals a fresh load, whatever writes interleave, from any process.

Writes go through the storage layer (SqliteStore sessions) on two separate
connections — two writers as far as SQLite is concerned — and, in one test, a
real second process. After every sync the index must hold exactly what a fresh
index loads, and its top-10 must equal a brute-force float32 scan of the file.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cpersona.storage.scope import Scope
from cpersona.storage.sqlite.store import SqliteStore
from cpersona.storage.sqlite.vector_feed import SqliteVectorFeed
from cpersona.storage.sqlite.vector_index import VectorIndex
from cpersona.storage.values import NewMemory
from cpersona.storage.vectors import to_blob

DIM = 8
MODEL = "m"
AGENTS = ("a", "b", "c")
PROJECTS = ("", "x")
CHANNELS = ("", "slack")


def _unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def _store(
    store: SqliteStore, n: int, agent: str, project: str, channel: str, embedded: bool, model: str
) -> int:
    with store.write() as s:
        return s.memories.insert(
            NewMemory(
                agent,
                project,
                channel,
                "",
                f"row {n} {agent}",
                None,
                None,
                "t",
                "t",
                to_blob(_unit(n)) if embedded else None,
                model if embedded else None,
                DIM if embedded else None,
            )
        )


def _live_ids(store: SqliteStore, unembedded: bool = False) -> list[int]:
    where = " WHERE embedding IS NULL" if unembedded else ""
    with store.read() as s:
        return [int(r[0]) for r in s.conn.execute(f"SELECT id FROM memories{where} ORDER BY id")]


def _reference(store: SqliteStore) -> dict[int, tuple[bytes, str, str, str]]:
    with store.read() as s:
        rows = s.vectors.rows_after("memories", 0, MODEL, DIM)
    return {r[0]: (r[4], r[1], r[2], r[3]) for r in rows}


def _brute_top(store: SqliteStore, q: np.ndarray, scope: Scope, k: int) -> list[int]:
    ref = _reference(store)
    scored = []
    for row_id, (blob, agent, project, channel) in ref.items():
        if scope.agent_id is not None and agent != scope.agent_id:
            continue
        if scope.project_id is not None and project not in (scope.project_id, ""):
            continue
        if scope.channel and channel not in (scope.channel, ""):
            continue
        scored.append((-float(np.frombuffer(blob, dtype="<f4") @ q), -row_id))
    return [-neg_id for _, neg_id in sorted(scored)[:k]]


def _assert_equal_to_fresh(index: VectorIndex, store: SqliteStore) -> None:
    with store.read() as s:
        index.sync(s.vectors)
        fresh = VectorIndex("memories", MODEL, DIM)
        fresh.sync(s.vectors)
    assert len(index) == len(fresh) == len(_reference(store))
    scopes = [Scope(None)] + [
        Scope(a, p, c) for a in AGENTS for p in (None, *PROJECTS) for c in (None, *CHANNELS, "discord")
    ]
    for seed in range(2):
        q = _unit(1000 + seed)
        for scope in scopes:
            got = index.search(q, scope, 1000)  # every row in scope, with its score
            want = fresh.search(q, scope, 1000)
            assert [i for i, _ in got] == [i for i, _ in want]
            assert np.allclose([s for _, s in got], [s for _, s in want], atol=1e-6)
            assert [i for i, _ in got[:10]] == _brute_top(store, q, scope, 10)
        newest = [i for i, _ in index.search(q, Scope("a"), 3, window=4)]
        assert newest == [i for i, _ in fresh.search(q, Scope("a"), 3, window=4)]


_op = st.one_of(
    st.tuples(
        st.just("store"),
        st.sampled_from(AGENTS),
        st.sampled_from(PROJECTS),
        st.sampled_from(CHANNELS),
        st.booleans(),
        st.sampled_from((MODEL, MODEL, "other")),
    ),
    st.tuples(st.just("reembed"), st.integers(0, 10**6)),
    st.tuples(st.just("backfill"), st.integers(0, 10**6)),
    st.tuples(st.just("clear"), st.integers(0, 10**6)),
    st.tuples(st.just("edit"), st.integers(0, 10**6)),
    st.tuples(st.just("move"), st.integers(0, 10**6), st.sampled_from(AGENTS), st.sampled_from(CHANNELS)),
    st.tuples(st.just("delete"), st.integers(0, 10**6)),
    st.tuples(st.just("delete_agent"), st.sampled_from(AGENTS)),
    st.tuples(st.just("sync")),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(st.tuples(st.booleans(), _op), min_size=1, max_size=40))
def test_index_equals_fresh_load_after_any_interleaving(ops: list[tuple[bool, tuple]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "v.db"
        mine, other = SqliteStore(path), SqliteStore(path)  # two writers on one file
        index = VectorIndex("memories", MODEL, DIM)
        try:
            for n, (by_other, op) in enumerate(ops):
                store = other if by_other else mine
                kind = op[0]
                ids = _live_ids(store, unembedded=kind == "backfill")
                pick = ids[op[1] % len(ids)] if ids and len(op) > 1 and isinstance(op[1], int) else None
                if kind == "store":
                    _store(store, 10_000 + n, op[1], op[2], op[3], op[4], op[5])
                elif kind == "sync":
                    with mine.read() as s:
                        index.sync(s.vectors)
                elif kind == "delete_agent":
                    with store.write() as s:
                        s.admin.delete_agent(op[1])
                elif pick is None:
                    continue
                elif kind in ("reembed", "backfill"):
                    with store.write() as s:
                        s.memories.set_embedding(pick, to_blob(_unit(20_000 + n)), MODEL, DIM)
                elif kind == "clear":
                    with store.write() as s:
                        s.memories.set_embedding(pick, None, None, None)
                elif kind == "edit":
                    with store.write() as s:
                        s.memories.update_content(pick, f"edited {n}")
                elif kind == "move":
                    with store.write() as s:  # a channel-axis migration or an agent rename moves rows
                        s.conn.execute(
                            "UPDATE memories SET agent_id = ?, channel = ? WHERE id = ?", (op[2], op[3], pick)
                        )
                elif kind == "delete":
                    with store.write() as s:
                        s.memories.delete(pick)
            _assert_equal_to_fresh(index, mine)
            assert index.reloads == 1  # every change after the first load was patched in

        finally:
            mine.close()
            other.close()


_EACH_CHANGE = {
    "reembed": lambda s, i: s.memories.set_embedding(i, to_blob(_unit(77)), MODEL, DIM),
    "backfill": lambda s, i: s.memories.set_embedding(i + 1, to_blob(_unit(78)), MODEL, DIM),
    "clear": lambda s, i: s.memories.set_embedding(i, None, None, None),
    "other model": lambda s, i: s.memories.set_embedding(i, to_blob(_unit(79)), "other", DIM),
    "move agent": lambda s, i: s.conn.execute("UPDATE memories SET agent_id = 'b' WHERE id = ?", (i,)),
    "move channel": lambda s, i: s.conn.execute("UPDATE memories SET channel = 'slack' WHERE id = ?", (i,)),
    "move project": lambda s, i: s.conn.execute("UPDATE memories SET project_id = 'x' WHERE id = ?", (i,)),
    "delete": lambda s, i: s.memories.delete(i),
    "delete agent": lambda s, i: s.admin.delete_agent("a"),
}


@pytest.mark.parametrize("change", sorted(_EACH_CHANGE))
def test_each_kind_of_change_is_patched_in(tmp_path: Path, change: str) -> None:
    store = SqliteStore(tmp_path / "v.db")
    first = _store(store, 1, "a", "", "", True, MODEL)
    _store(store, 2, "a", "", "", False, MODEL)  # no vector yet: back-fill target
    _store(store, 3, "b", "x", "", True, MODEL)
    index = VectorIndex("memories", MODEL, DIM)
    with store.read() as s:
        index.sync(s.vectors)
    with store.write() as s:
        _EACH_CHANGE[change](s, first)
    _assert_equal_to_fresh(index, store)
    assert (index.reloads, index.patched) == (1, 1 if change != "delete agent" else 2)
    store.close()


def test_one_changed_row_is_patched_not_reloaded(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "v.db")
    ids = [_store(store, n, "a", "", "", True, MODEL) for n in range(300)]
    index = VectorIndex("memories", MODEL, DIM)
    with store.read() as s:
        index.sync(s.vectors)
    with store.write() as s:
        s.memories.set_embedding(ids[5], to_blob(_unit(99_999)), MODEL, DIM)
        s.memories.delete(ids[7])
    with store.read() as s:
        index.sync(s.vectors)
    assert (index.reloads, index.patched) == (1, 2)
    assert index.search(_unit(99_999), Scope("a"), 1)[0][0] == ids[5]
    _assert_equal_to_fresh(index, store)
    store.close()


def test_a_pruned_change_log_forces_a_full_reload(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "v.db")
    ids = [_store(store, n, "a", "", "", True, MODEL) for n in range(20)]
    index = VectorIndex("memories", MODEL, DIM)
    with store.read() as s:
        index.sync(s.vectors)
    with store.write() as s:
        s.memories.delete(ids[0])
        # Another long-lived writer churned the log past what this index saw.
        s.conn.executemany(
            "INSERT INTO vector_changes(tbl, row_id) VALUES ('episodes', ?)", [(i,) for i in range(70_000)]
        )
        oldest = s.conn.execute("SELECT MIN(seq) FROM vector_changes").fetchone()[0]
    assert oldest > 2  # the trigger pruned it
    with store.read() as s:
        index.sync(s.vectors)
    assert index.reloads == 2
    _assert_equal_to_fresh(index, store)
    store.close()


_WRITER = """
import sys
import numpy as np
import pytest
from cpersona.storage.values import NewMemory
from cpersona.storage.sqlite.store import SqliteStore
from cpersona.storage.vectors import to_blob
store = SqliteStore(sys.argv[1])
rng = np.random.default_rng(7)
def unit():
    v = rng.normal(size=8).astype(np.float32)
    return to_blob(v / np.linalg.norm(v))
for n in range(200):
    with store.write() as s:
        i = s.memories.insert(NewMemory("a", "", "", "", f"child {n}", None, None, "t", "t", None, None, None))
        if n % 3:
            s.memories.set_embedding(i, unit(), "m", 8)
        if n % 7 == 0 and n:
            s.memories.delete(i - 1)
        if n % 11 == 0:
            s.memories.set_embedding(i, None, None, None)
store.close()
"""


def test_a_second_process_writing_meanwhile(tmp_path: Path) -> None:
    path = tmp_path / "v.db"
    store = SqliteStore(path)
    for n in range(50):
        _store(store, n, "a", "", "", True, MODEL)
    index = VectorIndex("memories", MODEL, DIM)
    child = subprocess.Popen([sys.executable, "-c", _WRITER, str(path)])
    try:
        while child.poll() is None:  # sync while the other process writes
            with store.read() as s:
                index.sync(s.vectors)
            index.search(_unit(1), Scope("a"), 10)
    finally:
        child.wait(timeout=60)
    assert child.returncode == 0
    _assert_equal_to_fresh(index, store)
    store.close()


def test_top10_equals_brute_force_float32_at_scale(tmp_path: Path) -> None:
    """A larger corpus with many near-ties: exact top-10 and order, scope by scope."""
    store = SqliteStore(tmp_path / "v.db")
    rng = np.random.default_rng(3)
    with store.write() as s:
        for n in range(3000):
            v = rng.normal(size=DIM).astype(np.float32)
            v /= np.linalg.norm(v)
            if n % 50 == 0:  # exact duplicates: ties must break on the newer id
                v = _unit(1)
            s.memories.insert(
                NewMemory(
                    AGENTS[n % 3],
                    PROJECTS[n % 2],
                    CHANNELS[n % 5 == 0],
                    "",
                    f"r{n}",
                    None,
                    None,
                    "t",
                    "t",
                    to_blob(v),
                    MODEL,
                    DIM,
                )
            )
    index = VectorIndex("memories", MODEL, DIM)
    with store.read() as s:
        index.sync(SqliteVectorFeed(s.conn))
    for seed in range(20):
        q = _unit(seed)
        for scope in (Scope(None), Scope("a"), Scope("b", "x"), Scope("c", None, "slack")):
            assert [i for i, _ in index.search(q, scope, 10)] == _brute_top(store, q, scope, 10)
    store.close()
