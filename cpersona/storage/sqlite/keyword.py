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
from collections.abc import Sequence

from cpersona.storage.keyword_budget import ROW_BUDGET, TermPlan, choose_terms, filled
from cpersona.storage.scope import Scope
from cpersona.storage.sql_text import like_pattern
from cpersona.storage.sqlite.sql import SQLITE
from cpersona.storage.sqlite.term_counts import TermCounts
from cpersona.storage.sqlite.term_scores import Shares, TermScores, ranked
from cpersona.storage.values import KeywordHits, Period, QueryTerms


def phrase(term: str) -> str:
    """``term`` as one double-quoted FTS5 phrase (quotes doubled), so no query text is syntax."""
    return '"' + term.replace('"', '""') + '"'


def or_expression(terms: Sequence[str]) -> str:
    """Each term a quoted phrase, OR'ed: any term may match."""
    return " OR ".join(phrase(term) for term in terms)


def capped_counts(
    conn: sqlite3.Connection, table: str, terms: Sequence[str], cap: int, kept: TermCounts | None = None
) -> list[int]:
    """Rows of FTS5 ``table`` matching each term, counted up to ``cap`` (the scan stops there); from
    ``kept`` where it holds the count for this snapshot's index (``storage/sqlite/term_counts.py``)."""
    sql = f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT ?)"

    def count(term: str) -> int:
        return int(conn.execute(sql, [phrase(term), cap]).fetchone()[0])

    if kept is None:
        return [count(term) for term in terms]
    return kept.counts(conn, table, terms, cap, count)


def plan_terms(
    conn: sqlite3.Connection,
    table: str,
    terms: Sequence[str],
    budget: int = ROW_BUDGET,
    kept: TermCounts | None = None,
) -> TermPlan:
    """The terms worth matching in ``table`` within ``budget`` rows (query order kept among them)."""
    return choose_terms(terms, capped_counts(conn, table, terms, budget + 1, kept), budget)


def match_expression(terms: QueryTerms) -> str | None:
    """The FTS5 MATCH string, or None when no term is long enough for trigrams."""
    return or_expression(terms.match) if terms.match else None


def words_expression(terms: QueryTerms) -> str | None:
    """The MATCH string for the word index: each word a quoted phrase, OR'ed (any word may match)."""
    return or_expression(terms.words) if terms.words else None


def _source_clause(source_id: str | None, alias: str) -> tuple[str, list[object]]:
    if source_id is None:
        return "", []
    return f" AND substr(COALESCE(json_extract({alias}.source, '$.id'), ''), 1, ?) = ?", [
        len(source_id),
        source_id,
    ]


def _row_clause(source_id: str | None, period: Period | None, alias: str) -> tuple[str, list[object]]:
    """The per-row filters of a memories channel: ``source_id`` and a ``sure`` cue's period (stored
    timestamps compare as text), applied in the statement before its row budget and LIMIT."""
    sql, params = _source_clause(source_id, alias)
    for op, bound in zip((">=", "<"), period or (None, None), strict=True):
        if bound is not None:
            sql += f" AND {alias}.timestamp {op} ?"
            params.append(bound)
    return sql, params


