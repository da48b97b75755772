"""Read-only queries behind ``check_health`` and ``deep_check`` (the verdicts live in cpersona/health/).

Every function here only reads, so a report-only run works on a connection
opened with ``mode=ro``. ``agent`` scopes row-level queries to one agent; None
means the whole file. Queries that could return many rows take a ``limit``
and return counts separately, so a 1M-row corpus never builds a 1M-item list.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cpersona.storage.maintenance_interface import ROW_TABLES, FtsReport, SchemaObject, VectorReport
from cpersona.storage.sqlite.migrations import SCHEMA_SCRIPTS, _split_statements, current_version

__all__ = ["ROW_TABLES", "FtsReport", "SchemaObject", "VectorReport"]  # the shared value types, as before


@dataclass(frozen=True)
class FtsIndex:
    """An FTS5 index kept in step with a row table by triggers."""

    name: str
    table: str
    columns: tuple[str, ...]
    tokenizer: str  # "trigram" | "words"


#: Every FTS5 index, in check order.
FTS_INDEXES = (
    FtsIndex("memories_fts", "memories", ("content",), "trigram"),
    FtsIndex("memories_words", "memories", ("content",), "words"),
    FtsIndex("episodes_fts", "episodes", ("summary", "keywords"), "trigram"),
)
FTS_BY_NAME = {index.name: index for index in FTS_INDEXES}
#: Timestamp columns written by ``format_ts`` (nullable ones may be NULL).
# The fixed-width form format_ts writes: 2026-01-31T09:30:00.000000Z.
TS_GLOB = "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z"
_CREATE = re.compile(r"^CREATE\s+(UNIQUE\s+)?(INDEX|TRIGGER)\s+(\w+)", re.IGNORECASE)
_DROP = re.compile(r"^DROP\s+(INDEX|TRIGGER)\s+(?:IF\s+EXISTS\s+)?(\w+)", re.IGNORECASE)


def _scope(agent: str | None, alias: str = "") -> tuple[str, list[Any]]:
    column = f"{alias}.agent_id" if alias else "agent_id"
    return (f" AND {column} = ?", [agent]) if agent is not None else ("", [])


# -- file level ---------------------------------------------------------------------------


def integrity_errors(conn: sqlite3.Connection, limit: int = 20) -> list[str]:
    """``PRAGMA integrity_check`` messages; empty when the file is sound."""
    rows = [str(r[0]) for r in conn.execute(f"PRAGMA integrity_check({int(limit)})").fetchall()]
    return [] if rows == ["ok"] else rows


def schema_version(conn: sqlite3.Connection) -> int:
    """The schema version recorded in the file (0 when never migrated)."""
    return current_version(conn)


def expected_objects() -> list[SchemaObject]:
    """Every index and trigger the migrations' DDL creates (taken from that DDL, not restated)."""
    objects: dict[str, SchemaObject] = {}
    for script in SCHEMA_SCRIPTS:  # a later migration's definition replaces an earlier one
        for statement in _split_statements(script):
            match = _CREATE.match(statement)
            if match:
                obj = SchemaObject(match.group(2).lower(), match.group(3), bool(match.group(1)), statement)
                objects[obj.name] = obj
            dropped = _DROP.match(statement)
            if dropped:
                objects.pop(dropped.group(2), None)
    return list(objects.values())


def present_objects(conn: sqlite3.Connection) -> set[tuple[str, str]]:
    """(type, name) of every index and trigger in the file."""
    return {
        (str(r[0]), str(r[1]))
        for r in conn.execute("SELECT type, name FROM sqlite_master WHERE type IN ('index', 'trigger')")
    }


def file_pages(conn: sqlite3.Connection) -> dict[str, int]:
    """Page size, page count and free pages (what VACUUM would give back)."""
    return {
        "page_size": int(conn.execute("PRAGMA page_size").fetchone()[0]),
        "page_count": int(conn.execute("PRAGMA page_count").fetchone()[0]),
        "freelist_count": int(conn.execute("PRAGMA freelist_count").fetchone()[0]),
    }


