"""The vector channel: the memories and episodes nearest the query's vector (cosine).

The session's ``VectorSearch`` answers (an in-memory index on SQLite, the database on PostgreSQL);
the search starts on another thread where the engine can (``nearest_when_ready``), so the keyword
channels run meanwhile. Its weight in fusion is the share of the query the model reads, and for a query
it reads only in part, also the share of its best candidates it reads (retrieval/language.py).
"""

from __future__ import annotations

from cpersona.retrieval import language
from cpersona.retrieval.candidates import EPISODE, MEMORY, Hit, Key, RecallRequest
from cpersona.retrieval.pending_vector import PendingQueryVector, nearest_when_ready
from cpersona.retrieval.retriever import ChannelHits, ChannelQuery, Searching
from cpersona.storage.interface import EPISODES, MEMORIES, Session

VECTOR = "vector"


class VectorChannel:
    """Nearest rows by cosine, memories and episodes merged best first."""

    name = VECTOR

    def search(self, session: Session, query: ChannelQuery) -> Searching | None:
        if query.vector is None:
            return None
        request, vector, depth = query.request, query.vector, query.depth
        allowed: list[int] | None = None
        if request.source_id is not None:
            allowed = session.memories.ids_with_source(request.scope, request.source_id)
        if query.in_period is not None:
            # A sure cue: only rows in the period are candidates.
            allowed = sorted(query.in_period if allowed is None else query.in_period.intersection(allowed))
        if allowed is not None and query.hidden:
            allowed = [i for i in allowed if i not in query.hidden]
        search = session.vector_search
        memories = nearest_when_ready(
            search,
            MEMORIES,
            vector,
            request.scope,
            depth + len(query.hidden),
            window=query.window,
            allowed_ids=allowed,
        )
        episodes = (
            nearest_when_ready(search, EPISODES, vector, request.scope, depth, window=query.window)
            if query.include_episodes
            else None
        )

        def collect() -> ChannelHits | None:
            if isinstance(vector, PendingQueryVector) and vector.resolve() is None:
                return None  # the vector did not come after all: keyword-only, this channel absent
            hits = [(Key(MEMORY, i), s) for i, s in memories() if i not in query.hidden][:depth]
            if episodes is not None:
                hits += [(Key(EPISODE, i), s) for i, s in episodes()]
                # Ties broken by the ref's text, as they always were (answers stay identical).
                hits.sort(key=lambda h: (-h[1], h[0].ref))
            hits = hits[:depth]
            return ChannelHits(hits, weight=_weight(session, request, hits))

        return collect


def _weight(session: Session, request: RecallRequest, hits: list[Hit]) -> float:
    """The channel's weight: the query's readable share, times its best memories' when it is partial
    (only then are rows read here: an English query to an English model costs nothing)."""
    weight = request.vector_weight
    if request.vector_scripts is None or not 0.0 < weight < 1.0:
        return weight
    ids = [key.id for key, _ in hits if key.kind == MEMORY][: language.CANDIDATES]
    rows = session.memories.get_many(ids, request.scope) if ids else {}
    texts = [str(row.get("content") or "") for row in rows.values()]
    return round(weight * language.candidates_share(texts, request.vector_scripts), 3)