class SqliteKeywordSearch:
    """``KeywordSearch`` over one SQLite connection."""

    __slots__ = ("conn", "row_budget", "term_counts", "term_scores")

    def __init__(
        self,
        conn: sqlite3.Connection,
        row_budget: int = ROW_BUDGET,
        term_counts: TermCounts | None = None,
        term_scores: TermScores | None = None,
    ) -> None:
        self.conn = conn
        self.row_budget = row_budget  # rows one channel may rank by bm25 (storage/keyword_budget.py)
        # The store's counts kept between read snapshots; None (write sessions): count every time.
        self.term_counts = term_counts
        # The store's per-term bm25 shares kept between read snapshots (term_scores.py); None: rank in SQL.
        self.term_scores = term_scores

    def memories(
        self,
        terms: QueryTerms,
        scope: Scope,
        limit: int,
        *,
        source_id: str | None = None,
        period: Period | None = None,
    ) -> KeywordHits:
        """FTS5 trigram MATCH ranked by bm25 (rarest terms within the row budget); the LIKE pass when
        MATCH cannot run or finds nothing."""
        if limit <= 0:
            return KeywordHits([], "none")
        where, params = scope.where(SQLITE, "m")
        source_sql, source_params = _row_clause(source_id, period, "m")
        if terms.match:
            hits = self._budgeted("memories_fts", terms.match, scope, limit, source_id, period)
            if hits:
                return KeywordHits(hits, "fts")
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
        self,
        terms: QueryTerms,
        scope: Scope,
        limit: int,
        *,
        source_id: str | None = None,
        period: Period | None = None,
    ) -> KeywordHits:
        """FTS5 word-level MATCH (porter stems) ranked by bm25 within the row budget; no LIKE stand-in
        (the trigram channel has it)."""
        if limit <= 0 or not terms.words:
            return KeywordHits([], "none")
        hits = self._budgeted("memories_words", terms.words, scope, limit, source_id, period)
        return KeywordHits(hits, "fts")

    def _budgeted(
        self,
        table: str,
        terms: tuple[str, ...],
        scope: Scope,
        limit: int,
        source_id: str | None,
        period: Period | None = None,
    ) -> list[tuple[int, float]]:
        """Rows of FTS5 ``table`` for ``terms``: bm25 over the terms that fit the row budget, then (when
        that leaves the list short and some terms were dropped) the newest rows matching a dropped term,
        scored 0 on the kept terms they lack. With no term within budget, the newest matches of any
        term, scored by how many terms they contain."""
        plan = plan_terms(self.conn, table, terms, self.row_budget, self.term_counts)
        if plan.matches_nothing:
            return []
        where, params = scope.where(SQLITE, "m")
        source_sql, source_params = _row_clause(source_id, period, "m")
        hits: list[tuple[int, float]] = []
        if plan.kept:
            # The kept shares rank a scope's rows; a row filter ranks in SQL (its own rows only).
            plain = source_id is None and period is None
            kept = self._kept_shares(table, plan.kept, where, params, limit) if plain else None
            if kept is not None:
                hits = kept
            else:
                rows = self.conn.execute(
                    f"SELECT m.id, bm25({table}) AS rank FROM {table} "
                    f"JOIN memories m ON m.id = {table}.rowid "
                    f"WHERE {table} MATCH ? AND {where}{source_sql} ORDER BY rank, m.id DESC LIMIT ?",
                    [or_expression(plan.kept), *params, *source_params, limit],
                ).fetchall()
                hits = [(int(r[0]), -float(r[1])) for r in rows]
        if len(hits) >= limit or not plan.dropped:
            return hits
        # Rows that hold only dropped terms: the newest within budget, most query terms first.
        live = plan.kept + plan.dropped
        patterns = [like_pattern(t) for t in live]
        hits_sql = " + ".join("(c.content LIKE ? ESCAPE '\\')" for _ in live)
        rows = self.conn.execute(
            f"SELECT c.id, ({hits_sql}) AS hits FROM ("
            f"SELECT m.id AS id, m.content AS content FROM {table} JOIN memories m ON m.id = {table}.rowid "
            f"WHERE {table} MATCH ? AND {where}{source_sql} ORDER BY {table}.rowid DESC LIMIT ?"
            ") c ORDER BY hits DESC, c.id DESC",
            [
                *patterns,
                or_expression(plan.dropped if plan.kept else live),
                *params,
                *source_params,
                max(self.row_budget, limit),
            ],
        ).fetchall()
        return filled(hits, [(int(r[0]), float(r[1])) for r in rows], plan, limit)

    def _kept_shares(
        self, table: str, kept: tuple[str, ...], where: str, params: list[str], limit: int
    ) -> list[tuple[int, float]] | None:
        """The bm25 ranking of ``kept`` from each term's kept shares (``term_scores.py``: the same
        hits as the OR query, bit for bit), reading the shares of terms not yet kept; None when no
        shares are kept here (a write session) or the index has no structure record yet."""
        if self.term_scores is None:
            return None
        # CROSS JOIN keeps the FTS5 table outside: without an ORDER BY the planner would walk the
        # scope index over every row of the agent and probe MATCH per row (seconds at 10k).
        sql = (
            f"SELECT m.id, bm25({table}) FROM {table} CROSS JOIN memories m ON m.id = {table}.rowid "
            f"WHERE {table} MATCH ? AND {where}"
        )

        def read(term: str) -> Shares:
            return Shares((int(r[0]), -float(r[1])) for r in self.conn.execute(sql, [phrase(term), *params]))

        shares = self.term_scores.shares(self.conn, table, (where, tuple(params)), kept, read)
        return None if shares is None else ranked(shares, limit)

    def episodes(self, terms: QueryTerms, scope: Scope, limit: int) -> KeywordHits:
        """FTS5 over episode summary + keywords (LIKE over both when no term has 3 characters)."""
        if limit <= 0:
            return KeywordHits([], "none")
        where, params = scope.where(SQLITE, "e")
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
