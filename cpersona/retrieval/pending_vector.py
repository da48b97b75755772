"""A recall's query vector still being computed while the pipeline runs its keyword channels.

The query embedding (ONNX Runtime, which releases the GIL) and the keyword channels (SQLite, which
releases it while a statement steps; PostgreSQL, a socket wait) do not depend on each other. With
``CPERSONA_EMBED_QUERY_OVERLAP`` ``Recaller.recall`` starts the embedding on a thread of
``QueryVectorThreads`` and hands the pipeline a ``PendingQueryVector``: the pipeline runs the keyword
channels meanwhile and waits for the vector where its searches need it (``nearest_when_ready``). The
answer is the one the vector given at once would get.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from cpersona.storage.deferred_vectors import nearest_soon
from cpersona.storage.interface import VectorQuery, VectorSearch
from cpersona.storage.scope import Scope

#: Embeddings computed at once: one per recall in flight (a streamable-HTTP server recalls
#: concurrently); threads are started on demand and idle ones reused.
QUERY_VECTOR_THREADS = 4


class PendingQueryVector:
    """One recall's query vector, perhaps still being computed; ``resolve`` waits for it."""

    def __init__(self, future: Future[VectorQuery | None]) -> None:
        self._future = future

    def resolve(self) -> VectorQuery | None:
        """The vector (None: the embedding was not available, so keyword-only); waits while it is being
        computed. An exception of the computation is raised here, every time."""
        return self._future.result()


class QueryVectorThreads:
    """The threads that compute query vectors for one ``Recaller``; ``close`` joins them.

    After ``close`` (and in a forked child before its first use, as the parent's threads are not
    there) a vector is computed at once on the caller's thread: ``start`` then returns it resolved.
    """

    def __init__(self, threads: int = QUERY_VECTOR_THREADS) -> None:
        self._threads = threads
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._pid = os.getpid()
        self._closed = False

    def start(self, compute: Callable[[], VectorQuery | None]) -> PendingQueryVector:
        """Run ``compute`` on one of the threads (at once, here, when closed)."""
        with self._lock:
            if not self._closed:
                if self._executor is None or self._pid != os.getpid():
                    self._executor = ThreadPoolExecutor(
                        self._threads, thread_name_prefix="cpersona-query-vector"
                    )
                    self._pid = os.getpid()
                return PendingQueryVector(self._executor.submit(compute))
        done: Future[VectorQuery | None] = Future()
        try:
            done.set_result(compute())
        except Exception as exc:
            done.set_exception(exc)
        return PendingQueryVector(done)

    def close(self) -> None:
        """Wait for the vectors in flight and end the threads (``Memory.close``)."""
        with self._lock:
            self._closed = True
            executor, self._executor = self._executor, None
        if executor is not None and self._pid == os.getpid():
            executor.shutdown(wait=True)


def nearest_when_ready(
    search: VectorSearch,
    table: str,
    query: VectorQuery | PendingQueryVector,
    scope: Scope,
    limit: int,
    *,
    window: int | None,
    allowed_ids: Sequence[int] | None = None,
) -> Callable[[], list[tuple[int, float]]]:
    """``nearest_soon`` for a vector given; for a pending one, a function that waits for the vector
    and then searches on the calling thread (the session's thread: its connection and snapshot).

    The pipeline calls the function after its keyword channels, so the embedding runs beside them.
    A pending vector that resolves to None finds nothing here; the pipeline then drops the vector
    channel altogether, as if no vector had been coming.
    """
    if isinstance(query, VectorQuery):
        return nearest_soon(search, table, query, scope, limit, window=window, allowed_ids=allowed_ids)

    def later() -> list[tuple[int, float]]:
        vector = query.resolve()
        if vector is None:
            return []
        return search.nearest(table, vector, scope, limit, window=window, allowed_ids=allowed_ids)

    return later
