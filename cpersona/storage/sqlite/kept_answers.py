"""Answers kept per FTS5 table between read snapshots, valid for one state of that table (``KeptAnswers``).

The term counts (``term_counts.py``) and the bm25 shares (``term_scores.py``) are both answers of an
FTS5 table that stay right while the table's state key is unchanged (its structure record, for the
shares also the change log's position). Both keep them the same way: looked up under a lock, the
missing ones read outside it, and kept only if the state has not moved on meanwhile; a new state
drops the table's answers, and past a bound everything starts again (a bound, not an eviction policy).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class KeptAnswers(Generic[K, V]):
    """Per (table, item) answers for one state key per table, ``bound`` in total by ``size``.

    One per store, shared by its threads' read sessions.
    """

    __slots__ = ("_answers", "_bound", "_keys", "_lock", "_size", "_used")

    def __init__(self, bound: int, size: Callable[[V], int]) -> None:
        self._lock = threading.Lock()
        self._keys: dict[str, Hashable] = {}
        self._answers: dict[str, dict[K, V]] = {}
        self._bound = bound
        self._size = size
        self._used = 0

    def answers(self, table: str, key: Hashable, items: Sequence[K], read: Callable[[K], V]) -> list[V]:
        """Each item's answer for ``table`` in state ``key``: kept ones, and ``read(item)`` for the rest
        (read without the lock held; kept only while ``key`` is still the table's state)."""
        with self._lock:
            if self._keys.get(table) != key:
                self._keys[table] = key
                dropped = self._answers.pop(table, {})
                self._used -= sum(self._size(v) for v in dropped.values())
                self._answers[table] = {}
            known = self._answers[table]
            found = [known.get(item) for item in items]
        out = [v if v is not None else read(item) for item, v in zip(items, found, strict=True)]
        fresh = {item: v for item, v, old in zip(items, out, found, strict=True) if old is None}
        if fresh:
            with self._lock:
                if self._keys.get(table) == key:  # another snapshot may have replaced them meanwhile
                    added = sum(self._size(v) for v in fresh.values())
                    if self._used + added > self._bound:
                        for kept in self._answers.values():
                            kept.clear()
                        self._used = 0
                    self._answers[table].update(fresh)
                    self._used += added
        return out
