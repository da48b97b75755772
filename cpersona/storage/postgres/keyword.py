"""Keyword search on PostgreSQL: the channels of SQLite's FTS5 indexes, scored the way FTS5's bm25 scores.

``memories`` / ``episodes`` are the counterparts of SQLite's trigram MATCH: every term
matches as a case-insensitive substring. ``memories_words`` is the counterpart of
SQLite's word-level porter index: the query's words, stemmed by Snowball English, match
rows holding a word of the same stem. Both read the keyword postings kept by triggers
(``storage/postgres/postings.py``; the statements are in ``keyword_sql.py``): a term's
rows come from a B-tree of (token, agent, row id), newest first, with the occurrences
and lengths bm25 needs in each entry, so no statement reads a row's text or matches a
pattern per row (docs/decisions.md).

Both are ranked with FTS5's bm25 (k1 = 1.2, b = 0.75), so the same fusion above the
storage interface sees the same score shapes on both engines::

    score = sum over matched terms of idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
    idf   = max(ln((N - df + 0.5) / (df + 0.5)), 1e-6)

tf is the term's occurrences in the row (substring occurrences for trigram terms, words of
the stem for the word channel); dl the row's length in tokens (characters - 2 for trigrams;
every token for the word channel, as FTS5 counts words); avgdl the mean length of the posted
rows in scope (kept by the posting triggers, storage/postgres/lengths.py; FTS5 keeps a
running total of its table). Differences from FTS5, chosen for cost: N counts the rows in
scope (kept by triggers, storage/postgres/counts.py; FTS5 counts the whole table), df
counts matching rows in scope, and avgdl is over the scope, not the table. As in
SQLite, a LIKE pass (score = terms contained) stands in for memories when no term has 3
characters or nothing matched.

The memories channels spend the same row budget as SQLite's (``storage/keyword_prune.py``):
each term's postings in scope are counted up to the budget (a row holding two tokens of a
term counts twice, so PostgreSQL never ranks more rows than the budget), bm25 runs on the
rarest terms that fit, the newest rows holding only dropped terms fill a short list (score
0), and a question of only common terms ranks the newest matches by the terms they hold.
"""

from __future__ import annotations

from typing import Any

from cpersona.storage.keyword_budget import ROW_BUDGET, TermPlan, choose_terms, filled
from cpersona.storage.postgres.keyword_sql import TRIGRAM, WORDS, PostingsQuery, Resolved
from cpersona.storage.postgres.memories import source_clause
from cpersona.storage.postgres.sql import Executor, where
from cpersona.storage.scope import Scope
from cpersona.storage.sql_text import like_pattern
from cpersona.storage.values import KeywordHits, Period, QueryTerms

_MEMORY_TEXT = "m.content"
_EPISODE_TEXT = "(e.summary || ' ' || e.keywords)"  # the expression the episodes_trgm index is built on


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


def _row_clause(source_id: str | None, period: Period | None, alias: str) -> tuple[str, list[Any]]:
    """The per-row filters of a memories channel: ``source_id`` and a ``sure`` cue's period (stored
    timestamps compare as text, byte order), checked on the row inside the statement: the postings
    counted for the row budget and ranked are the period's only."""
    sql, params = source_clause(source_id, alias)
    params = list(params)
    for op, bound in zip((">=", "<"), period or (None, None), strict=True):
        if bound is not None:
            sql += f' AND {alias}.timestamp COLLATE "C" {op} %s'
            params.append(bound)
    return sql, params


