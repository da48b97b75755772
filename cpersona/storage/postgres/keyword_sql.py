"""The keyword statements over the postings (``storage/postgres/postings.py``): index entries only.

Three statements serve a channel, each bounded by the row budget, none reading a row's text:

- ``resolve``: each query term's vocabulary tokens (a substring of the token for the
  trigram channel, the same stem for the word channel) with the term's occurrences in
  each token, and the term's postings in scope counted up to a cap;
- ``bm25``: FTS5's bm25 over the postings of the chosen terms (tf = occurrences in the
  token x the token's occurrences in the row; dl and N as docs/history/decisions-rounds.md#postgresql-engine says);
- ``newest``: the newest rows holding any of some terms, each with how many of the
  live terms it holds: per token, its newest postings (the index hands them back newest
  first), merged.

Terms travel between the statements as parallel arrays (term index, token, occurrences).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cpersona.storage.postgres.counts import rows_in_scope
from cpersona.storage.postgres.lengths import mean_length_in_scope
from cpersona.storage.postgres.postings import POSTED
from cpersona.storage.postgres.sql import Executor, where
from cpersona.storage.scope import Scope
from cpersona.storage.sql_text import like_pattern

K1, B, IDF_FLOOR = 1.2, 0.75, 1e-6  # FTS5's bm25 constants

TRIGRAM, WORDS = "trigram", "words"


def bm25_sql(tf: str, df: str, dl: str, avgdl: str, total: str) -> str:
    """One term's bm25 contribution as SQL (0 when the row does not hold the term)."""
    return (
        f"CASE WHEN {tf} > 0 THEN GREATEST(ln(({total} - {df} + 0.5) / ({df} + 0.5)), {IDF_FLOOR}) "
        f"* {tf} * {K1 + 1} / ({tf} + {K1} * ({1 - B} + {B} * {dl} / GREATEST({avgdl}, 1))) ELSE 0 END"
    )


@dataclass(frozen=True)
class Resolved:
    """One query term: its vocabulary tokens, the term's occurrences in each, its capped postings count."""

    tokens: tuple[str, ...]
    occurrences: tuple[int, ...]
    count: int


