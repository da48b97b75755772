"""The retriever seam: a retrieval channel is a ``Retriever`` (a name and ``search``) registered in
``cpersona.retrieval.channels.RETRIEVERS`` (docs/architecture.md "How to add a retrieval channel").

The pipeline asks every registered retriever the same ``ChannelQuery`` in registry order and fuses
what they found in that order too (float sums are reproducible). ``search`` starts the work and
returns a function that gives the hits: a channel that can work in the background (the vector search
on another thread) returns at once, and the pipeline collects every channel after all have started.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from cpersona.retrieval.candidates import Hit, Key, RecallRequest
from cpersona.retrieval.pending_vector import PendingQueryVector
from cpersona.storage.interface import QueryTerms, Session, VectorQuery
from cpersona.storage.values import Row


@dataclass(frozen=True)
class ChannelQuery:
    """One recall's question, as every retriever reads it."""

    request: RecallRequest
    terms: QueryTerms  # the query's distinct search terms (retrieval/match_query.py)
    depth: int  # hits a channel returns at most
    keyword_depth: int  # rows a keyword channel reads before cutting to ``depth`` (deeper under a sure cue)
    #: Superseded, retired and expired memory ids: a channel reads ``len(hidden)`` more rows and drops
    #: them, so its pool is what it would be without them.
    hidden: frozenset[int]
    in_period: frozenset[int] | None  # a sure time cue: the memory ids in its period (None: no filter)
    period: tuple[str | None, str | None] | None  # the same period as stored timestamps, [start, end)
    vector: VectorQuery | PendingQueryVector | None  # the query's vector (None: keyword-only recall)
    window: int | None  # the vector window (CPERSONA_MAX_MEMORIES; None: every row)
    #: Where the query's words sit in each row read by the best-passage ranking (retrieval/passage_rescore.py),
    #: by memory id: both memory keyword channels list many of the same rows, read once per recall.
    passages: dict[int, list[tuple[int, int]]] = field(default_factory=dict, compare=False)
    #: The memory rows read in scope on the way (by the best-passage ranking), by id: hydration reads
    #: only the others (retrieval/scoring.py ``hydrate``).
    rows: dict[int, Row] = field(default_factory=dict, compare=False)

    @property
    def include_episodes(self) -> bool:
        """Episodes have no source: a ``source_id`` filter leaves them out unless a channel is named."""
        return self.request.source_id is None or bool(self.request.scope.channel)

    def visible(self, hits: list[tuple[int, float]]) -> list[tuple[int, float]]:
        """A memory channel's (id, score) hits that may be answered: under a sure cue only those in
        the period, never a hidden one."""
        if self.in_period is not None:
            hits = [h for h in hits if h[0] in self.in_period]
        if self.hidden:
            hits = [h for h in hits if h[0] not in self.hidden]
        return hits

    def memory_hits(self, hits: list[tuple[int, float]]) -> list[Hit]:
        """A memory channel's (id, score) hits as candidates: the ``visible`` ones, at most ``depth``."""
        return [(Key("memory", i), s) for i, s in self.visible(hits)[: self.depth]]


@dataclass
class ChannelHits:
    """A channel's candidates best first, how it read them, and their weight in fusion."""

    hits: list[Hit]
    method: str | None = (
        None  # a keyword channel's "fts" | "like" | "none" (response search.keyword_channels)
    )
    weight: float = 1.0  # this query's weight of the channel in rrf / rsf


#: What ``search`` returns: call it for the hits (None: the channel ran out after all, e.g. a query
#: vector still being computed that came to nothing; the channel is then absent from this recall).
Searching = Callable[[], ChannelHits | None]


class Retriever(Protocol):
    """One retrieval channel."""

    #: The channel's name: its key in fusion, match_reason channels, the trace and the response.
    name: str

    def search(self, session: Session, query: ChannelQuery) -> Searching | None:
        """Start searching ``session`` (the recall's one read snapshot) for ``query``; None when the
        channel does not run for this query (e.g. the vector channel without a query vector)."""
        ...


def answered(hits: ChannelHits) -> Searching:
    """``search``'s return for a channel that has its hits already."""
    return lambda: hits
