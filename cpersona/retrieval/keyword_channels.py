"""The keyword channels: the engine's full-text indexes over memories (trigram, words) and episodes.

Each reads through the session's ``KeywordSearch`` (storage/sqlite/keyword.py,
storage/postgres/keyword.py); ``method`` says how ("fts", its "like" stand-in, or "none"). The memory
channels filter a sure time cue's period in their statements, before their row budget.
"""

from __future__ import annotations

from collections.abc import Callable

from cpersona.retrieval import language, pair_rescore, passage_rescore
from cpersona.retrieval.candidates import EPISODE, Key
from cpersona.retrieval.retriever import ChannelHits, ChannelQuery, Searching, answered
from cpersona.storage.interface import KeywordHits, Session

FTS_MEMORIES = "fts_memories"  # trigram index over memories (+ its LIKE stand-in)
FTS_WORDS = "fts_words"  # word-level (porter) index over memories
FTS_EPISODES = "fts_episodes"


def _memories(search: Callable[..., KeywordHits], query: ChannelQuery, rows: int = 0) -> KeywordHits:
    """One memory keyword index (``search``: the session's ``memories`` or ``memories_words``) asked for
    the query's terms in its scope and period, deep enough that hidden rows leave ``keyword_depth``
    (or ``rows``, when more)."""
    request = query.request
    return search(
        query.terms,
        request.scope,
        max(query.keyword_depth, rows) + len(query.hidden),
        source_id=request.source_id,
        period=query.period,
    )


def _best_passage(
    session: Session, query: ChannelQuery, hits: list[tuple[int, float]]
) -> list[tuple[int, float]]:
    """On a corpus of long records, the list ranked again by each row's best passage
    (retrieval/passage_rescore.py); any other corpus keeps the index's ranking."""
    words = passage_rescore.query_words(query.request.query) if query.request.long_records else ()
    if not words:
        return hits
    listed = query.visible(hits)[: max(query.depth, passage_rescore.LIST_ROWS)]
    unread = [rid for rid, _ in listed if rid not in query.passages]
    if unread:
        rows = session.memories.get_many(unread, query.request.scope)
        query.rows.update(rows)
        texts = {rid: str(row["content"]) for rid, row in rows.items()}
        query.passages.update(passage_rescore.where(texts, words))
    return passage_rescore.rescore(listed, query.passages, words)


class TrigramMemories:
    """Memories whose text holds the query's terms (trigram index: any script, parts of words)."""

    name = FTS_MEMORIES

    def search(self, session: Session, query: ChannelQuery) -> Searching | None:
        pieces = pair_rescore.pieces(query.request.query)
        found = _memories(session.keyword.memories, query, pair_rescore.LIST_ROWS if pieces else 0)
        hits = found.hits
        if pieces and found.method == "fts":
            # A Japanese or Chinese question: its list ranked again by its character pairs
            # (retrieval/pair_rescore.py), which the trigram index cannot look up.
            listed = query.visible(hits)[: max(query.depth, pair_rescore.LIST_ROWS)]
            rows = session.memories.get_many([rid for rid, _ in listed])
            texts = {rid: str(row["content"]) for rid, row in rows.items()}
            hits = pair_rescore.rescore(listed, texts, pieces)
        elif found.method == "fts":
            hits = _best_passage(session, query, hits)
        return answered(ChannelHits(query.memory_hits(hits), found.method, query.request.keyword_weight))


class WordMemories:
    """Memories that hold the query's words (word index with stemming)."""

    name = FTS_WORDS

    def search(self, session: Session, query: ChannelQuery) -> Searching | None:
        request = query.request
        found = _memories(session.keyword.memories_words, query)
        hits = found.hits
        if found.method == "fts" and not pair_rescore.pieces(request.query):
            hits = _best_passage(session, query, hits)
        # Weighed by the share of the query written with spaces (retrieval/language.py): a Japanese
        # question's words are runs the word index holds only by accident.
        weight = language.spaced_share(request.query) * request.keyword_weight
        return answered(ChannelHits(query.memory_hits(hits), found.method, weight))


class EpisodeKeywords:
    """Episodes whose summary or keywords hold the query's terms."""

    name = FTS_EPISODES

    def search(self, session: Session, query: ChannelQuery) -> Searching | None:
        if not query.include_episodes:
            return None
        found = session.keyword.episodes(query.terms, query.request.scope, query.depth)
        return answered(ChannelHits([(Key(EPISODE, i), s) for i, s in found.hits], found.method))