def storage_facts(conn: sqlite3.Connection) -> dict[str, Any]:
    """Page figures plus the sizes of the database file and its WAL."""
    facts: dict[str, Any] = dict(file_pages(conn))
    row = conn.execute("PRAGMA database_list").fetchone()
    path = Path(str(row[2])) if row is not None and row[2] else None

    def size(p: Path | None) -> int:
        return p.stat().st_size if p is not None and p.is_file() else 0

    facts["db_bytes"] = size(path)
    facts["wal_bytes"] = size(path.with_name(path.name + "-wal") if path is not None else None)
    return facts


# -- FTS consistency --------------------------------------------------------------------------


def _varints(blob: bytes) -> list[int]:
    # FTS5 docsize rows are SQLite varints, one per indexed column.
    values, value, i = [], 0, 0
    while i < len(blob):
        byte = blob[i]
        i += 1
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            values.append(value)
            value = 0
    return values


_ASCII_WORD = re.compile(r"[A-Za-z0-9]+")


def _expected_sizes(index: FtsIndex, texts: tuple[Any, ...]) -> list[int] | None:
    """Tokens the index must record per column for ``texts``; None when this cannot be known here.

    Trigram: max(0, characters - 2). Words (unicode61): the runs of letters and digits. Its
    character classes follow SQLite's own Unicode tables, which Python's may not match outside
    ASCII, so non-ASCII text is only checked for presence, never called mismatched on a guess.
    """
    if index.tokenizer == "trigram":
        return [max(0, len(t or "") - 2) for t in texts]
    if not all((t or "").isascii() for t in texts):
        return None
    return [len(_ASCII_WORD.findall(t or "")) for t in texts]


def fts_report(conn: sqlite3.Connection, index_name: str, agent: str | None, sample: int = 20) -> FtsReport:
    """Compare a table with one of its FTS indexes, read-only.

    FTS5's own 'integrity-check' command is a write statement, so this reads the
    index's docsize shadow table instead: each row must have an entry, and the
    token count recorded there must equal what the row's current text gives per
    column (a text changed behind the index's back shows up here).
    """
    index = FTS_BY_NAME[index_name]
    where, params = _scope(agent)
    report = FtsReport(index.table, index=index.name, sample=[])
    sizes = {int(r[0]): bytes(r[1] or b"") for r in conn.execute(f"SELECT id, sz FROM {index.name}_docsize")}
    seen: set[int] = set()
    columns = ", ".join(index.columns)
    for row in conn.execute(f"SELECT id, {columns} FROM {index.table} WHERE 1{where}", params):
        rid = int(row[0])
        seen.add(rid)
        report.rows += 1
        blob = sizes.get(rid)
        problem = False
        if blob is None:
            report.missing += 1
            problem = True
        else:
            expected = _expected_sizes(index, tuple(row[1:]))
            if expected is not None and _varints(blob) != expected:
                report.mismatched += 1
                problem = True
        if problem and report.sample is not None and len(report.sample) < sample:
            report.sample.append(rid)
    if agent is None:
        report.extra = len(set(sizes) - seen)
    return report


# -- vectors ------------------------------------------------------------------------------------


def _needs_vector_sql(table: str, model_id: str | None) -> tuple[str, list[Any]]:
    if model_id:
        return (
            "(t.embedding IS NULL OR t.embedding_model IS NOT ? OR t.embedding_dim IS NOT ? "
            "OR length(t.embedding) IS NOT t.embedding_dim * 4)",
            [model_id],
        )
    return "(t.embedding IS NULL)", []


