"""The pipeline given a query vector still being computed (``PendingQueryVector``) runs the keyword
channels first and answers exactly what it answers given the vector (rows, scores, gate, trace);
resolved to None it answers what keyword-only recall answers."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cpersona.config import Settings
from cpersona.core.text import utc_now
from cpersona.retrieval.pending_vector import PendingQueryVector, QueryVectorThreads
from cpersona.retrieval.pipeline import RecallPipeline, RecallRequest
from cpersona.storage.interface import Session
from cpersona.storage.scope import Scope
from cpersona.storage.sqlite.store import SqliteStore
from cpersona.storage.sqlite.vector_index import OFFLOAD_FROM
from cpersona.storage.values import VectorQuery

MODEL = "m"
DIM = 16
WORDS = ("cat", "mat", "train", "osaka", "revenue", "noon", "rug", "kitten", "quarter", "growth")
QUERIES = ("cat on a mat", "osaka train at noon", "revenue growth", "kitten rug")
THREAD_PREFIX = "cpersona-query-vector"


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


class _Keywords:
    """The session's real keyword search; sets ``ran`` once the last channel (episodes) has answered."""

    def __init__(self, keyword: Any, ran: threading.Event) -> None:
        self._keyword = keyword
        self._ran = ran

    def episodes(self, *args: Any, **kwargs: Any) -> Any:
        hits = self._keyword.episodes(*args, **kwargs)
        self._ran.set()
        return hits

    def __getattr__(self, name: str) -> Any:
        return getattr(self._keyword, name)


class _Watched:
    """A real session whose keyword channels say when they have run."""

    def __init__(self, session: Session, ran: threading.Event) -> None:
        self._session = session
        self.keyword = _Keywords(session.keyword, ran)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


def _after_keywords(
    threads: QueryVectorThreads, vector: VectorQuery | None, ran: threading.Event, waited: list[bool]
) -> PendingQueryVector:
    """A vector computed only once the keyword channels have run (``waited``: whether they had)."""

    def compute() -> VectorQuery | None:
        waited.append(ran.wait(10))
        return vector

    return threads.start(compute)


@pytest.mark.parametrize("rows", [OFFLOAD_FROM + 500, 200], ids=["vector-scan-offloaded", "inline"])
def test_a_pending_vector_answers_what_the_vector_answers(tmp_path: Path, rows: int) -> None:
    store, vectors = _store(tmp_path / "p.db", rows)
    pipeline = RecallPipeline(Settings(db_path=tmp_path / "p.db"))
    threads = QueryVectorThreads()
    now = utc_now()
    try:
        for k, query in enumerate(QUERIES):
            vector = VectorQuery(vectors[k * 7], MODEL, DIM)
            request = RecallRequest(scope=Scope("a"), query=query, limit=10, trace=True)
            ran, waited = threading.Event(), []
            with store.read() as s:
                given = pipeline.run(s, request, query_vector=vector, now=now)
                pending = _after_keywords(threads, vector, ran, waited)
                late = pipeline.run(
                    _Watched(s, ran),  # type: ignore[arg-type]
                    request,
                    query_vector=pending,
                    now=now,
                )
            assert waited == [True]  # the keyword channels ran while the vector was being computed
            assert given.vector_used and given.rows
            assert late == given  # rows with their match_reason scores, gate, trace, methods
            assert given.trace is not None and late.trace is not None
            assert list(late.trace["channels"]) == list(given.trace["channels"])  # the channels' order too
    finally:
        threads.close()
        store.close()


def test_a_pending_vector_that_resolves_to_none_is_keyword_only(tmp_path: Path) -> None:
    store, _ = _store(tmp_path / "p.db", 300)
    pipeline = RecallPipeline(Settings(db_path=tmp_path / "p.db"))
    threads = QueryVectorThreads()
    request = RecallRequest(scope=Scope("a"), query="cat on a mat", limit=10, trace=True)
    now = utc_now()
    ran, waited = threading.Event(), []
    try:
        with store.read() as s:
            keyword_only = pipeline.run(s, request, query_vector=None, now=now)
            pending = _after_keywords(threads, None, ran, waited)
            late = pipeline.run(_Watched(s, ran), request, query_vector=pending, now=now)  # type: ignore[arg-type]
        assert waited == [True]
        assert not late.vector_used and late.rows
        assert late == keyword_only
        assert late.trace is not None and "vector" not in late.trace["channels"]
    finally:
        threads.close()
        store.close()


def _threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(THREAD_PREFIX)]


def test_the_threads_end_at_close_and_an_exception_reaches_resolve() -> None:
    threads = QueryVectorThreads()
    started = threading.Event()

    def fail() -> VectorQuery | None:
        started.set()
        raise KeyboardInterrupt  # not an Exception: the embedding service would not swallow it

    pending = threads.start(fail)
    assert started.wait(10)
    with pytest.raises(KeyboardInterrupt):
        pending.resolve()
    with pytest.raises(KeyboardInterrupt):
        pending.resolve()  # every time, not once
    assert _threads()
    threads.close()
    assert not _threads()
    # Closed: computed at once on the caller's thread; a BaseException leaves start itself.
    with pytest.raises(KeyboardInterrupt):
        threads.start(fail)
    vector = VectorQuery(np.ones(DIM, np.float32) / 4, MODEL, DIM)
    assert threads.start(lambda: vector).resolve() is vector
    assert not _threads()
