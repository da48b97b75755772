"""The two keyword retrievers: FTS5 over memories (with its LIKE stand-in) and over episodes.

Scores are "higher is better": bm25 is negated; the LIKE pass scores by how
many query terms a row contains. The LIKE pass replaces the FTS memories
retriever (when MATCH finds nothing or no term has 3 characters); it never
runs alongside it.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from cpersona.retrieval.match_query import QueryTerms, like_pattern
from cpersona.storage.scope import Scope


@dataclass(frozen=True)
class KeywordHits:
    """Ranked (id, score) pairs and which method produced them ("fts" | "like" | "none")."""

    hits: list[tuple[int, float]]
    method: str


def _source_clause(source_id: str | None, alias: str) -> tuple[str, list[object]]:
    if source_id is None:
        return "", []
    return f" AND substr(COALESCE(json_extract({alias}.source, '$.id'), ''), 1, ?) = ?", [len(source_id), source_id]


def search_memories(
    conn: sqlite3.Connection,
    terms: QueryTerms,
    scope: Scope,
    limit: int,
    *,
    source_id: str | None = None,
    fts_enabled: bool = True,
) -> KeywordHits:
    """FTS5 trigram MATCH ranked by bm25; the LIKE pass when MATCH cannot run or finds nothing."""
    if limit <= 0:
        return KeywordHits([], "none")
    where, params = scope.where("m")
    source_sql, source_params = _source_clause(source_id, "m")
    expression = terms.match_expression()
    if fts_enabled and expression is not None:
        rows = conn.execute(
            "SELECT m.id, bm25(memories_fts) AS rank FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid "
            f"WHERE memories_fts MATCH ? AND {where}{source_sql} ORDER BY rank, m.id DESC LIMIT ?",
            [expression, *params, *source_params, limit],
        ).fetchall()
        if rows:
            return KeywordHits([(int(r[0]), -float(r[1])) for r in rows], "fts")
    return _like_memories(conn, terms, where, params, source_sql, source_params, limit)


def _like_memories(
    conn: sqlite3.Connection,
    terms: QueryTerms,
    where: str,
    params: list[str],
    source_sql: str,
    source_params: list[object],
    limit: int,
) -> KeywordHits:
    if not terms.like:
        return KeywordHits([], "none")
    score_sql = " + ".join("(m.content LIKE ? ESCAPE '\\')" for _ in terms.like)
    any_sql = " OR ".join("m.content LIKE ? ESCAPE '\\'" for _ in terms.like)
    patterns = [like_pattern(t) for t in terms.like]
    rows = conn.execute(
        f"SELECT m.id, ({score_sql}) AS hits FROM memories m WHERE ({any_sql}) AND {where}{source_sql} "
        "ORDER BY hits DESC, m.id DESC LIMIT ?",
        [*patterns, *patterns, *params, *source_params, limit],
    ).fetchall()
    return KeywordHits([(int(r[0]), float(r[1])) for r in rows], "like")


def search_episodes(conn: sqlite3.Connection, terms: QueryTerms, scope: Scope, limit: int) -> KeywordHits:
    """FTS5 over episode summary + keywords (LIKE over both when no term has 3 characters)."""
    if limit <= 0:
        return KeywordHits([], "none")
    where, params = scope.where("e")
    expression = terms.match_expression()
    if expression is not None:
        rows = conn.execute(
            "SELECT e.id, bm25(episodes_fts) AS rank FROM episodes_fts JOIN episodes e ON e.id = episodes_fts.rowid "
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
    rows = conn.execute(
        f"SELECT e.id, ({score_sql}) AS hits FROM episodes e WHERE ({any_sql}) AND {where} "
        "ORDER BY hits DESC, e.id DESC LIMIT ?",
        [*patterns, *patterns, *params, limit],
    ).fetchall()
    return KeywordHits([(int(r[0]), float(r[1])) for r in rows], "like")