def vector_report(
    conn: sqlite3.Connection, table: str, agent: str | None, model_id: str | None, dimension: int | None
) -> VectorReport:
    """Counts of rows needing a (new) vector; with no active model only missing vectors count."""
    cond, params = _needs_vector_sql(table, model_id)
    if model_id:
        params = [model_id, dimension]
    where, scope_params = _scope(agent, "t")
    row = conn.execute(
        f"SELECT COALESCE(SUM(t.embedding IS NULL), 0), COALESCE(SUM(t.embedding IS NOT NULL), 0), "
        f"COALESCE(SUM(EXISTS (SELECT 1 FROM pending_memory_tasks p WHERE p.kind = 'embed' "
        f"AND p.target_table = ? AND p.target_id = t.id)), 0) FROM {table} t WHERE {cond}{where}",
        [table, *params, *scope_params],
    ).fetchone()
    return VectorReport(table, int(row[0]), int(row[1]), int(row[2]))


def unqueued_vector_rows(
    conn: sqlite3.Connection,
    table: str,
    agent: str | None,
    model_id: str | None,
    dimension: int | None,
    limit: int,
) -> list[int]:
    """Ids (oldest first) needing a vector that have no embedding task yet."""
    cond, _ = _needs_vector_sql(table, model_id)
    params: list[Any] = [model_id, dimension] if model_id else []
    where, scope_params = _scope(agent, "t")
    return [
        int(r[0])
        for r in conn.execute(
            f"SELECT t.id FROM {table} t WHERE {cond}{where} AND NOT EXISTS (SELECT 1 FROM pending_memory_tasks p "
            f"WHERE p.kind = 'embed' AND p.target_table = ? AND p.target_id = t.id) ORDER BY t.id LIMIT ?",
            [*params, *scope_params, table, limit],
        )
    ]


def vector_shapes(conn: sqlite3.Connection, agent: str | None) -> list[dict[str, Any]]:
    """Stored vectors grouped by table, model and dimension, with blobs whose length disagrees."""
    where, params = _scope(agent)
    shapes = []
    for table in ROW_TABLES:
        for r in conn.execute(
            f"SELECT embedding_model, embedding_dim, COUNT(*), "
            f"SUM(length(embedding) IS NOT embedding_dim * 4) FROM {table} "
            f"WHERE embedding IS NOT NULL{where} GROUP BY embedding_model, embedding_dim ORDER BY 1, 2",
            params,
        ):
            shapes.append(
                {
                    "table": table,
                    "model": r[0],
                    "dimension": r[1],
                    "rows": int(r[2]),
                    "bad_length": int(r[3] or 0),
                }
            )
    return shapes


# -- rows -----------------------------------------------------------------------------------------


def duplicate_groups(
    conn: sqlite3.Connection, agent: str | None, limit: int
) -> tuple[int, list[list[tuple[int, bool]]]]:
    """Memories sharing (agent, project, channel, content) or (agent, project, msg_id).

    Such rows exist only when a unique index was missing. Returns the number of
    groups and up to ``limit`` groups, each [(id, locked)] oldest first.
    """
    where, params = _scope(agent)
    groups: list[list[tuple[int, bool]]] = []
    total = 0
    for key in ("project_id, channel, content", "project_id, msg_id"):
        extra = " AND msg_id <> ''" if "msg_id" in key else ""
        for (members,) in conn.execute(
            f"SELECT GROUP_CONCAT(id || ':' || locked) FROM (SELECT * FROM memories WHERE 1{where}{extra} "
            f"ORDER BY id) GROUP BY agent_id, {key} HAVING COUNT(*) > 1",
            params,
        ):
            total += 1
            if len(groups) < limit:
                pairs = [m.split(":") for m in str(members).split(",")]
                groups.append(sorted((int(i), lk == "1") for i, lk in pairs))
    return total, groups