class PgKeywordSearch:
    """``KeywordSearch`` on PostgreSQL."""

    __slots__ = ("ex", "_trigram_tokens")

    def __init__(self, ex: Executor) -> None:
        self.ex = ex
        # Trigram terms' vocabulary tokens, as the memories channel resolved them: the episodes channel of the
        # same recall asks for the same terms (the vocabulary serves both tables).
        self._trigram_tokens: dict[str, Resolved] = {}

    def memories(
        self,
        terms: QueryTerms,
        scope: Scope,
        limit: int,
        *,
        source_id: str | None = None,
        period: Period | None = None,
    ) -> KeywordHits:
        """Substring search ranked by bm25 within the row budget; the LIKE pass when it cannot run or finds
        nothing."""
        if limit <= 0:
            return KeywordHits([], "none")
        source_sql, source_params = _row_clause(source_id, period, "m")
        if terms.match:
            query = PostingsQuery("memories", TRIGRAM, scope, source_sql, source_params)
            hits = self._budgeted(query, terms.match, limit)
            if hits:
                return KeywordHits(hits, "fts")
        # Here every trigram term matched nothing, so neither can a LIKE term containing one (a word of 3+
        # characters contains its own trigram term): only the others (shorter words) go to the LIKE pass,
        # which reads the rows in scope as SQLite's does. The result is the same, without a scan for nothing.
        short = tuple(t for t in terms.like if not any(m in t for m in terms.match))
        if not short:
            return KeywordHits([], "none")
        clause, params = where(scope, "m")
        return KeywordHits(
            _like_ranked(
                self.ex,
                "memories",
                "m",
                _MEMORY_TEXT,
                short,
                clause + source_sql,
                [*params, *source_params],
                limit,
            ),
            "like",
        )

    def episodes(self, terms: QueryTerms, scope: Scope, limit: int) -> KeywordHits:
        """The same over episode summary + keywords, every matching episode ranked (as SQLite: no budget);
        LIKE when no term has 3 characters."""
        if limit <= 0:
            return KeywordHits([], "none")
        if terms.match:
            query = PostingsQuery("episodes", TRIGRAM, scope)
            missing = [t for t in terms.match if t not in self._trigram_tokens]
            if missing:
                self._trigram_tokens.update(zip(missing, query.resolve(self.ex, missing, None), strict=True))
            resolved = [self._trigram_tokens[t] for t in terms.match]
            return KeywordHits(query.bm25(self.ex, dict(enumerate(resolved)), limit), "fts")
        if not terms.like:
            return KeywordHits([], "none")
        clause, params = where(scope, "e")
        return KeywordHits(
            _like_ranked(self.ex, "episodes", "e", _EPISODE_TEXT, terms.like, clause, params, limit), "like"
        )

    def memories_words(
        self,
        terms: QueryTerms,
        scope: Scope,
        limit: int,
        *,
        source_id: str | None = None,
        period: Period | None = None,
    ) -> KeywordHits:
        """Word-level search: any of the query's words (``terms.words``), stemmed, ranked by bm25."""
        words = tuple(w for w in terms.words if w.strip())
        if limit <= 0 or not words:
            return KeywordHits([], "none")
        source_sql, source_params = _row_clause(source_id, period, "m")
        query = PostingsQuery("memories", WORDS, scope, source_sql, source_params)
        return KeywordHits(self._budgeted(query, words, limit), "fts")

    def _budgeted(self, query: PostingsQuery, terms: tuple[str, ...], limit: int) -> list[tuple[int, float]]:
        """bm25 over the terms that fit the row budget, then the newest rows of dropped terms (as SQLite)."""
        resolved = query.resolve(self.ex, terms, ROW_BUDGET + 1)
        if query.kind == TRIGRAM:
            self._trigram_tokens.update(zip(terms, resolved, strict=True))
        plan: TermPlan = choose_terms(terms, [r.count for r in resolved], ROW_BUDGET)
        if plan.matches_nothing:
            return []
        position = {term: i for i, term in enumerate(terms)}

        def chosen(names: tuple[str, ...]) -> dict[int, Resolved]:
            return {position[t]: resolved[position[t]] for t in names}

        hits = query.bm25(self.ex, chosen(plan.kept), limit) if plan.kept else []
        if len(hits) >= limit or not plan.dropped:
            return hits
        wanted = chosen(plan.dropped) if plan.kept else chosen(plan.kept + plan.dropped)
        newest = query.newest(self.ex, wanted, chosen(plan.kept), max(ROW_BUDGET, limit))
        return filled(hits, newest, plan, limit)
