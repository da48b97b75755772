"""Keyword search on PostgreSQL: the channels of SQLite's FTS5 indexes, scored the way FTS5's bm25 scores.

``memories`` / ``episodes`` are the counterparts of SQLite's trigram MATCH: every
term is a case-insensitive substring (``ILIKE``, answered by the ``gin_trgm_ops``
indexes, so CJK and word fragments match as in SQLite). ``memories_words`` is the
counterpart of SQLite's word-level porter index: the ``content_words`` tsvector
(migration 2: Snowball English stems, no stop words) matched with
``websearch_to_tsquery``.

Both are ranked with FTS5's bm25 (k1 = 1.2, b = 0.75), so the same fusion above the
storage interface sees the same score shapes on both engines (docs/decisions.md)::

    score = sum over matched terms of idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
    idf   = max(ln((N - df + 0.5) / (df + 0.5)), 1e-6)

tf is the term's occurrences in the row (substring occurrences for trigram terms, stem
positions for words); dl the row's length in tokens (characters - 2 for trigrams; distinct
stems for the word index, where FTS5 counts words). Differences from FTS5, chosen for cost: N counts the rows in scope
(an index-only count; FTS5 counts the whole table), df counts matching rows in scope,
and avgdl is the mean length of the matching rows (FTS5 keeps a running total of the
whole table) — all computed in the same query, no statistics table to maintain.
As in SQLite, a LIKE pass (score = terms contained) stands in for memories when no
term has 3 characters or nothing matched.

The memories channels spend the same row budget as SQLite's (``storage/keyword_prune.py``):
each term's rows in scope are counted up to the budget, bm25 runs on the rarest terms that
fit, the newest rows holding only dropped terms fill a short list (score 0), and a question
of only common terms ranks the newest matches by the terms they hold. Without it, a speaker's
name in a quarter of the rows made every recall score thousands of rows (docs/decisions.md).
"""

from __future__ import annotations

from typing import Any

from cpersona.storage.interface import KeywordHits, QueryTerms
from cpersona.storage.keyword import like_pattern
from cpersona.storage.keyword_prune import ROW_BUDGET, TermPlan, choose_terms, filled
from cpersona.storage.postgres.rows import source_clause
from cpersona.storage.postgres.sql import Executor, where
from cpersona.storage.scope import Scope

_MEMORY_TEXT = "m.content"
_EPISODE_TEXT = "(e.summary || ' ' || e.keywords)"  # the expression the episodes_trgm index is built on
K1, B, IDF_FLOOR = 1.2, 0.75, 1e-6  # FTS5's bm25 constants


def _bm25(tf: str, df: str, dl: str, avgdl: str, total: str) -> str:
    """One term's bm25 contribution as SQL (0 when the row does not hold the term)."""
    return (
        f"CASE WHEN {tf} > 0 THEN GREATEST(ln(({total} - {df} + 0.5) / ({df} + 0.5)), {IDF_FLOOR}) "
        f"* {tf} * {K1 + 1} / ({tf} + {K1} * ({1 - B} + {B} * {dl} / GREATEST({avgdl}, 1))) ELSE 0 END"
    )


def _trigram_bm25(
    ex: Executor,
    table: str,
    alias: str,
    text: str,
    terms: tuple[str, ...],
    clause: str,
    params: list[Any],
    extra_sql: str,
    extra_params: list[Any],
    limit: int,
) -> list[tuple[int, float]]:
    patterns = [like_pattern(t) for t in terms]
    # Occurrences of a (lower-case) term: the length the text loses when every occurrence is removed.
    # The text is lower-cased once per row (in c), not once per term.
    tf_cols = ", ".join(
        f"(char_length(lc) - char_length(replace(lc, %s, ''))) / {len(t)}::float8 AS t{i}"
        for i, t in enumerate(terms)
    )
    df_cols = ", ".join(f"COUNT(*) FILTER (WHERE t{i} > 0) OVER () AS n{i}" for i in range(len(terms)))
    any_sql = " OR ".join(f"{text} ILIKE %s" for _ in terms)
    score = " + ".join(_bm25(f"t{i}", f"n{i}", "dl", "avgdl", "total") for i in range(len(terms)))
    sql = (
        f"WITH c AS (SELECT {alias}.id, lower({text}) AS lc FROM {table} {alias} "
        f"WHERE ({any_sql}) AND {clause}{extra_sql}), "
        f"f AS (SELECT id, GREATEST(char_length(lc) - 2, 1)::float8 AS dl, {tf_cols} FROM c), "
        f"s AS (SELECT f.*, {df_cols}, AVG(dl) OVER () AS avgdl FROM f), "
        f"n AS (SELECT COUNT(*)::float8 AS total FROM {table} {alias} WHERE {clause}) "
        f"SELECT id, {score} AS score FROM s, n ORDER BY score DESC, id DESC LIMIT %s"
    )
    rows = ex.all(sql, [*patterns, *params, *extra_params, *terms, *params, limit])
    return [(int(r["id"]), float(r["score"])) for r in rows]


