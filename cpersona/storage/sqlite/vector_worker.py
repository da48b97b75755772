"""The thread the SQLite engine's vector scans run on while the recall's keyword queries run.

A recall at 100k rows spends about as long in the int8 scan of the vector index (numpy and
simsimd, which release the GIL: memory bandwidth, not Python) as in its keyword channels'
FTS5 queries (SQLite, which releases the GIL in ``sqlite3_step``). The two are independent
until fusion, so on a machine with a second core the scan runs beside the queries instead
of before them (``SqliteVectorSearch.nearest_soon``). The pool is small and shared by every
store in the process: one scan per recall, at most two recalls scanning at once, and a
worker that sits idle costs nothing (no spinning, unlike BLAS threads: see ``vector_index.dot``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

_WORKERS = 2
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def submit(work: Callable[[], T]) -> Future[T]:
    """Run ``work`` on the shared vector worker pool (started on first use)."""
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(max_workers=_WORKERS, thread_name_prefix="cpersona-vector")
    return _pool.submit(work)


def _forget_pool_in_child() -> None:
    """A forked child holds the parent's pool object but none of its threads: start its own."""
    global _pool, _pool_lock
    _pool = None
    _pool_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_pool_in_child)
