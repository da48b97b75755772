"""The pipeline given a query vector still being computed (``PendingQueryVector``) answers exactly what
it answers given the vector: same rows, scores, gate, trace; and keyword-only when it resolves to None."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from pathlib import Path

import numpy as np
import pytest

from cpersona.config import Settings
from cpersona.retrieval.pending_vector import PendingQueryVector, QueryVectorThreads
from cpersona.retrieval.pipeline import RecallPipeline, RecallRequest
from cpersona.storage.interface import VectorQuery
from cpersona.storage.scope import Scope
from cpersona.storage.sqlite.store import SqliteStore
from cpersona.storage.sqlite.vector_index import OFFLOAD_FROM
from cpersona.text import utc_now

MODEL = "m"
DIM = 16
WORDS = ("cat", "mat", "train", "osaka", "revenue", "noon", "rug", "kitten", "quarter", "growth")


class _Late(PendingQueryVector):
    """Not done when the pipeline first looks; the keyword channels have run when it is resolved."""

    def __init__(self, vector: VectorQuery | None, seen: list[str]) -> None:
        future: Future[VectorQuery | None] = Future()
        future.set_result(vector)
        super().__init__(future)
        self.seen = seen

    def done(self) -> bool:
        return False

    def resolve(self) -> VectorQuery | None:
        self.seen.append("resolved")
        return super().resolve()


def _store(path: Path, n: int) -> tuple[SqliteStore, np.ndarray]:
    rng = np.random.default_rng(n)
    vectors = rng.normal(size=(n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store = SqliteStore(path)
    rows = []
    for k in range(n):
        text = " ".join(WORDS[j] for j in rng.choice(len(WORDS), 3, replace=False))
        rows.append(("a", f"{text} {k}", vectors[k].astype("<f4").tobytes(), MODEL, DIM))
    with store.write() as s:
        s.conn.executemany(
            "INSERT INTO memories(agent_id, content, timestamp, created_at, embedding, embedding_model, "
            "embedding_dim) VALUES (?, ?, '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z', ?, ?, ?)",
            rows,
        )
        s.conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")
    return store, vectors


@pytest.mark.parametrize("rows", [OFFLOAD_FROM + 500, 200], ids=["vector-scan-offloaded", "inline"])
def test_a_pending_vector_answers_what_the_vector_answers(tmp_path: Path, rows: int) -> None:
    store, vectors = _store(tmp_path / "p.db", rows)
    pipeline = RecallPipeline(Settings(db_path=tmp_path / "p.db"))
    now = utc_now()
    try:
        for k, query in enumerate(["cat on a mat", "osaka train at noon", "revenue growth", "kitten rug"]):
            vector = VectorQuery(vectors[k * 7], MODEL, DIM)
            request = RecallRequest(scope=Scope("a"), query=query, limit=10, trace=True)
            seen: list[str] = []
            with store.read() as s:
                given = pipeline.run(s, request, query_vector=vector, now=now)
                late = pipeline.run(s, request, query_vector=_Late(vector, seen), now=now)
                ready = pipeline.run(
                    s, request, query_vector=QueryVectorThreads(0).start(lambda v=vector: v), now=now
                )
            assert seen == ["resolved"]
            assert given.vector_used and given.rows
            assert late == given and ready == given  # rows with match_reason scores, gate, trace, methods
            assert given.trace is not None and late.trace is not None
            assert list(late.trace["channels"]) == list(given.trace["channels"])  # the channels' order too
    finally:
        store.close()


def test_a_pending_vector_that_resolves_to_none_is_keyword_only(tmp_path: Path) -> None:
    store, _ = _store(tmp_path / "p.db", 300)
    pipeline = RecallPipeline(Settings(db_path=tmp_path / "p.db"))
    now = utc_now()
    request = RecallRequest(scope=Scope("a"), query="cat on a mat", limit=10, trace=True)
    try:
        with store.read() as s:
            keyword_only = pipeline.run(s, request, query_vector=None, now=now)
            late = pipeline.run(s, request, query_vector=_Late(None, []), now=now)
        assert not late.vector_used and late.rows
        assert late == keyword_only
        assert late.trace is not None and "vector" not in late.trace["channels"]
    finally:
        store.close()


def test_the_threads_end_at_close_and_an_exception_reaches_resolve() -> None:
    pool = QueryVectorThreads()
    started = threading.Event()

    def fail() -> VectorQuery | None:
        started.set()
        raise KeyboardInterrupt  # not an Exception: the embedding service would not swallow it

    pending = pool.start(fail)
    assert started.wait(10)
    with pytest.raises(KeyboardInterrupt):
        pending.resolve()
    pool.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("cpersona-query-vector")]
    # Closed: computed inline, an exception leaves start itself (before any read, as sequentially).
    with pytest.raises(KeyboardInterrupt):
        pool.start(fail)
    assert not [t for t in threading.enumerate() if t.name.startswith("cpersona-query-vector")]
