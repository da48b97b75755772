"""``HealthQueries`` on PostgreSQL: the same questions and result shapes as the SQLite engine's.

Row-level queries mirror ``cpersona.storage.sqlite.health`` / ``deep_queries`` in
PostgreSQL SQL. Where the SQLite check reads the file itself, this answers with the
PostgreSQL equivalent when one is cheap and real: schema objects from ``pg_catalog``
(indexes the migrations create, the ``vector`` / ``pg_trgm`` extensions), structure
through ``amcheck`` when that extension is installed, sizes from ``pg_class``. The rest
(an FTS5 shadow table, a page free list, a WAL file) is ``NotApplicable`` with the reason.
"""

from __future__ import annotations

import re
from typing import Any

import psycopg

from cpersona.storage.health_reads import HealthReads
from cpersona.storage.maintenance_interface import (
    ROW_TABLES,
    NotApplicable,
    SchemaObject,
    VectorReport,
)
from cpersona.storage.postgres.migrations import (
    _EXTENSIONS,
    LATEST_VERSION,
    current_version,
    migration_statements,
)
from cpersona.storage.postgres.sql import POSTGRES, Executor

#: CPersona's tables (sizes, amcheck).
TABLES = ("memories", "episodes", "profiles", "pending_memory_tasks", "schema_version")
#: ``IS JSON OBJECT`` (SQL/JSON predicates) arrived in PostgreSQL 16.
JSON_PREDICATE_VERSION = 160000
#: The stored timestamp form (``format_ts``): 2026-01-31T09:30:00.000000Z.
_TS_PATTERN = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[.][0-9]{6}Z$"
_CREATE_INDEX = re.compile(r"^CREATE\s+(UNIQUE\s+)?INDEX\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", re.IGNORECASE)
_DROP_INDEX = re.compile(r"^DROP\s+INDEX\s+(?:IF\s+EXISTS\s+)?(\w+)", re.IGNORECASE)
_CREATE_TRIGGER = re.compile(r"^CREATE\s+TRIGGER\s+(\w+)", re.IGNORECASE)
_NO_FTS = NotApplicable(
    "keyword search reads postings that triggers keep in step with the rows inside each writer's transaction "
    "(no FTS5 shadow tables to drift); the schema check verifies their indexes and triggers exist"
)
_NO_AMCHECK = NotApplicable(
    "PostgreSQL has no integrity_check pragma; with the amcheck extension installed (CREATE EXTENSION amcheck, "
    "as a superuser) this check verifies every CPersona B-tree index with bt_index_check"
)
_NO_JSON_PREDICATE = NotApplicable(
    "needs PostgreSQL 16 or newer (the IS JSON predicate); this server is older"
)


def _scope(agent: str | None, alias: str = "") -> tuple[str, list[Any]]:
    column = f"{alias}.agent_id" if alias else "agent_id"
    return (f" AND {column} = %s", [agent]) if agent is not None else ("", [])


def _needs_vector_sql(model_id: str | None) -> str:
    # vector_dims reads the stored header: a vector whose length disagrees with embedding_dim is unusable.
    if model_id:
        return (
            "(t.embedding IS NULL OR t.embedding_model IS DISTINCT FROM %s OR t.embedding_dim IS DISTINCT FROM %s "
            "OR vector_dims(t.embedding) IS DISTINCT FROM t.embedding_dim)"
        )
    return "(t.embedding IS NULL)"


