"""The SQLite vector scan run on the worker thread beside the keyword queries (``nearest_soon``).

Its answer must be ``nearest``'s bit for bit (same rows, same float32 cosines, same order), for an
index large enough to be handed to the worker and for a small one scanned at once, with the float32
rows in memory or read from the file (on the caller's thread: the connection stays on its thread).
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from cpersona.storage.deferred_vectors import DeferredVectorSearch, nearest_soon
from cpersona.storage.scope import Scope
from cpersona.storage.sqlite import vector_worker
from cpersona.storage.sqlite.store import SqliteStore
from cpersona.storage.sqlite.vector_index import OFFLOAD_FROM
from cpersona.storage.values import VectorQuery

MODEL = "m"
DIM = 16
AGENTS = ("a", "b", "c")


def _store(path: Path, n: int, keep_vectors: bool) -> tuple[SqliteStore, np.ndarray]:
    rng = np.random.default_rng(n)
    vectors = rng.normal(size=(n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store = SqliteStore(path, keep_vectors=keep_vectors)
    with store.write() as s:
        s.conn.executemany(
            "INSERT INTO memories(agent_id, content, timestamp, created_at, embedding, embedding_model, "
            "embedding_dim) VALUES (?, ?, 't', 't', ?, ?, ?)",
            [(AGENTS[k % 3], f"r{k}", vectors[k].astype("<f4").tobytes(), MODEL, DIM) for k in range(n)],
        )
    return store, vectors


@pytest.mark.parametrize("keep_vectors", [True, False], ids=["float32-in-memory", "float32-from-file"])
@pytest.mark.parametrize("rows", [OFFLOAD_FROM + 2000, 300], ids=["offloaded", "inline"])
def test_the_deferred_scan_answers_what_nearest_answers(
    tmp_path: Path, keep_vectors: bool, rows: int
) -> None:
    store, vectors = _store(tmp_path / "v.db", rows, keep_vectors)
    threads: set[str] = set()
    original = vector_worker.submit

    def watched(work):  # noqa: ANN001, ANN202 - records which thread ran the scan
        def run():  # noqa: ANN202
            threads.add(threading.current_thread().name)
            return work()

        return original(run)

    vector_worker.submit = watched  # type: ignore[assignment]
    try:
        with store.read() as s:
            assert isinstance(s.vector_search, DeferredVectorSearch)
            for probe in range(8):
                query = VectorQuery(vectors[probe * 37], MODEL, DIM)
                for scope, window, allowed in (
                    (Scope("b"), None, None),
                    (Scope("a"), 500, None),
                    (Scope("c"), None, list(range(1, rows, 5))),
                ):
                    want = s.vector_search.nearest(
                        "memories", query, scope, 20, window=window, allowed_ids=allowed
                    )
                    got = nearest_soon(
                        s.vector_search, "memories", query, scope, 20, window=window, allowed_ids=allowed
                    )()
                    assert got == want and len(got) == 20
    finally:
        vector_worker.submit = original  # type: ignore[assignment]
        store.close()
    if rows >= OFFLOAD_FROM:
        assert threads and all(name.startswith("cpersona-vector") for name in threads)
    else:
        assert not threads  # a small index is scanned at once, on the caller's thread


def test_an_engine_without_a_deferred_search_is_asked_at_once() -> None:
    calls: list[str] = []

    class Plain:
        def nearest(self, table, query, scope, limit, *, window, allowed_ids=None):  # noqa: ANN001, ANN201
            calls.append(table)
            return [(1, 0.5)]

    answer = nearest_soon(Plain(), "memories", VectorQuery(np.ones(2), MODEL, 2), Scope("a"), 3, window=None)  # type: ignore[arg-type]
    assert calls == ["memories"]  # ran before the answer was asked for
    assert answer() == [(1, 0.5)]


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="fork is POSIX-only")
def test_a_forked_child_scans_on_its_own_worker(tmp_path: Path) -> None:
    import os
    import signal

    store, vectors = _store(tmp_path / "v.db", OFFLOAD_FROM + 100, True)
    query = VectorQuery(vectors[3], MODEL, DIM)
    with store.read() as s:
        want = nearest_soon(s.vector_search, "memories", query, Scope("a"), 5, window=None)()
    store.close()
    pid = os.fork()
    if pid == 0:  # the child: a fresh store, a scan handed to the (new) worker; exit code says if it matched
        code = 1
        signal.alarm(20)  # a scan queued on the parent's dead workers would wait forever: fail instead
        try:
            child = SqliteStore(tmp_path / "v.db")
            with child.read() as s:
                got = nearest_soon(s.vector_search, "memories", query, Scope("a"), 5, window=None)()
            code = 0 if got == want else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_scan_that_fails_on_the_worker_fails_the_caller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, vectors = _store(tmp_path / "v.db", OFFLOAD_FROM + 100, True)
    index = store.indexes.get("memories", MODEL, DIM)

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("scan failed")

    monkeypatch.setattr(index, "candidates", broken)
    try:
        with store.read() as s:
            answer = nearest_soon(
                s.vector_search, "memories", VectorQuery(vectors[0], MODEL, DIM), Scope("a"), 5, window=None
            )
            with pytest.raises(RuntimeError, match="scan failed"):
                answer()
    finally:
        store.close()
