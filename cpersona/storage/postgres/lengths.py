"""Posted lengths per scope on PostgreSQL, kept by the postings' triggers: bm25's avgdl without reading rows.

FTS5's bm25 divides a row's length by the mean length of the table's rows (avgdl). Taking the mean
over the rows that match the query instead (what PostgreSQL did before migration 12) shifts every
score by how long the matching rows happen to be, so the two engines ranked the same rows a little
differently
(docs/research/recall-round-three/engines.md#sqlite-and-postgresql-rank-alike-postgresql-migration-12).
Scanning every posting in scope per recall would cost what the postings exist to avoid, so the sums are
kept as rows are posted.

``memory_lengths`` / ``episode_lengths`` hold signed deltas per (agent, project, channel): the rows
posted, the sum of their trigram lengths ``dl`` and of their word lengths ``dw`` (the same figures each
posting carries; migration 12 also made ``dw`` every token of the row, as FTS5 counts a row's words,
where it had been the distinct tokens). The statements that post rows (``postings._post``, the bulk drain) add
one delta per scope key, and the one that deletes postings subtracts what it deleted, so the sums
cover exactly the rows that have postings: a row queued by a bulk import (``memory_unposted``) counts
once drained, and a row without any token counts nowhere. They are folded, as the row counts are
(``counts.py``), by the row counts' settle function, which every insert or delete statement may run
for its scope keys.

avgdl of a scope = sum(dl) / sum(posted) over its keys, the mean over every posted row in scope, as
FTS5 takes it over its table.
"""

from __future__ import annotations

from typing import Any

from cpersona.storage.postgres.counts import COUNT_TABLES, fold_sql
from cpersona.storage.postgres.sql import where
from cpersona.storage.scope import Scope

LENGTH_TABLES = {"memories": "memory_lengths", "episodes": "episode_lengths"}

_TEMPLATE = """
CREATE TABLE {lengths} (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    agent_id TEXT NOT NULL,
    project_id TEXT NOT NULL,
    channel TEXT NOT NULL,
    posted BIGINT NOT NULL,
    dl BIGINT NOT NULL,
    dw BIGINT NOT NULL
);
CREATE INDEX {lengths}_scope ON {lengths}(agent_id, project_id, channel) INCLUDE (posted, dl, dw);
INSERT INTO {lengths}(agent_id, project_id, channel, posted, dl, dw)
    SELECT agent_id, project_id, channel, count(*), sum(dl), sum(dw)
    FROM (SELECT DISTINCT {rid}, agent_id, project_id, channel, dl, dw FROM {postings}) r
    GROUP BY agent_id, project_id, channel;
CREATE FUNCTION cpersona_settle_{lengths}(a TEXT, p TEXT, c TEXT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
{fold_lengths}
END $$;
CREATE OR REPLACE FUNCTION cpersona_settle_{counts}(a TEXT, p TEXT, c TEXT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
{fold_counts}
    PERFORM cpersona_settle_{lengths}(a, p, c);
END $$
"""


def lengths_tables_sql(postings: dict[str, tuple[str, str]]) -> str:
    """The DDL of the length tables, their backfill from ``postings`` (table -> (postings table, its id
    column)) and their settle functions, run by the row counts' settle function (part of migration 12)."""
    return ";\n".join(
        _TEMPLATE.format(
            lengths=lengths,
            counts=COUNT_TABLES[table],
            postings=postings[table][0],
            rid=postings[table][1],
            fold_lengths=fold_sql(lengths, ("posted", "dl", "dw")),
            fold_counts=fold_sql(COUNT_TABLES[table], ("rows",)),
        ).strip()
        for table, lengths in LENGTH_TABLES.items()
    )


def added_cte(table: str, rows: str) -> str:
    """A data-modifying CTE adding the lengths of the rows of CTE ``rows`` (agent_id, project_id, channel,
    dl, dw, tv: the posted tsvector) that hold at least one token, one delta per scope key."""
    return (
        f"l AS (INSERT INTO {LENGTH_TABLES[table]}(agent_id, project_id, channel, posted, dl, dw) "
        f"SELECT agent_id, project_id, channel, count(*), sum(dl), sum(dw) FROM {rows} "
        "WHERE length(tv) > 0 GROUP BY agent_id, project_id, channel)"
    )


def removed_sql(table: str, rid: str, gone: str) -> str:
    """The statement subtracting the lengths of the rows whose postings CTE ``gone`` deleted (its RETURNING
    gives rid, agent_id, project_id, channel, dl, dw of every posting)."""
    return (
        f"INSERT INTO {LENGTH_TABLES[table]}(agent_id, project_id, channel, posted, dl, dw) "
        "SELECT agent_id, project_id, channel, -count(*), -sum(dl), -sum(dw) "
        f"FROM (SELECT DISTINCT {rid}, agent_id, project_id, channel, dl, dw FROM {gone}) r "
        "GROUP BY agent_id, project_id, channel"
    )


def mean_length_in_scope(table: str, column: str, scope: Scope) -> tuple[str, list[Any]]:
    """A scalar SQL expression: the mean ``column`` ('dl' or 'dw') of the posted rows of ``table`` in
    ``scope`` (the same isolation rule as ``where``); NULL when none is posted."""
    clause, params = where(scope)
    return (
        f"(SELECT sum({column})::float8 / NULLIF(sum(posted), 0) FROM {LENGTH_TABLES[table]} WHERE {clause})",
        list(params),
    )
