"""Recall's query vector computed on its own thread while the pipeline runs the keyword channels.

The query embedding (~4 ms at MiniLM int8) and the keyword channels (~5 ms at 10k) do not depend on
each other: ``Recaller.recall`` starts the embedding here and hands the pipeline a
``PendingQueryVector``, which the pipeline resolves where it first needs the vector (after the
keyword channels). ONNX Runtime releases the GIL while it runs, so the two proceed side by side.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from cpersona.storage.interface import VectorQuery

#: Threads computing query vectors: one per recall in flight (an HTTP server recalls concurrently,
#: and each recall embedded on its own thread before), created on demand, idle ones reused.
QUERY_VECTOR_THREADS = 4


class PendingQueryVector:
    """One recall's query vector, possibly still being computed; ``resolve`` waits for it."""

    def __init__(self, future: Future[VectorQuery | None]) -> None:
        self._future = future

    def done(self) -> bool:
        """True when ``resolve`` answers without waiting."""
        return self._future.done()

    def resolve(self) -> VectorQuery | None:
        """The vector (None: keyword-only recall). An exception of the embedding is raised here, as is.

        No timeout of its own: the backend bounds its call (``CPERSONA_EMBEDDING_TIMEOUT``) as it did
        when recall embedded on its own thread."""
        return self._future.result()


class QueryVectorThreads:
    """Owns the threads that compute query vectors; ``close`` joins them (``Memory.close``).

    ``threads=0`` computes each vector inline when it is started (the sequential order, which
    benchmarks/recall_path.py measures against), as does a closed instance.
    """

    def __init__(self, threads: int = QUERY_VECTOR_THREADS) -> None:
        self._threads = threads
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._closed = False

    def start(self, compute: Callable[[], VectorQuery | None]) -> PendingQueryVector:
        """Start ``compute`` on a thread of this pool (inline when inline or closed)."""
        with self._lock:
            if self._threads > 0 and not self._closed:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(
                        self._threads, thread_name_prefix="cpersona-query-vector"
                    )
                return PendingQueryVector(self._executor.submit(compute))
        future: Future[VectorQuery | None] = Future()
        future.set_result(compute())  # an exception leaves here, before any read, as it always did
        return PendingQueryVector(future)

    def close(self) -> None:
        """Wait for vectors in flight and end the threads; later vectors are computed inline."""
        with self._lock:
            self._closed = True
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)
