"""The vectors of recent recall queries, so a query asked again is not embedded again.

Agents and hooks ask the same query more than once (a session-start recall, a retried call, the same
question from two tools); the original CPersona keeps the same kind of cache (256 texts). A query's
vector depends only on its text and the model state that computed it (the session, and the query
kernel chosen after each load): ``clear`` runs whenever that state changes, and a vector computed
before a clear is never stored after it (the generation it was computed under is checked), so a
cached answer is always the vector the model would compute now, bit for bit. In-process the model
cannot change unseen, so its vectors never expire; a remote embedding server's model can (it may be
restarted with another), so the HTTP backend gives its vectors a lifetime (``ttl``, seconds).
Vectors are handed out as copies (a caller may modify its own).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from cpersona.config import DEFAULT_QUERY_CACHE_SIZE


class QueryCache:
    """A bounded, thread-safe map from query text to vector, least recently used out first.

    ``ttl``: seconds a vector is answered after it was computed (None: until evicted or cleared).
    ``clock``: a monotonic clock in seconds (tests pass their own)."""

    def __init__(
        self,
        size: int = DEFAULT_QUERY_CACHE_SIZE,
        ttl: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.size = max(0, int(size))
        self.ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        # text -> (vector, when it was stored)
        self._vectors: OrderedDict[str, tuple[np.ndarray, float]] = OrderedDict()
        self._generation = 0
        self.hits = 0
        self.misses = 0

    def get(self, text: str) -> tuple[np.ndarray | None, int]:
        """(a copy of the cached vector or None, the generation to ``put`` a computed one under)."""
        with self._lock:
            entry = self._vectors.get(text) if self.size else None
            if entry is not None and self.ttl is not None and self._clock() - entry[1] >= self.ttl:
                del self._vectors[text]  # expired: computed again, and stored afresh by ``put``
                entry = None
            if entry is None:
                self.misses += 1
                return None, self._generation
            self._vectors.move_to_end(text)
            self.hits += 1
            return entry[0].copy(), self._generation

    def put(self, text: str, vector: np.ndarray, generation: int) -> None:
        """Keep ``vector`` for ``text`` unless the model state changed since ``generation``."""
        if not self.size:
            return
        with self._lock:
            if generation != self._generation:
                return
            self._vectors[text] = (np.array(vector, copy=True), self._clock())
            self._vectors.move_to_end(text)
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)

    def through(self, text: str, compute: Callable[[], np.ndarray]) -> np.ndarray:
        """The vector kept for ``text``, or ``compute()``'s, kept unless the model state changed meanwhile."""
        cached, generation = self.get(text)
        if cached is not None:
            return cached
        vector = compute()
        self.put(text, vector, generation)
        return vector

    def clear(self) -> None:
        """Forget every vector: the model state that computed them changed."""
        with self._lock:
            self._vectors.clear()
            self._generation += 1

    def __len__(self) -> int:
        with self._lock:
            return len(self._vectors)