def _like_ranked(
    ex: Executor,
    table: str,
    alias: str,
    text: str,
    terms: tuple[str, ...],
    scope_sql: str,
    params: list[Any],
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

    def memories(
        self, terms: QueryTerms, scope: Scope, limit: int, *, source_id: str | None = None
    ) -> KeywordHits:
        """Trigram substring search ranked by idf; the LIKE pass when it cannot run or finds nothing."""
        if limit <= 0:
            return KeywordHits([], "none")
        clause, params = where(scope, "m")
        source_sql, source_params = source_clause(source_id, "m")
        scope_sql, scope_params = clause + source_sql, [*params, *source_params]
        if terms.match:
            hits = self._budgeted(
                _TrigramChannel(clause, params, source_sql, source_params), terms.match, limit
            )
            if hits:
                return KeywordHits(hits, "fts")
        if not terms.like:
            return KeywordHits([], "none")
        return KeywordHits(
            _like_ranked(self.ex, "memories", "m", _MEMORY_TEXT, terms.like, scope_sql, scope_params, limit),
            "like",
        )

    def episodes(self, terms: QueryTerms, scope: Scope, limit: int) -> KeywordHits:
        """The same over episode summary + keywords (LIKE when no term has 3 characters)."""
        if limit <= 0:
            return KeywordHits([], "none")
        clause, params = where(scope, "e")
        if terms.match:
            return KeywordHits(
                _trigram_bm25(
                    self.ex, "episodes", "e", _EPISODE_TEXT, terms.match, clause, params, "", [], limit
                ),
                "fts",
            )
        if not terms.like:
            return KeywordHits([], "none")
        return KeywordHits(
            _like_ranked(self.ex, "episodes", "e", _EPISODE_TEXT, terms.like, clause, params, limit), "like"
        )

    def memories_words(
        self, terms: QueryTerms, scope: Scope, limit: int, *, source_id: str | None = None
    ) -> KeywordHits:
        """Word-level full-text search: any of the query's words (``terms.words``), stemmed, ranked by bm25."""
        words = tuple(w for w in terms.words if w.strip())
        if limit <= 0 or not words:
            return KeywordHits([], "none")
        clause, params = where(scope, "m")
        source_sql, source_params = source_clause(source_id, "m")
        return KeywordHits(
            self._budgeted(_WordChannel(clause, params, source_sql, source_params), words, limit), "fts"
        )

    def _budgeted(self, channel: _Channel, terms: tuple[str, ...], limit: int) -> list[tuple[int, float]]:
        """bm25 over the terms that fit the row budget, then the newest rows of dropped terms (as SQLite)."""
        counts = [int(self.ex.value(*channel.count(term, ROW_BUDGET + 1)) or 0) for term in terms]
        plan: TermPlan = choose_terms(terms, counts, ROW_BUDGET)
        if plan.matches_nothing:
            return []
        hits = channel.bm25(self.ex, plan.kept, limit) if plan.kept else []
        if len(hits) >= limit or not plan.dropped:
            return hits
        live = plan.kept + plan.dropped
        sql, args = channel.newest(live, plan.dropped if plan.kept else live, max(ROW_BUDGET, limit))
        rows = self.ex.all(sql, args)
        return filled(hits, [(int(r["id"]), float(r["hits"])) for r in rows], plan, limit)


def _words_query(words: tuple[str, ...]) -> str:
    # websearch syntax: words joined by "or", each double-quoted so no word is read as an operator.
    return " or ".join('"' + w.replace('"', " ") + '"' for w in words)


class _Channel:
    """One budgeted memories channel: how to count a term's rows, rank kept terms, list the newest matches."""

    def __init__(self, clause: str, params: list[Any], source_sql: str, source_params: list[Any]) -> None:
        self.clause, self.params, self.source_sql, self.source_params = (
            clause,
            params,
            source_sql,
            source_params,
        )

    def _match(self, terms: tuple[str, ...]) -> tuple[str, list[Any]]:
        raise NotImplementedError

    def _contains(self, term: str) -> tuple[str, list[Any]]:
        raise NotImplementedError

    def count(self, term: str, cap: int) -> tuple[str, list[Any]]:
        """SQL counting the rows in scope that hold ``term``, stopping at ``cap``."""
        match, args = self._match((term,))
        return (
            f"SELECT count(*) FROM (SELECT 1 FROM memories m WHERE {match} AND {self.clause}{self.source_sql} "
            "LIMIT %s) x",
            [*args, *self.params, *self.source_params, cap],
        )

    def newest(self, live: tuple[str, ...], wanted: tuple[str, ...], cap: int) -> tuple[str, list[Any]]:
        """SQL for the ``cap`` newest rows holding any of ``wanted``, with how many ``live`` terms each holds."""
        match, args = self._match(wanted)
        parts = [self._contains(t) for t in live]
        hits_sql = " + ".join(f"({sql})::int" for sql, _ in parts)
        hit_args = [a for _, part_args in parts for a in part_args]
        return (
            f"SELECT id, ({hits_sql}) AS hits FROM (SELECT m.id, m.content, m.content_words FROM memories m "
            f"WHERE {match} AND {self.clause}{self.source_sql} ORDER BY m.id DESC LIMIT %s) m "
            "ORDER BY hits DESC, id DESC",
            [*hit_args, *args, *self.params, *self.source_params, cap],
        )

    def bm25(self, ex: Executor, terms: tuple[str, ...], limit: int) -> list[tuple[int, float]]:
        """The kept terms ranked by bm25."""
        raise NotImplementedError


class _TrigramChannel(_Channel):
    def _match(self, terms: tuple[str, ...]) -> tuple[str, list[Any]]:
        return "(" + " OR ".join(f"{_MEMORY_TEXT} ILIKE %s" for _ in terms) + ")", [
            like_pattern(t) for t in terms
        ]

    def _contains(self, term: str) -> tuple[str, list[Any]]:
        return "m.content ILIKE %s", [like_pattern(term)]

    def bm25(self, ex: Executor, terms: tuple[str, ...], limit: int) -> list[tuple[int, float]]:
        return _trigram_bm25(
            ex,
            "memories",
            "m",
            _MEMORY_TEXT,
            terms,
            self.clause,
            self.params,
            self.source_sql,
            self.source_params,
            limit,
        )


class _WordChannel(_Channel):
    def _match(self, terms: tuple[str, ...]) -> tuple[str, list[Any]]:
        return "m.content_words @@ websearch_to_tsquery('cpersona_words'::regconfig, %s)", [
            _words_query(terms)
        ]

    def _contains(self, term: str) -> tuple[str, list[Any]]:
        return "m.content_words @@ websearch_to_tsquery('cpersona_words'::regconfig, %s)", [
            _words_query((term,))
        ]

    def bm25(self, ex: Executor, terms: tuple[str, ...], limit: int) -> list[tuple[int, float]]:
        words, query = list(terms), _words_query(terms)
        clause, params, source_sql, source_params = (
            self.clause,
            self.params,
            self.source_sql,
            self.source_params,
        )
        score = _bm25("t.tf", "t.df", "d.dl", "a.avgdl", "n.total")
        rows = ex.all(
            # q: the query's stems; c: matching rows; d: their length in distinct stems (length() is cheap;
            # counting positions would unnest every matching row a second time); t: tf and df of each stem.
            "WITH q AS (SELECT DISTINCT x.lexeme FROM unnest(%s::text[]) w(word), "
            "LATERAL unnest(to_tsvector('cpersona_words'::regconfig, w.word)) x), "
            "c AS (SELECT m.id, m.content_words AS tsv FROM memories m, "
            "websearch_to_tsquery('cpersona_words'::regconfig, %s) tq "
            f"WHERE m.content_words @@ tq AND {clause}{source_sql}), "
            "d AS (SELECT c.id, length(c.tsv)::float8 AS dl FROM c), "
            "a AS (SELECT AVG(dl) AS avgdl FROM d), "
            "t AS (SELECT c.id, COALESCE(array_length(u.positions, 1), 1)::float8 AS tf, "
            "COUNT(*) OVER (PARTITION BY u.lexeme) AS df FROM c, unnest(c.tsv) u WHERE u.lexeme IN (SELECT lexeme FROM q)), "
            f"n AS (SELECT COUNT(*)::float8 AS total FROM memories m WHERE {clause}) "
            f"SELECT t.id, SUM({score}) AS score FROM t JOIN d USING (id), a, n "
            "GROUP BY t.id ORDER BY score DESC, t.id DESC LIMIT %s",
            [words, query, *params, *source_params, *params, limit],
        )
        return [(int(r["id"]), float(r["score"])) for r in rows]
