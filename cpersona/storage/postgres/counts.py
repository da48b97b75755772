"""Rows per scope on PostgreSQL, kept by triggers as append-only deltas: bm25's N without counting rows.

bm25 needs N, the rows in the query's scope. Counting them per recall (an index-only
scan of the agent's rows) was the largest cost of a PostgreSQL recall: 15-25 ms per
channel at 10k rows, and a nested loop once repeated it per matching row (0.7 s).

``memory_counts`` / ``episode_counts`` hold signed deltas per (agent, project,
channel). Triggers append them in the writer's own transaction, so N is exactly
the row count the reader's snapshot sees:

- a statement-level trigger per INSERT / DELETE statement appends one row per
  scope key it touched (a COPY or a multi-row insert of 1,000 rows appends one);
- a row-level trigger appends -1 / +1 when an UPDATE moves a row to another
  agent, project or channel (merges, the channel-axis repair); its ``WHEN``
  clause keeps every other update (recall counters, vectors) free of it;
- TRUNCATE empties the counts.

Writers only ever insert delta rows, so they never wait on each other (one
counter row per agent would be a hot row every writer locks until commit). About
one delta in ``SETTLE_AT`` (a random draw) makes its writer fold the key's deltas into one row: ``FOR UPDATE
SKIP LOCKED`` takes only deltas no one else is folding, so two folders never wait
or deadlock and each delta is summed once. A reader sums about ``SETTLE_AT`` rows
per key of its scope. The sums are exact whatever is folded when: folding only
changes how many rows hold them.
"""

from __future__ import annotations

from typing import Any

from cpersona.storage.postgres.sql import where
from cpersona.storage.scope import Scope

#: Deltas a scope key may collect before the next writer folds them into one row.
SETTLE_AT = 64

COUNT_TABLES = {"memories": "memory_counts", "episodes": "episode_counts"}

_TEMPLATE = """
CREATE TABLE {counts} (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    agent_id TEXT NOT NULL,
    project_id TEXT NOT NULL,
    channel TEXT NOT NULL,
    rows BIGINT NOT NULL
);
CREATE INDEX {counts}_scope ON {counts}(agent_id, project_id, channel) INCLUDE (rows);
INSERT INTO {counts}(agent_id, project_id, channel, rows)
    SELECT agent_id, project_id, channel, count(*) FROM {table} GROUP BY agent_id, project_id, channel;
CREATE FUNCTION cpersona_settle_{counts}(a TEXT, p TEXT, c TEXT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
{fold}
END $$;
CREATE FUNCTION cpersona_{table}_added() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE k RECORD;
BEGIN
    FOR k IN SELECT agent_id, project_id, channel, count(*) AS n FROM added
            GROUP BY agent_id, project_id, channel LOOP
        INSERT INTO {counts}(agent_id, project_id, channel, rows) VALUES (k.agent_id, k.project_id, k.channel, k.n);
        IF random() < 1.0 / {settle_at} THEN
            PERFORM cpersona_settle_{counts}(k.agent_id, k.project_id, k.channel);
        END IF;
    END LOOP;
    RETURN NULL;
END $$;
CREATE FUNCTION cpersona_{table}_removed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE k RECORD;
BEGIN
    FOR k IN SELECT agent_id, project_id, channel, count(*) AS n FROM removed
            GROUP BY agent_id, project_id, channel LOOP
        INSERT INTO {counts}(agent_id, project_id, channel, rows) VALUES (k.agent_id, k.project_id, k.channel, -k.n);
        IF random() < 1.0 / {settle_at} THEN
            PERFORM cpersona_settle_{counts}(k.agent_id, k.project_id, k.channel);
        END IF;
    END LOOP;
    RETURN NULL;
END $$;
CREATE FUNCTION cpersona_{table}_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {counts}(agent_id, project_id, channel, rows)
        VALUES (OLD.agent_id, OLD.project_id, OLD.channel, -1), (NEW.agent_id, NEW.project_id, NEW.channel, 1);
    IF random() < 1.0 / {settle_at} THEN
        PERFORM cpersona_settle_{counts}(OLD.agent_id, OLD.project_id, OLD.channel);
        PERFORM cpersona_settle_{counts}(NEW.agent_id, NEW.project_id, NEW.channel);
    END IF;
    RETURN NULL;
END $$;
CREATE FUNCTION cpersona_{table}_emptied() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM {counts};
    RETURN NULL;
END $$;
CREATE TRIGGER {table}_added AFTER INSERT ON {table} REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION cpersona_{table}_added();
CREATE TRIGGER {table}_removed AFTER DELETE ON {table} REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION cpersona_{table}_removed();
CREATE TRIGGER {table}_moved AFTER UPDATE OF agent_id, project_id, channel ON {table} FOR EACH ROW
    WHEN (OLD.agent_id IS DISTINCT FROM NEW.agent_id OR OLD.project_id IS DISTINCT FROM NEW.project_id
        OR OLD.channel IS DISTINCT FROM NEW.channel)
    EXECUTE FUNCTION cpersona_{table}_moved();
CREATE TRIGGER {table}_emptied AFTER TRUNCATE ON {table} FOR EACH STATEMENT EXECUTE FUNCTION cpersona_{table}_emptied()
"""


_FOLD = """    IF (SELECT count(*) FROM (SELECT 1 FROM {deltas} k WHERE k.agent_id = a AND k.project_id = p
            AND k.channel = c LIMIT 2) x) > 1 THEN
        WITH folded AS (
            DELETE FROM {deltas} WHERE id IN (
                SELECT k.id FROM {deltas} k WHERE k.agent_id = a AND k.project_id = p AND k.channel = c
                FOR UPDATE SKIP LOCKED)
            RETURNING {columns})
        INSERT INTO {deltas}(agent_id, project_id, channel, {columns})
            SELECT a, p, c, {sums} FROM folded HAVING {nonzero};
    END IF;"""


def fold_sql(deltas: str, columns: tuple[str, ...]) -> str:
    """The body of a settle function (arguments a, p, c: one scope key): the key's delta rows of table
    ``deltas`` folded into one holding the sums of ``columns`` (none when every sum is 0), taking only
    rows no other writer is folding (``SKIP LOCKED``). The row counts' and the lengths' (``lengths.py``)."""
    return _FOLD.format(
        deltas=deltas,
        columns=", ".join(columns),
        sums=", ".join(f"sum({c})" for c in columns),
        nonzero=" OR ".join(f"sum({c}) <> 0" for c in columns),
    )


def counts_migration_sql() -> str:
    """The DDL of the count tables and their triggers, for memories and episodes (one migration)."""
    return ";\n".join(
        _TEMPLATE.format(
            table=table, counts=counts, settle_at=SETTLE_AT, fold=fold_sql(counts, ("rows",))
        ).strip()
        for table, counts in COUNT_TABLES.items()
    )


def rows_in_scope(table: str, scope: Scope) -> tuple[str, list[Any]]:
    """A scalar SQL expression: the rows of ``table`` in ``scope`` (the same isolation rule as ``where``)."""
    clause, params = where(scope)
    return f"(SELECT COALESCE(sum(rows), 0)::float8 FROM {COUNT_TABLES[table]} WHERE {clause})", list(params)
