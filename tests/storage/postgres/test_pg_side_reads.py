"""The vector search beside the keyword statements (``nearest_soon`` on a side connection, side_reads.py).

It must answer what ``nearest`` answers on the recall's own connection: in the recall's snapshot
(a row committed meanwhile is not seen), on a connection of its own, at once outside a read
snapshot or on a table below the size threshold, and on the recall's connection again when the side
connection is lost.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import psycopg
import pytest
from pg_cluster import PgCluster

from cpersona.storage.postgres import side_reads
from cpersona.storage.postgres.store import PgStore
from cpersona.storage.scope import Scope
from cpersona.storage.values import VectorQuery

pytestmark = pytest.mark.slow

DIM, ROWS, MODEL = 24, 400, "m"


def _units(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _insert(conn: psycopg.Connection[tuple[object, ...]], vectors: np.ndarray, first: int = 0) -> None:
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO memories (agent_id, content, timestamp, created_at, embedding, embedding_model, embedding_dim) "
            "VALUES ('a', %s, '2024-01-01T00:00:00Z', '2024-01-01T00:00:00Z', %s::vector, %s, %s)",
            [
                (f"row {first + i}", "[" + ",".join(map(str, v.tolist())) + "]", MODEL, DIM)
                for i, v in enumerate(vectors)
            ],
        )


@pytest.fixture
def store(pg_cluster: PgCluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[PgStore]:
    url = pg_cluster.create()
    with psycopg.connect(url, autocommit=True) as conn:
        _insert(conn, _units(np.random.default_rng(3), ROWS))
        conn.execute("ANALYZE memories")  # the row estimate the side read threshold reads
    monkeypatch.setattr(side_reads, "SIDE_FROM_ROWS", ROWS // 2)  # this small table counts as large
    pg = PgStore(url)
    yield pg
    pg.close()
    pg_cluster.drop(url)


def _side_pids(store: PgStore) -> set[int]:
    return {c.info.backend_pid for c in store._side._opened if not c.closed}


def test_the_side_search_answers_in_the_recalls_snapshot_on_another_connection(store: PgStore) -> None:
    query = _units(np.random.default_rng(11), 1)[0]
    vq = VectorQuery(query, MODEL, DIM)
    with store.read() as s:
        before = s.vector_search.nearest("memories", vq, Scope("a"), 10, window=None)
        with psycopg.connect(
            store.url, autocommit=True
        ) as other:  # the best match of all, committed meanwhile
            _insert(other, query[None, :], first=ROWS)
        soon = s.vector_search.nearest_soon("memories", vq, Scope("a"), 10, window=None)
        assert soon() == before  # the snapshot's rows only, scores bit for bit
        assert s.ex.conn is not None and s.ex.conn.info.backend_pid not in _side_pids(store)
        assert len(_side_pids(store)) == 1
    with store.read() as s:
        after = s.vector_search.nearest_soon("memories", vq, Scope("a"), 10, window=None)()
        assert after[0][1] == pytest.approx(1.0, abs=1e-5) and after[1:] == before[:9]


def test_outside_a_read_snapshot_the_search_runs_at_once_and_a_lost_side_connection_is_survived(
    store: PgStore,
) -> None:
    vq = VectorQuery(_units(np.random.default_rng(12), 1)[0], MODEL, DIM)
    with store.read() as s:
        want = s.vector_search.nearest("memories", vq, Scope("a"), 10, window=None)
    with store.write() as w:  # the write transaction's own rows: no other connection could see them
        assert w.vector_search.nearest_soon("memories", vq, Scope("a"), 10, window=None)() == want
    assert store.session().vector_search.nearest_soon("memories", vq, Scope("a"), 10, window=None)() == want
    assert _side_pids(store) == set()
    with store.read() as s:
        assert s.vector_search.nearest_soon("memories", vq, Scope("a"), 10, window=None)() == want
    (pid,) = _side_pids(store)
    with psycopg.connect(store.url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    with store.read() as s:  # the side read fails on the dead connection: the recall's connection answers
        assert s.vector_search.nearest_soon("memories", vq, Scope("a"), 10, window=None)() == want
    with store.read() as s:  # and the next side read opens a new connection
        assert s.vector_search.nearest_soon("memories", vq, Scope("a"), 10, window=None)() == want
    assert len(_side_pids(store)) == 1 and pid not in _side_pids(store)


def test_a_table_below_the_threshold_is_searched_at_once(
    store: PgStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(side_reads, "SIDE_FROM_ROWS", ROWS * 2)
    vq = VectorQuery(_units(np.random.default_rng(13), 1)[0], MODEL, DIM)
    with store.read() as s:
        want = s.vector_search.nearest("memories", vq, Scope("a"), 10, window=None)
        assert s.vector_search.nearest_soon("memories", vq, Scope("a"), 10, window=None)() == want
    assert _side_pids(store) == set()
