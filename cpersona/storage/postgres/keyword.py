"""Keyword search on PostgreSQL: the same channels as SQLite's FTS5 trigram search, plus word-level FTS.

``memories`` / ``episodes`` are the counterparts of SQLite's trigram MATCH: every
term is a case-insensitive substring (``ILIKE``, answered by the ``gin_trgm_ops``
indexes, so CJK and word fragments match as in SQLite). Rows are ranked like bm25
without its length term: each matched term adds its inverse document frequency
(rare terms weigh more), computed over the matching rows of the scope in the same
query. As in SQLite, a LIKE pass (score = terms contained) stands in for memories
when no term has 3 characters or nothing matched.

``memories_words`` is word-level full-text search over the generated ``tsvector``
(``websearch_to_tsquery('simple')``, ranked by ``ts_rank_cd``): the counterpart of
SQLite's word-level FTS5 channel (``fts_words``). Unlike SQLite's porter tokenizer the
'simple' configuration does not stem (docs/decisions.md).
"""

from __future__ import annotations

from typing import Any

from cpersona.storage.interface import KeywordHits, QueryTerms
from cpersona.storage.keyword import like_pattern
from cpersona.storage.postgres.rows import source_clause
from cpersona.storage.postgres.sql import Executor, where
from cpersona.storage.scope import Scope

_MEMORY_TEXT = "m.content"
_EPISODE_TEXT = "(e.summary || ' ' || e.keywords)"  # the expression the episodes_trgm index is built on


def _idf_ranked(
    ex: Executor, table: str, alias: str, text: str, terms: tuple[str, ...], scope_sql: str, params: list[Any],
    limit: int,
) -> list[tuple[int, float]]:
    patterns = [like_pattern(t) for t in terms]
    hit_cols = ", ".join(f"({text} ILIKE %s)::int AS h{i}" for i in range(len(terms)))
    any_sql = " OR ".join(f"{text} ILIKE %s" for _ in terms)
    # bm25's idf: ln(1 + (N - df + 0.5) / (df + 0.5)); N from the planner's row estimate (no count scan).
    score = " + ".join(
        f"h{i} * ln(1 + (GREATEST(n.total, c.matched) - SUM(h{i}) OVER () + 0.5) / (SUM(h{i}) OVER () + 0.5))"
        for i in range(len(terms))
    )
    sql = (
        f"WITH c AS (SELECT {alias}.id, {hit_cols}, COUNT(*) OVER () AS matched FROM {table} {alias} "
        f"WHERE ({any_sql}) AND {scope_sql}), "
        f"n AS (SELECT GREATEST(reltuples, 0)::float8 AS total FROM pg_class WHERE oid = '{table}'::regclass) "
        f"SELECT id, {score} AS score FROM c, n ORDER BY score DESC, id DESC LIMIT %s"
    )
    rows = ex.all(sql, [*patterns, *patterns, *params, limit])
    return [(int(r["id"]), float(r["score"])) for r in rows]


def _like_ranked(
    ex: Executor, table: str, alias: str, text: str, terms: tuple[str, ...], scope_sql: str, params: list[Any],
    limit: int,
) -> list[tuple[int, float]]:
    patterns = [like_pattern(t) for t in terms]
    score_sql = " + ".join(f"({text} ILIKE %s)::int" for _ in terms)
    any_sql = " OR ".join(f"{text} ILIKE %s" for _ in terms)
    rows = ex.all(
        f"SELECT {alias}.id, ({score_sql}) AS hits FROM {table} {alias} WHERE ({any_sql}) AND {scope_sql} "
        "ORDER BY hits DESC, id DESC LIMIT %s",
        [*patterns, *patterns, *params, limit],
    )
    return [(int(r["id"]), float(r["hits"])) for r in rows]


class PgKeywordSearch:
    """``KeywordSearch`` on PostgreSQL."""

    __slots__ = ("ex",)

    def __init__(self, ex: Executor) -> None:
        self.ex = ex

    def memories(self, terms: QueryTerms, scope: Scope, limit: int, *, source_id: str | None = None) -> KeywordHits:
        """Trigram substring search ranked by idf; the LIKE pass when it cannot run or finds nothing."""
        if limit <= 0:
            return KeywordHits([], "none")
        clause, params = where(scope, "m")
        source_sql, source_params = source_clause(source_id, "m")
        scope_sql, scope_params = clause + source_sql, [*params, *source_params]
        if terms.match:
            hits = _idf_ranked(self.ex, "memories", "m", _MEMORY_TEXT, terms.match, scope_sql, scope_params, limit)
            if hits:
                return KeywordHits(hits, "fts")
        if not terms.like:
            return KeywordHits([], "none")
        return KeywordHits(
            _like_ranked(self.ex, "memories", "m", _MEMORY_TEXT, terms.like, scope_sql, scope_params, limit), "like"
        )

    def episodes(self, terms: QueryTerms, scope: Scope, limit: int) -> KeywordHits:
        """The same over episode summary + keywords (LIKE when no term has 3 characters)."""
        if limit <= 0:
            return KeywordHits([], "none")
        clause, params = where(scope, "e")
        if terms.match:
            return KeywordHits(
                _idf_ranked(self.ex, "episodes", "e", _EPISODE_TEXT, terms.match, clause, params, limit), "fts"
            )
        if not terms.like:
            return KeywordHits([], "none")
        return KeywordHits(_like_ranked(self.ex, "episodes", "e", _EPISODE_TEXT, terms.like, clause, params, limit), "like")

    def memories_words(
        self, terms: QueryTerms, scope: Scope, limit: int, *, source_id: str | None = None
    ) -> KeywordHits:
        """Word-level full-text search: the query's words (``terms.words``) OR'ed, ranked by ``ts_rank_cd``."""
        words = [w for w in terms.words if w.strip()]
        if limit <= 0 or not words:
            return KeywordHits([], "none")
        clause, params = where(scope, "m")
        source_sql, source_params = source_clause(source_id, "m")
        # websearch syntax: words joined by "or", each double-quoted so no word is read as an operator.
        query = " or ".join('"' + w.replace('"', " ") + '"' for w in words)
        rows = self.ex.all(
            "SELECT m.id, ts_rank_cd(m.content_tsv, q) AS rank FROM memories m, "
            "websearch_to_tsquery('simple', %s) q "
            f"WHERE m.content_tsv @@ q AND {clause}{source_sql} ORDER BY rank DESC, m.id DESC LIMIT %s",
            [query, *params, *source_params, limit],
        )
        return KeywordHits([(int(r["id"]), float(r["rank"])) for r in rows], "fts")
