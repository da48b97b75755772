"""Vector searches started before recall's keyword queries and collected after them.

An engine whose ``VectorSearch`` can answer later (``DeferredVectorSearch``: SQLite, whose in-memory
index is scanned on a worker thread, ``storage/sqlite/vector_worker.py``) starts the scan while the
caller runs its keyword queries; any other engine is asked at once (PostgreSQL). Either way the answer
is ``nearest``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from cpersona.storage.interface import VectorSearch
from cpersona.storage.scope import Scope
from cpersona.storage.values import VectorQuery


@runtime_checkable
class DeferredVectorSearch(Protocol):
    """A ``VectorSearch`` that can start ``nearest`` now and answer later (SQLite: the scan runs on a
    worker thread while recall runs its keyword queries)."""

    def nearest_soon(
        self,
        table: str,
        query: VectorQuery,
        scope: Scope,
        limit: int,
        *,
        window: int | None,
        allowed_ids: Sequence[int] | None = None,
    ) -> Callable[[], list[tuple[int, float]]]:
        """Start ``nearest``; the function returned gives its answer (call it on this thread)."""
        ...


def nearest_soon(
    search: VectorSearch,
    table: str,
    query: VectorQuery,
    scope: Scope,
    limit: int,
    *,
    window: int | None,
    allowed_ids: Sequence[int] | None = None,
) -> Callable[[], list[tuple[int, float]]]:
    """``search.nearest`` started now, answered by the function returned: deferred where the engine
    can (``DeferredVectorSearch``), else run at once."""
    if isinstance(search, DeferredVectorSearch):
        return search.nearest_soon(table, query, scope, limit, window=window, allowed_ids=allowed_ids)
    found = search.nearest(table, query, scope, limit, window=window, allowed_ids=allowed_ids)
    return lambda: found