class PgHealth(HealthReads):
    """``HealthQueries`` over one ``Executor`` (read-only statements only; the shared ones in ``HealthReads``)."""

    __slots__ = ("ex",)

    def __init__(self, ex: Executor) -> None:
        super().__init__(ex.all, POSTGRES)
        self.ex = ex

    def _json_predicate(self) -> bool:
        return (
            int(self.ex.value("SELECT current_setting('server_version_num')::int")) >= JSON_PREDICATE_VERSION
        )

    # -- the store itself ------------------------------------------------------------------------

    def integrity_errors(self, limit: int = 20) -> list[str] | NotApplicable:
        """``bt_index_check`` of every B-tree index on CPersona's tables (amcheck), or NotApplicable."""
        if self.ex.value("SELECT 1 FROM pg_extension WHERE extname = 'amcheck'") is None:
            return _NO_AMCHECK
        indexes = self.ex.all(
            "SELECT i.indexrelid::regclass::text AS name FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid "
            "JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_am am ON am.oid = ic.relam "
            "WHERE c.relname = ANY(%s) AND c.relnamespace = current_schema()::regnamespace AND am.amname = 'btree' "
            "ORDER BY 1",
            (list(TABLES),),
        )
        errors: list[str] = []
        for row in indexes:
            try:
                with self.ex.savepoint():
                    self.ex.value("SELECT bt_index_check(%s::regclass)", (row["name"],))
            except psycopg.Error as exc:
                errors.append(f"{row['name']}: {str(exc).strip()}")
            if len(errors) >= limit:
                break
        return errors

    def schema_version(self) -> int:
        """The schema version recorded in the database."""
        conn = self.ex.conn
        if conn is not None:
            return current_version(conn)
        with self.ex.pool.connection() as pooled:
            return current_version(pooled)

    def latest_version(self) -> int:
        """The newest PostgreSQL schema version."""
        return LATEST_VERSION

    def expected_objects(self) -> list[SchemaObject]:
        """The extensions, then every index and trigger the migrations' SQL creates (a later DROP removes one)."""
        objects: dict[str, SchemaObject] = {
            name: SchemaObject("extension", name, False, f"CREATE EXTENSION IF NOT EXISTS {name}")
            for name in _EXTENSIONS
        }
        for statement in migration_statements():
            created = _CREATE_INDEX.match(statement)
            if created:
                objects[created.group(2)] = SchemaObject(
                    "index", created.group(2), bool(created.group(1)), statement
                )
            dropped = _DROP_INDEX.match(statement)
            if dropped:
                objects.pop(dropped.group(1), None)
            trigger = _CREATE_TRIGGER.match(statement)
            if trigger:  # the keyword postings and row counts (PG migration 4)
                objects[trigger.group(1)] = SchemaObject("trigger", trigger.group(1), False, statement)
        return list(objects.values())

    def present_objects(self) -> set[tuple[str, str]]:
        """(kind, name) of every index and trigger in the current schema and every installed extension."""
        rows = self.ex.all(
            "SELECT 'index' AS kind, indexname AS name FROM pg_indexes WHERE schemaname = current_schema() "
            "UNION ALL SELECT 'extension', extname FROM pg_extension "
            "UNION ALL SELECT 'trigger', t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
            "WHERE NOT t.tgisinternal AND c.relnamespace = current_schema()::regnamespace"
        )
        return {(str(r["kind"]), str(r["name"])) for r in rows}

    def keyword_reports(self, agent: str | None, sample: int) -> NotApplicable:
        """Not applicable: PostgreSQL maintains the keyword indexes itself."""
        return _NO_FTS

    def storage_facts(self) -> dict[str, Any]:
        """Block size, pages and bytes of CPersona's tables (with indexes and TOAST); no free list, no WAL file."""
        row = self.ex.one(
            "SELECT current_setting('block_size')::int AS page_size, "
            "COALESCE(SUM(pg_total_relation_size(c.oid)), 0)::bigint AS bytes FROM pg_class c "
            "WHERE c.relname = ANY(%s) AND c.relkind = 'r' AND c.relnamespace = current_schema()::regnamespace",
            (list(TABLES),),
        )
        assert row is not None
        page_size, size = int(row["page_size"]), int(row["bytes"])
        return {
            "page_size": page_size,
            "page_count": size // page_size,
            "freelist_count": None,
            "db_bytes": size,
            "wal_bytes": None,
            "not_applicable": {
                "freelist_count": "SQLite-file figure; PostgreSQL reuses space after VACUUM (see pg_stat_user_tables)",
                "wal_bytes": "SQLite-file figure; PostgreSQL's WAL belongs to the whole server (pg_wal)",
            },
        }

    # -- vectors ---------------------------------------------------------------------------------

    def vector_report(
        self, table: str, agent: str | None, model_id: str | None, dimension: int | None
    ) -> VectorReport:
        """Counts of rows needing a (new) vector; with no active model only missing vectors count."""
        params: list[Any] = [model_id, dimension] if model_id else []
        where, scope = _scope(agent, "t")
        row = self.ex.one(
            "SELECT COUNT(*) FILTER (WHERE t.embedding IS NULL) AS missing, "
            "COUNT(*) FILTER (WHERE t.embedding IS NOT NULL) AS other, "
            "COUNT(*) FILTER (WHERE EXISTS (SELECT 1 FROM pending_memory_tasks p WHERE p.kind = 'embed' "
            f"AND p.target_table = %s AND p.target_id = t.id)) AS queued FROM {table} t "
            f"WHERE {_needs_vector_sql(model_id)}{where}",
            [table, *params, *scope],
        )
        assert row is not None
        return VectorReport(table, int(row["missing"]), int(row["other"]), int(row["queued"]))

    def unqueued_vector_rows(
        self, table: str, agent: str | None, model_id: str | None, dimension: int | None, limit: int
    ) -> list[int]:
        """Ids (oldest first) needing a vector that have no embedding task yet."""
        params: list[Any] = [model_id, dimension] if model_id else []
        where, scope = _scope(agent, "t")
        rows = self.ex.all(
            f"SELECT t.id FROM {table} t WHERE {_needs_vector_sql(model_id)}{where} AND NOT EXISTS (SELECT 1 FROM "
            "pending_memory_tasks p WHERE p.kind = 'embed' AND p.target_table = %s AND p.target_id = t.id) "
            "ORDER BY t.id LIMIT %s",
            [*params, *scope, table, limit],
        )
        return [int(r["id"]) for r in rows]

    def vector_shapes(self, agent: str | None) -> list[dict[str, Any]]:
        """Stored vectors grouped by table, model and dimension, with vectors whose length disagrees."""
        where, params = _scope(agent)
        shapes = []
        for table in ROW_TABLES:
            for r in self.ex.all(
                "SELECT embedding_model AS model, embedding_dim AS dimension, COUNT(*) AS n, "
                "COUNT(*) FILTER (WHERE vector_dims(embedding) IS DISTINCT FROM embedding_dim) AS bad "
                f"FROM {table} WHERE embedding IS NOT NULL{where} GROUP BY embedding_model, embedding_dim "
                'ORDER BY embedding_model COLLATE "C" NULLS FIRST, embedding_dim NULLS FIRST',
                params,
            ):
                shapes.append(
                    {
                        "table": table,
                        "model": r["model"],
                        "dimension": r["dimension"],
                        "rows": int(r["n"]),
                        "bad_length": int(r["bad"]),
                    }
                )
        return shapes

    # -- rows ------------------------------------------------------------------------------------

    def duplicate_groups(self, agent: str | None, limit: int) -> tuple[int, list[list[tuple[int, bool]]]]:
        """Memories sharing (agent, project, channel, content) or (agent, project, msg_id), oldest first."""
        where, params = _scope(agent)
        groups: list[list[tuple[int, bool]]] = []
        total = 0
        for key in ("project_id, channel, content", "project_id, msg_id"):
            extra = " AND msg_id <> ''" if "msg_id" in key else ""
            for r in self.ex.all(
                "SELECT array_agg(id ORDER BY id) AS ids, array_agg(locked ORDER BY id) AS locks FROM memories "
                f"WHERE TRUE{where}{extra} GROUP BY agent_id, {key} HAVING COUNT(*) > 1 ORDER BY MIN(id)",
                params,
            ):
                total += 1
                if len(groups) < limit:
                    groups.append([(int(i), bool(lk)) for i, lk in zip(r["ids"], r["locks"], strict=True)])
        return total, groups

    def oversized_profiles(
        self, agent: str | None, cap: int, limit: int
    ) -> tuple[int, list[tuple[str, str, str, int]]]:
        """Profiles longer than ``cap`` characters: (count, [(agent, project, user, length)])."""
        where, params = _scope(agent)
        count = int(
            self.ex.value(f"SELECT COUNT(*) FROM profiles WHERE length(content) > %s{where}", [cap, *params])
        )
        rows = self.ex.all(
            f"SELECT agent_id, project_id, user_id, length(content) AS n FROM profiles WHERE length(content) > %s"
            f"{where} ORDER BY agent_id, project_id, user_id LIMIT %s",
            [cap, *params, limit],
        )
        return count, [
            (str(r["agent_id"]), str(r["project_id"]), str(r["user_id"]), int(r["n"])) for r in rows
        ]

    def empty_rows(self, agent: str | None, limit: int) -> tuple[int, list[str]]:
        """Memories and episodes whose text is empty or only whitespace: (count, refs)."""
        where, params = _scope(agent)
        count, refs = 0, []
        for table, col, prefix in (("memories", "content", "mem"), ("episodes", "summary", "ep")):
            cond = f"btrim({col}, ' ' || chr(9) || chr(10) || chr(13)) = ''"
            count += int(self.ex.value(f"SELECT COUNT(*) FROM {table} WHERE {cond}{where}", params))
            refs += [
                f"{prefix}:{r['id']}"
                for r in self.ex.all(
                    f"SELECT id FROM {table} WHERE {cond}{where} ORDER BY id LIMIT %s", [*params, limit]
                )
            ]
        return count, refs[:limit]

    def invalid_json_rows(
        self, agent: str | None, limit: int
    ) -> tuple[int, list[tuple[int, str, str, bool]]] | NotApplicable:
        """Memories whose source or metadata is not a JSON object (``IS NOT JSON OBJECT``, PostgreSQL 16+)."""
        if not self._json_predicate():
            return _NO_JSON_PREDICATE
        where, params = _scope(agent)
        found: list[tuple[int, str, str, bool]] = []
        count = 0
        for column in ("source", "metadata"):
            cond = f"{column} IS NOT NULL AND {column} IS NOT JSON OBJECT"
            count += int(self.ex.value(f"SELECT COUNT(*) FROM memories WHERE {cond}{where}", params))
            for r in self.ex.all(
                f"SELECT id, {column} AS raw, locked FROM memories WHERE {cond}{where} ORDER BY locked, id LIMIT %s",
                [*params, limit],
            ):
                found.append((int(r["id"]), column, str(r["raw"]), bool(r["locked"])))
        return count, found

    def _not_a_timestamp(self, column: str) -> tuple[str, list[Any]]:
        return f"{column} !~ %s", [_TS_PATTERN]

    # -- statistics ------------------------------------------------------------------------------

    def distributions(self, agent: str | None, limit: int = 50) -> dict[str, Any]:
        """Rows per agent (memories, episodes, profiles) and memories per project and per channel."""
        where, params = _scope(agent)
        per_agent: dict[str, dict[str, int]] = {}
        for table in ("memories", "episodes", "profiles"):
            for r in self.ex.all(
                f"SELECT agent_id, COUNT(*) AS n FROM {table} WHERE TRUE{where} GROUP BY agent_id "
                "ORDER BY COUNT(*) DESC, agent_id LIMIT %s",
                [*params, limit],
            ):
                per_agent.setdefault(str(r["agent_id"]), {"memories": 0, "episodes": 0, "profiles": 0})[
                    table
                ] = int(r["n"])
        out: dict[str, Any] = {"rows_per_agent": per_agent}
        for axis in ("project_id", "channel"):
            out[f"memories_per_{axis.removesuffix('_id')}"] = [
                {"agent_id": r["agent_id"], axis: r["axis"], "memories": int(r["n"])}
                for r in self.ex.all(
                    f"SELECT agent_id, {axis} AS axis, COUNT(*) AS n FROM memories WHERE TRUE{where} "
                    f"GROUP BY agent_id, {axis} ORDER BY COUNT(*) DESC, agent_id, {axis} LIMIT %s",
                    [*params, limit],
                )
            ]
        return out

    # -- deep_check ------------------------------------------------------------------------------

    def anonymous_sources(self, agent: str, limit: int) -> tuple[int, list[int]] | NotApplicable:
        """Memories with no source, or a source carrying neither an id nor a name (PostgreSQL 16+)."""
        if not self._json_predicate():
            return _NO_JSON_PREDICATE
        # CASE, not OR: the cast to jsonb must only ever see text that is a JSON object.
        cond = (
            "agent_id = %s AND CASE WHEN source IS JSON OBJECT THEN COALESCE(source::jsonb ->> 'id', '') = '' "
            "AND COALESCE(source::jsonb ->> 'name', '') = '' ELSE TRUE END"
        )
        count = int(self.ex.value(f"SELECT COUNT(*) FROM memories WHERE {cond}", (agent,)))
        rows = self.ex.all(f"SELECT id FROM memories WHERE {cond} ORDER BY id DESC LIMIT %s", (agent, limit))
        return count, [int(r["id"]) for r in rows]

    def short_memories(self, agent: str, min_chars: int, limit: int) -> tuple[int, list[int]]:
        """Memories whose trimmed text is shorter than ``min_chars`` characters."""
        cond = "agent_id = %s AND length(btrim(content)) < %s"
        count = int(self.ex.value(f"SELECT COUNT(*) FROM memories WHERE {cond}", (agent, min_chars)))
        rows = self.ex.all(
            f"SELECT id FROM memories WHERE {cond} ORDER BY id DESC LIMIT %s", (agent, min_chars, limit)
        )
        return count, [int(r["id"]) for r in rows]

    def profiles_with_newer_memories(self, agent: str) -> list[dict[str, Any]]:
        """Each profile of the agent with how many memories of its project arrived after its last update."""
        rows = self.ex.all(
            "SELECT p.project_id, p.user_id, p.updated_at, (SELECT COUNT(*) FROM memories m WHERE m.agent_id = "
            "p.agent_id AND m.project_id = p.project_id AND m.created_at > p.updated_at) AS newer FROM profiles p "
            "WHERE p.agent_id = %s",
            (agent,),
        )
        return [
            {
                "project_id": r["project_id"],
                "user_id": r["user_id"],
                "updated_at": r["updated_at"],
                "newer_memories": int(r["newer"]),
            }
            for r in rows
        ]

    def orphaned_episodes(self, agent: str, limit: int) -> tuple[int, list[int]]:
        """Episodes with no memory of the same (agent, project, channel) in their time range."""
        cond = (
            "e.agent_id = %s AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.agent_id = e.agent_id "
            "AND m.project_id = e.project_id AND m.channel = e.channel AND ("
            "CASE WHEN e.start_time IS NOT NULL AND e.end_time IS NOT NULL "
            "THEN m.timestamp BETWEEN e.start_time AND e.end_time ELSE m.created_at <= e.created_at END))"
        )
        count = int(self.ex.value(f"SELECT COUNT(*) FROM episodes e WHERE {cond}", (agent,)))
        rows = self.ex.all(
            f"SELECT e.id FROM episodes e WHERE {cond} ORDER BY e.id DESC LIMIT %s", (agent, limit)
        )
        return count, [int(r["id"]) for r in rows]

    def recent_vectors(
        self, agent: str, model_id: str, dimension: int, limit: int
    ) -> list[tuple[int, bytes]]:
        """The agent's ``limit`` newest memory vectors of the active model: [(id, float32 bytes)]."""
        rows = self.ex.all_binary(
            "SELECT id, embedding FROM memories WHERE agent_id = %s AND embedding_model = %s AND embedding_dim = %s "
            "AND vector_dims(embedding) = %s ORDER BY id DESC LIMIT %s",
            (agent, model_id, dimension, dimension, limit),
        )
        return [(int(r["id"]), bytes(r["embedding"])) for r in rows]
