"""Keyword search in SQLite: FTS5 trigram and word-level MATCH ranked by bm25, with a LIKE stand-in.

Scores are "higher is better": bm25 is negated; the LIKE pass scores by how
many query terms a row contains. The LIKE pass replaces the FTS memories
search (when MATCH finds nothing or no term has 3 characters); it never runs
alongside it. A query is never passed to MATCH as written: each term becomes
a double-quoted phrase, OR'ed, so quotes, ``*``, ``:``, parentheses and words
like NEAR/AND/OR are plain text.
"""

from __future__ import annotations

import sqlite3

from cpersona.storage.interface import KeywordHits, QueryTerms
from cpersona.storage.scope import Scope


def match_expression(terms: QueryTerms) -> str | None:
    """The FTS5 MATCH string, or None when no term is long enough for trigrams."""
    if not terms.match:
        return None
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms.match)


def words_expression(terms: QueryTerms) -> str | None:
    """The MATCH string for the word index: each word a quoted phrase, OR'ed (any word may match)."""
    if not terms.words:
        return None
    return " OR ".join('"' + word.replace('"', '""') + '"' for word in terms.words)


def like_pattern(term: str) -> str:
    """``%term%`` with LIKE's wildcards escaped (use with ESCAPE '\\')."""
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _source_clause(source_id: str | None, alias: str) -> tuple[str, list[object]]:
    if source_id is None:
        return "", []
    return f" AND substr(COALESCE(json_extract({alias}.source, '$.id'), ''), 1, ?) = ?", [len(source_id), source_id]


class SqliteKeywordSearch:
    """``KeywordSearch`` over one SQLite connection."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def memories(self, terms: QueryTerms, scope: Scope, limit: int, *, source_id: str | None = None) -> KeywordHits:
        """FTS5 trigram MATCH ranked by bm25; the LIKE pass when MATCH cannot run or finds nothing."""
        if limit <= 0:
            return KeywordHits([], "none")
        where, params = scope.where("m")
        source_sql, source_params = _source_clause(source_id, "m")
        expression = match_expression(terms)
        if expression is not None:
            rows = self.conn.execute(
                "SELECT m.id, bm25(memories_fts) AS rank FROM memories_fts "
                "JOIN memories m ON m.id = memories_fts.rowid "
                f"WHERE memories_fts MATCH ? AND {where}{source_sql} ORDER BY rank, m.id DESC LIMIT ?",
                [expression, *params, *source_params, limit],
            ).fetchall()
            if rows:
                return KeywordHits([(int(r[0]), -float(r[1])) for r in rows], "fts")
        if not terms.like:
            return KeywordHits([], "none")
        score_sql = " + ".join("(m.content LIKE ? ESCAPE '\\')" for _ in terms.like)
        any_sql = " OR ".join("m.content LIKE ? ESCAPE '\\'" for _ in terms.like)
        patterns = [like_pattern(t) for t in terms.like]
        rows = self.conn.execute(
            f"SELECT m.id, ({score_sql}) AS hits FROM memories m WHERE ({any_sql}) AND {where}{source_sql} "
            "ORDER BY hits DESC, m.id DESC LIMIT ?",
            [*patterns, *patterns, *params, *source_params, limit],
        ).fetchall()
        return KeywordHits([(int(r[0]), float(r[1])) for r in rows], "like")

    def memories_words(
        self, terms: QueryTerms, scope: Scope, limit: int, *, source_id: str | None = None
    ) -> KeywordHits:
        """FTS5 word-level MATCH (porter stems) ranked by bm25; no LIKE stand-in (the trigram channel has it)."""
        expression = words_expression(terms)
        if limit <= 0 or expression is None:
            return KeywordHits([], "none")
        where, params = scope.where("m")
        source_sql, source_params = _source_clause(source_id, "m")
        rows = self.conn.execute(
            "SELECT m.id, bm25(memories_words) AS rank FROM memories_words "
            "JOIN memories m ON m.id = memories_words.rowid "
            f"WHERE memories_words MATCH ? AND {where}{source_sql} ORDER BY rank, m.id DESC LIMIT ?",
            [expression, *params, *source_params, limit],
        ).fetchall()
        return KeywordHits([(int(r[0]), -float(r[1])) for r in rows], "fts")

    def episodes(self, terms: QueryTerms, scope: Scope, limit: int) -> KeywordHits:
        """FTS5 over episode summary + keywords (LIKE over both when no term has 3 characters)."""
        if limit <= 0:
            return KeywordHits([], "none")
        where, params = scope.where("e")
        expression = match_expression(terms)
        if expression is not None:
            rows = self.conn.execute(
                "SELECT e.id, bm25(episodes_fts) AS rank FROM episodes_fts "
                "JOIN episodes e ON e.id = episodes_fts.rowid "
                f"WHERE episodes_fts MATCH ? AND {where} ORDER BY rank, e.id DESC LIMIT ?",
                [expression, *params, limit],
            ).fetchall()
            return KeywordHits([(int(r[0]), -float(r[1])) for r in rows], "fts")
        if not terms.like:
            return KeywordHits([], "none")
        text = "(e.summary || ' ' || e.keywords)"
        score_sql = " + ".join(f"({text} LIKE ? ESCAPE '\\')" for _ in terms.like)
        any_sql = " OR ".join(f"{text} LIKE ? ESCAPE '\\'" for _ in terms.like)
        patterns = [like_pattern(t) for t in terms.like]
        rows = self.conn.execute(
            f"SELECT e.id, ({score_sql}) AS hits FROM episodes e WHERE ({any_sql}) AND {where} "
            "ORDER BY hits DESC, e.id DESC LIMIT ?",
            [*patterns, *patterns, *params, limit],
        ).fetchall()
        return KeywordHits([(int(r[0]), float(r[1])) for r in rows], "like")