def oversized_profiles(
    conn: sqlite3.Connection, agent: str | None, cap: int, limit: int
) -> tuple[int, list[tuple[str, str, str, int]]]:
    """Profiles longer than ``cap`` characters: (count, [(agent, project, user, length)])."""
    where, params = _scope(agent)
    count = int(
        conn.execute(
            f"SELECT COUNT(*) FROM profiles WHERE length(content) > ?{where}", [cap, *params]
        ).fetchone()[0]
    )
    rows = conn.execute(
        f"SELECT agent_id, project_id, user_id, length(content) FROM profiles WHERE length(content) > ?{where} LIMIT ?",
        [cap, *params, limit],
    ).fetchall()
    return count, [(str(r[0]), str(r[1]), str(r[2]), int(r[3])) for r in rows]


def empty_rows(conn: sqlite3.Connection, agent: str | None, limit: int) -> tuple[int, list[str]]:
    """Memories and episodes whose text is empty or only whitespace: (count, refs)."""
    where, params = _scope(agent)
    # trim() with no argument only strips spaces; name the other whitespace explicitly.
    blank = "trim({col}, ' ' || char(9) || char(10) || char(13)) = ''"
    count, refs = 0, []
    for table, col, prefix in (("memories", "content", "mem"), ("episodes", "summary", "ep")):
        cond = blank.format(col=col)
        count += int(conn.execute(f"SELECT COUNT(*) FROM {table} WHERE {cond}{where}", params).fetchone()[0])
        refs += [
            f"{prefix}:{r[0]}"
            for r in conn.execute(
                f"SELECT id FROM {table} WHERE {cond}{where} ORDER BY id LIMIT ?", [*params, limit]
            )
        ]
    return count, refs[:limit]


def invalid_json_rows(
    conn: sqlite3.Connection, agent: str | None, limit: int
) -> tuple[int, list[tuple[int, str, str, bool]]]:
    """Memories whose source or metadata is not a JSON object: (count, [(id, column, raw, locked)])."""
    where, params = _scope(agent)
    found: list[tuple[int, str, str, bool]] = []
    count = 0
    for column in ("source", "metadata"):
        # json_type() raises on malformed text, so guard it with CASE.
        cond = (
            f"{column} IS NOT NULL AND (CASE WHEN json_valid({column}) THEN json_type({column}) "
            f"ELSE '' END) IS NOT 'object'"
        )
        count += int(conn.execute(f"SELECT COUNT(*) FROM memories WHERE {cond}{where}", params).fetchone()[0])
        for r in conn.execute(
            f"SELECT id, {column}, locked FROM memories WHERE {cond}{where} ORDER BY locked, id LIMIT ?",
            [*params, limit],
        ):
            found.append((int(r[0]), column, str(r[1]), bool(r[2])))
    return count, found


# -- statistics -----------------------------------------------------------------------------------


def distributions(conn: sqlite3.Connection, agent: str | None, limit: int = 50) -> dict[str, Any]:
    """Rows per agent (memories, episodes, profiles) and memories per project and per channel."""
    where, params = _scope(agent)
    per_agent: dict[str, dict[str, int]] = {}
    for table in ("memories", "episodes", "profiles"):
        for agent_id, n in conn.execute(
            f"SELECT agent_id, COUNT(*) FROM {table} WHERE 1{where} GROUP BY agent_id ORDER BY COUNT(*) DESC LIMIT ?",
            [*params, limit],
        ):
            per_agent.setdefault(str(agent_id), {"memories": 0, "episodes": 0, "profiles": 0})[table] = int(n)
    out: dict[str, Any] = {"rows_per_agent": per_agent}
    for axis in ("project_id", "channel"):
        out[f"memories_per_{axis.removesuffix('_id')}"] = [
            {"agent_id": r[0], axis: r[1], "memories": int(r[2])}
            for r in conn.execute(
                f"SELECT agent_id, {axis}, COUNT(*) FROM memories WHERE 1{where} GROUP BY agent_id, {axis} "
                "ORDER BY COUNT(*) DESC LIMIT ?",
                [*params, limit],
            )
        ]
    return out
