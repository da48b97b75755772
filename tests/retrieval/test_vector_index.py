"""The in-memory vector index follows the file: appends, reloads, other connections, scope, window."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from cpersona.storage.scope import Scope
from cpersona.storage.sqlite.db import Database
from cpersona.storage.sqlite.migrations import migrate
from cpersona.storage.sqlite.vector_feed import SqliteVectorFeed
from cpersona.storage.sqlite.vector_index import VectorIndex
from cpersona.storage.vectors import to_blob


def _unit(seed: int, dim: int = 8) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=dim).astype(np.float32)
    return v / np.linalg.norm(v)


def _insert(
    db: Database, agent: str, seed: int, model: str = "m", project: str = "", channel: str = ""
) -> int:
    with db.write() as conn:
        cur = conn.execute(
            "INSERT INTO memories(agent_id, project_id, channel, content, timestamp, created_at, embedding, "
            "embedding_model, embedding_dim) VALUES (?, ?, ?, ?, 't', 't', ?, ?, 8)",
            (agent, project, channel, f"row {seed} {agent} {project} {channel}", to_blob(_unit(seed)), model),
        )
        return int(cur.lastrowid)


def test_appends_then_patches_on_change_from_another_connection(tmp_path: Path) -> None:
    db = Database(tmp_path / "v.db")
    migrate(db)
    other = Database(tmp_path / "v.db")  # a second process, as far as SQLite is concerned
    index = VectorIndex("memories", "m", 8)
    first = _insert(db, "a", 1)
    index.sync(SqliteVectorFeed(db.connection()))
    assert len(index) == 1 and index.reloads == 1
    second = _insert(other, "a", 2)
    _insert(other, "a", 3, model="another-model")  # never mixed in
    index.sync(SqliteVectorFeed(db.connection()))
    assert len(index) == 2 and index.reloads == 1  # appended, not reloaded
    hits = index.search(_unit(2), Scope("a"), 5, window=100)
    assert hits[0][0] == second and abs(hits[0][1] - 1.0) < 1e-5
    with other.write() as conn:
        conn.execute("DELETE FROM memories WHERE id = ?", (second,))
    index.sync(SqliteVectorFeed(db.connection()))
    # The delete is applied from the change log: one row, no reload.
    assert index.reloads == 1 and index.patched == 1
    assert [h[0] for h in index.search(_unit(2), Scope("a"), 5, window=100)] == [first]
    db.close()
    other.close()


def test_scope_and_window(tmp_path: Path) -> None:
    db = Database(tmp_path / "v.db")
    migrate(db)
    ids = {
        "a-global": _insert(db, "a", 1),
        "a-x": _insert(db, "a", 2, project="x"),
        "a-y": _insert(db, "a", 3, project="y"),
        "a-slack": _insert(db, "a", 4, channel="slack"),
        "b": _insert(db, "b", 5),
    }
    index = VectorIndex("memories", "m", 8)
    index.sync(SqliteVectorFeed(db.connection()))
    q = _unit(9)

    def found(scope: Scope, window: int = 100) -> set[int]:
        return {i for i, _ in index.search(q, scope, 10, window=window)}

    assert found(Scope("a", "x")) == {ids["a-global"], ids["a-x"], ids["a-slack"]}
    assert found(Scope("a", "")) == {ids["a-global"], ids["a-slack"]}
    assert found(Scope("a", None, "slack")) == {ids["a-global"], ids["a-x"], ids["a-y"], ids["a-slack"]}
    assert found(Scope("a", None, "discord")) == {ids["a-global"], ids["a-x"], ids["a-y"]}
    assert found(Scope("nobody")) == set()
    assert found(Scope("a"), window=2) == {ids["a-y"], ids["a-slack"]}  # the two most recent in scope
    db.close()


def test_dot_is_the_matrix_vector_product_on_one_thread() -> None:
    from cpersona.storage.sqlite.vector_index import dot

    rng = np.random.default_rng(3)
    matrix = rng.normal(size=(2000, 384)).astype(np.float32)
    query = _unit(4, 384)
    scores = dot(matrix, query)
    assert scores.dtype == np.float32 and scores.shape == (2000,)
    np.testing.assert_allclose(
        scores, matrix.astype(np.float64) @ query.astype(np.float64), rtol=1e-5, atol=1e-5
    )
    assert np.array_equal(
        np.argsort(-scores, kind="stable")[:10], np.argsort(-(matrix @ query), kind="stable")[:10]
    )
    assert dot(matrix[:0], query).shape == (0,)


def test_picking_from_the_whole_product_equals_the_product_of_the_gathered_rows() -> None:
    """``search`` scores most of the rows by one product over the whole matrix and picks the scope's
    positions (a gather of 10k rows copies 15 MB a query): the scores must be bit for bit the same."""
    from cpersona.storage.sqlite.vector_index import dot

    rng = np.random.default_rng(5)
    matrix = rng.normal(size=(3001, 384)).astype(np.float32)
    for seed in range(20):
        query = _unit(100 + seed, 384)
        positions = np.flatnonzero(rng.random(3001) < rng.uniform(0.2, 1.0))
        assert np.array_equal(dot(matrix, query)[positions], dot(matrix[positions], query))


def test_search_scores_equal_the_exact_product_of_the_rows_in_scope(tmp_path: Path) -> None:
    db = Database(tmp_path / "v.db")
    migrate(db)
    ids = {seed: _insert(db, "a" if seed % 10 else "b", seed) for seed in range(60)}
    index = VectorIndex("memories", "m", 8)
    index.sync(SqliteVectorFeed(db.connection()))
    query = _unit(1000)
    hits = index.search(query, Scope("a"), 100)
    in_scope = [seed for seed in ids if seed % 10]
    # 54 of 60 rows in scope: scored through the whole-matrix product, not a gather.
    gathered = np.einsum("ij,j->i", np.stack([_unit(s) for s in in_scope]), query)
    assert sorted(i for i, _ in hits) == sorted(ids[s] for s in in_scope)
    by_id = dict(hits)
    assert [by_id[ids[s]] for s in in_scope] == [float(v) for v in gathered]
    db.close()


def test_cosines_find_exactly_the_live_rows_asked_for(tmp_path: Path) -> None:
    """The binary search over ascending ids (and the scan it falls back to) answer every live id asked
    for, never a deleted one, whatever order the ids come in."""
    db = Database(tmp_path / "v.db")
    migrate(db)
    ids = [_insert(db, "a", seed) for seed in range(30)]
    index = VectorIndex("memories", "m", 8)
    index.sync(SqliteVectorFeed(db.connection()))
    with db.write() as conn:
        conn.execute("DELETE FROM memories WHERE id IN (?, ?)", (ids[3], ids[17]))
    index.sync(SqliteVectorFeed(db.connection()))
    query = _unit(500)
    asked = [ids[20], ids[3], ids[0], 10_000, ids[17], ids[29], ids[20]]
    got = index.cosines(query, asked)
    expected = {ids[k]: float(np.einsum("j,j->", _unit(k), query)) for k in (20, 0, 29)}
    assert got.keys() == expected.keys()
    np.testing.assert_allclose([got[i] for i in expected], list(expected.values()), rtol=1e-6)
    # Rows no longer in id order (a back-filled old id after newer ones): the scan answers the same.
    index._append([(ids[3], "a", "", "", to_blob(_unit(3)))])
    assert not index._ordered
    again = index.cosines(query, asked)
    assert again.keys() == {*expected, ids[3]}
    assert all(again[i] == got[i] for i in expected)
    db.close()