class PostingsQuery:
    """The statements of one channel (``kind`` trigram or words) over one table's postings, in one scope."""

    def __init__(
        self, table: str, kind: str, scope: Scope, source_sql: str = "", source_params: Sequence[Any] = ()
    ):
        postings, rid, _text, _columns = POSTED[table]
        self.table, self.kind, self.postings, self.rid = table, kind, postings, rid
        self.dl = "dl" if kind == TRIGRAM else "dw"  # trigram tokens (characters - 2), or every token
        clause, params = where(scope, "p")
        if source_sql:  # source.id lives in the row, not the postings: checked on the row (rare path)
            clause += f" AND EXISTS (SELECT 1 FROM {table} m WHERE m.id = p.{rid}{source_sql})"
            params = [*params, *source_params]
        self.scope_sql, self.scope_params = clause, list(params)
        self.total = rows_in_scope(table, scope)  # bm25's N (storage/postgres/counts.py)
        # bm25's avgdl: the mean length of every posted row in scope (storage/postgres/lengths.py)
        self.avgdl = mean_length_in_scope(table, self.dl, scope)

    # -- which tokens a term stands for ---------------------------------------------------------

    def _tokens_sql(self, terms: Sequence[str]) -> tuple[str, list[Any]]:
        if self.kind == TRIGRAM:
            # Occurrences of the (lower-case) term in a token: the length it loses when they are removed.
            return (
                "SELECT u.i, v.token, (length(v.token) - length(replace(v.token, u.t, ''))) / length(u.t) AS occ "
                "FROM (SELECT x.i, lower(x.term) AS t, lower(x.pattern) AS pattern "
                "FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS x(term, pattern, i)) u "
                "CROSS JOIN LATERAL (SELECT DISTINCT k.token FROM keyword_vocab k WHERE k.token LIKE u.pattern) v",
                [list(terms), [like_pattern(t) for t in terms]],
            )
        return (
            "SELECT u.i, v.token, 1 AS occ FROM unnest(%s::text[]) WITH ORDINALITY AS u(word, i) "
            "CROSS JOIN LATERAL (SELECT DISTINCT k.token FROM keyword_vocab k WHERE k.stem IN ("
            "SELECT s.lexeme FROM unnest(to_tsvector('cpersona_words'::regconfig, u.word)) s)) v",
            [list(terms)],
        )

    def resolve(self, ex: Executor, terms: Sequence[str], cap: int | None) -> list[Resolved]:
        """Each term's tokens and (when ``cap`` is set) its postings in scope, counted up to ``cap``."""
        tokens_sql, tokens_params = self._tokens_sql(terms)
        if cap is None:
            rows = ex.all(f"SELECT r.i, r.token, r.occ, 0 AS n FROM ({tokens_sql}) r", tokens_params)
        else:
            rows = ex.all(
                f"WITH r AS MATERIALIZED ({tokens_sql}), "
                "g AS (SELECT i, array_agg(token) AS tokens FROM r GROUP BY i), "
                f"c AS MATERIALIZED (SELECT g.i, (SELECT count(*) FROM (SELECT 1 FROM {self.postings} p "
                f"WHERE p.token = ANY(g.tokens) AND {self.scope_sql} LIMIT %s) x) AS n FROM g) "
                "SELECT r.i, r.token, r.occ, c.n FROM r JOIN c USING (i)",
                [*tokens_params, *self.scope_params, cap],
            )
        found: dict[int, tuple[list[str], list[int], int]] = {}
        for r in rows:
            tokens, occurrences, _ = found.setdefault(int(r["i"]) - 1, ([], [], int(r["n"])))
            tokens.append(str(r["token"]))
            occurrences.append(int(r["occ"]))
        return [
            Resolved(tuple(found[i][0]), tuple(found[i][1]), found[i][2])
            if i in found
            else Resolved((), (), 0)
            for i in range(len(terms))
        ]

    # -- ranking -----------------------------------------------------------------------------

    @staticmethod
    def _arrays(terms: dict[int, Resolved]) -> tuple[list[int], list[str], list[int]]:
        index = [i for i, r in terms.items() for _ in r.tokens]
        tokens = [t for r in terms.values() for t in r.tokens]
        occurrences = [o for r in terms.values() for o in r.occurrences]
        return index, tokens, occurrences

    def bm25(self, ex: Executor, terms: dict[int, Resolved], limit: int) -> list[tuple[int, float]]:
        """The rows holding any of ``terms``, ranked by bm25 summed over the terms (ties: newer first)."""
        index, tokens, occurrences = self._arrays(terms)
        if not tokens:
            return []
        score = bm25_sql("s.tf", "s.df", "s.dl", "a.avgdl", "n.total")
        rows = ex.all(
            "WITH k AS (SELECT * FROM unnest(%s::int[], %s::text[], %s::int[]) AS k(i, token, occ)), "
            f"h AS (SELECT k.i, p.{self.rid} AS id, SUM(k.occ * p.n)::float8 AS tf, MAX(p.{self.dl})::float8 AS dl "
            f"FROM k JOIN {self.postings} p ON p.token = k.token AND {self.scope_sql} GROUP BY k.i, p.{self.rid}), "
            "s AS (SELECT h.*, COUNT(*) OVER (PARTITION BY h.i) AS df FROM h), "
            f"a AS (SELECT {self.avgdl[0]} AS avgdl), "
            f"n AS (SELECT {self.total[0]} AS total) "
            f"SELECT s.id, SUM({score}) AS score FROM s, a, n GROUP BY s.id ORDER BY score DESC, s.id DESC LIMIT %s",
            [index, tokens, occurrences, *self.scope_params, *self.avgdl[1], *self.total[1], limit],
        )
        return [(int(r["id"]), float(r["score"])) for r in rows]

    def newest(
        self, ex: Executor, wanted: dict[int, Resolved], kept: dict[int, Resolved], cap: int
    ) -> list[tuple[int, float]]:
        """The ``cap`` newest rows holding any ``wanted`` term, each with how many of the wanted and kept
        terms it holds, most first (ties: newer first).

        A row among the ``cap`` newest of the union is among the ``cap`` newest of each of its tokens, so
        each token's newest ``cap`` postings are enough to find the rows and their wanted terms; the kept
        terms fit the budget, so all their postings are read. A term inside many tokens (a short word in a
        large vocabulary) would make that a cap per token, so a first pass takes a few of each token's
        newest postings: the ``cap``-th newest row among them is a floor no row of the answer lies below
        (the answer's ``cap``-th newest is at least as new), and the second pass reads each token's postings
        above it only.
        """
        w_index, w_tokens, _ = self._arrays(wanted)
        k_index, k_tokens, _ = self._arrays(kept)
        if not w_tokens:
            return []
        scope, params = self.scope_sql, self.scope_params
        seed = max(
            8, -(-2 * cap // len(w_tokens))
        )  # first-pass postings per token (ceil of 2 * cap / tokens)
        newest_of = (
            f"SELECT p.{self.rid} AS id FROM {self.postings} p WHERE p.token = w.token AND {scope} "
            f"{{floor}} ORDER BY p.{self.rid} DESC LIMIT %s"
        )
        # The answer's size is written into the statement, not bound: a recall's generic plan
        # (PgStore.recall_read) that guessed `LIMIT $n` at one row joined the answer to its terms by a nested
        # loop of cap x cap comparisons. It takes few values (the budget, or a larger limit).
        answer = int(cap)
        rows = ex.all(
            "WITH w AS (SELECT * FROM unnest(%s::int[], %s::text[]) AS w(i, token)), "
            f"seed AS MATERIALIZED (SELECT x.id FROM w CROSS JOIN LATERAL ({newest_of.format(floor='')}) x), "
            f"floor AS MATERIALIZED (SELECT CASE WHEN count(*) >= {answer} THEN min(id) ELSE 0 END AS id "
            f"FROM (SELECT DISTINCT id FROM seed ORDER BY id DESC LIMIT {answer}) t), "
            "got AS MATERIALIZED (SELECT w.i, x.id FROM w CROSS JOIN LATERAL ("
            f"{newest_of.format(floor=f'AND p.{self.rid} >= (SELECT id FROM floor)')}) x), "
            f"newest AS (SELECT DISTINCT id FROM got ORDER BY id DESC LIMIT {answer}), "
            "k AS (SELECT * FROM unnest(%s::int[], %s::text[]) AS k(i, token)), "
            f"kept AS (SELECT k.i, p.{self.rid} AS id FROM k JOIN {self.postings} p ON p.token = k.token AND {scope}), "
            "h AS (SELECT i, id FROM got UNION SELECT i, id FROM kept) "
            "SELECT n.id, COUNT(DISTINCT h.i) AS hits FROM newest n JOIN h USING (id) "
            "GROUP BY n.id ORDER BY hits DESC, n.id DESC",
            [w_index, w_tokens, *params, seed, *params, cap, k_index, k_tokens, *params],
        )
        return [(int(r["id"]), float(r["hits"])) for r in rows]
