"""Portability SQL: stream rows out for export, write imported rows back with dedup.

Export reads in one snapshot (a deferred read transaction), in id order, a
chunk at a time, so memory stays bounded whatever the table size. Import
writes a batch of records per transaction; every record is probed against the
same unique-index scopes ``store`` uses (msg_id and content for memories,
summary for episodes) so a second import of the same file changes nothing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Generator, Iterator, Sequence
from typing import Any

from cpersona.storage.port_records import (
    DUPLICATE,
    INSERTED,
    KEPT,
    UPDATED,
    ImportedEpisode,
    ImportedMemory,
    ImportedProfile,
    ImportRecord,
)
from cpersona.storage.sqlite.db import Database
from cpersona.storage.sqlite.memories import SqliteMemories
from cpersona.storage.sqlite.migrations import current_version
from cpersona.storage.sqlite.tasks import EMBED, SqliteTasks

__all__ = [
    "DUPLICATE",
    "INSERTED",
    "KEPT",
    "UPDATED",
    "ImportRecord",
    "ImportedEpisode",
    "ImportedMemory",
    "ImportedProfile",
    "SqlitePortabilityRows",
]

#: Rows fetched per round trip while streaming an export.
EXPORT_CHUNK = 500

_MEMORY_EXPORT = (
    "id, agent_id, project_id, channel, msg_id, content, source, metadata, timestamp, created_at, "
    "recall_count, last_recalled_at, locked, embedding_model, embedding_dim"
)
_EPISODE_EXPORT = (
    "id, agent_id, project_id, channel, summary, keywords, start_time, end_time, resolved, created_at, "
    "embedding_model, embedding_dim"
)
_PROFILE_EXPORT = "agent_id, project_id, user_id, content, updated_at"


def _agent_filter(agent_id: str | None) -> tuple[str, list[Any]]:
    return ("agent_id = ?", [agent_id]) if agent_id is not None else ("1", [])


class SqlitePortabilityRows:
    """``PortabilityRows`` over one SQLite ``Database``."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # -- export -----------------------------------------------------------------------
    def stream(
        self, agent_id: str | None, *, include_vectors: bool, chunk: int = EXPORT_CHUNK
    ) -> Generator[tuple[str, dict[str, Any]], None, None]:
        """Yield ``("counts", {...})`` then every row as ``(type, columns)`` in one consistent snapshot.

        Memories come first, then episodes, then profiles, each in id (or key) order.
        ``embedding`` (raw bytes) is present only when ``include_vectors``.
        """
        where, params = _agent_filter(agent_id)
        with self.db.read() as conn:
            counts = {
                table: int(conn.execute(f"SELECT COUNT(*) FROM {table} WHERE {where}", params).fetchone()[0])
                for table in ("memories", "episodes", "profiles")
            }
            counts["schema_version"] = current_version(conn)
            yield "counts", counts
            vec = ", embedding" if include_vectors else ""
            yield from _chunked(
                conn,
                "memory",
                f"SELECT {_MEMORY_EXPORT}{vec} FROM memories WHERE {where} ORDER BY id",
                params,
                chunk,
            )
            yield from _chunked(
                conn,
                "episode",
                f"SELECT {_EPISODE_EXPORT}{vec} FROM episodes WHERE {where} ORDER BY id",
                params,
                chunk,
            )
            yield from _chunked(
                conn,
                "profile",
                f"SELECT {_PROFILE_EXPORT} FROM profiles WHERE {where} "
                "ORDER BY agent_id, project_id, user_id",
                params,
                chunk,
            )

    # -- import -----------------------------------------------------------------------
    def write_batch(
        self,
        records: Sequence[ImportRecord],
        *,
        queued_at: str | None,
        active_model: tuple[str, int] | None,
    ) -> tuple[list[str], int]:
        """Write ``records`` in one transaction; returns (outcome per record, rows queued for embedding).

        ``queued_at`` None means no back-fill queueing (no model configured; the
        start-up sweep queues them once one is). A row is queued when it has no
        vector or one of another model than ``active_model``.
        """
        outcomes: list[str] = []
        queued = 0
        with self.db.write() as conn:
            for record in records:
                outcome, new_id, has_vector, model = _write_one(conn, record)
                outcomes.append(outcome)
                if outcome != INSERTED or new_id is None or queued_at is None:
                    continue
                if not has_vector or (active_model is not None and model != active_model):
                    table = "memories" if isinstance(record, ImportedMemory) else "episodes"
                    SqliteTasks(conn).enqueue(EMBED, table, new_id, queued_at)
                    queued += 1
        return outcomes, queued

    def probe_batch(self, records: Sequence[ImportRecord]) -> list[str]:
        """What ``write_batch`` would do against the current database, writing nothing (dry run)."""
        conn = self.db.connection()
        out: list[str] = []
        with self.db.read():
            for record in records:
                if isinstance(record, ImportedMemory):
                    out.append(DUPLICATE if SqliteMemories(conn).find_duplicate(record.row) else INSERTED)
                elif isinstance(record, ImportedEpisode):
                    out.append(DUPLICATE if _episode_duplicate(conn, record) else INSERTED)
                else:
                    out.append(_profile_outcome(conn, record))
        return out


def _chunked(
    conn: sqlite3.Connection, kind: str, sql: str, params: list[Any], chunk: int
) -> Iterator[tuple[str, dict[str, Any]]]:
    cursor = conn.execute(sql, params)
    while True:
        rows = cursor.fetchmany(chunk)
        if not rows:
            return
        for row in rows:
            # sqlite3.Row iterates over values, so pair them with the column names explicitly.
            yield kind, dict(zip(row.keys(), tuple(row), strict=True))


def _episode_duplicate(conn: sqlite3.Connection, ep: ImportedEpisode) -> int | None:
    row = conn.execute(
        "SELECT id FROM episodes WHERE agent_id = ? AND project_id = ? AND channel = ? AND summary = ? LIMIT 1",
        (ep.agent_id, ep.project_id, ep.channel, ep.summary),
    ).fetchone()
    return int(row[0]) if row else None


def _profile_outcome(conn: sqlite3.Connection, profile: ImportedProfile) -> str:
    row = conn.execute(
        "SELECT updated_at FROM profiles WHERE agent_id = ? AND project_id = ? AND user_id = ?",
        (profile.agent_id, profile.project_id, profile.user_id),
    ).fetchone()
    if row is None:
        return INSERTED
    # The newer text wins; equal or older imports keep what is there (so a re-import changes nothing).
    return UPDATED if profile.updated_at > row[0] else KEPT


def _write_one(
    conn: sqlite3.Connection, record: ImportRecord
) -> tuple[str, int | None, bool, tuple[str, int] | None]:
    if isinstance(record, ImportedMemory):
        return _write_memory(conn, record)
    if isinstance(record, ImportedEpisode):
        return _write_episode(conn, record)
    outcome = _profile_outcome(conn, record)
    if outcome in (INSERTED, UPDATED):
        conn.execute(
            "INSERT INTO profiles(agent_id, project_id, user_id, content, updated_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT(agent_id, project_id, user_id) DO UPDATE SET content = excluded.content, "
            "updated_at = excluded.updated_at",
            (record.agent_id, record.project_id, record.user_id, record.content, record.updated_at),
        )
    return outcome, None, False, None


def _model(model_id: str | None, dim: int | None, blob: bytes | None) -> tuple[str, int] | None:
    return (model_id, dim) if blob is not None and model_id and dim else None


def _write_memory(
    conn: sqlite3.Connection, record: ImportedMemory
) -> tuple[str, int | None, bool, tuple[str, int] | None]:
    new = record.row
    if SqliteMemories(conn).find_duplicate(new) is not None:
        return DUPLICATE, None, False, None
    try:
        cursor = conn.execute(
            "INSERT INTO memories(agent_id, project_id, channel, msg_id, content, source, metadata, timestamp, "
            "created_at, embedding, embedding_model, embedding_dim, recall_count, last_recalled_at, locked) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                new.agent_id,
                new.project_id,
                new.channel,
                new.msg_id,
                new.content,
                new.source,
                new.metadata,
                new.timestamp,
                new.created_at,
                new.embedding,
                new.embedding_model,
                new.embedding_dim,
                record.recall_count,
                record.last_recalled_at,
                int(record.locked),
            ),
        )
    except sqlite3.IntegrityError:  # the unique indexes refuse what the probe could not see
        return DUPLICATE, None, False, None
    model = _model(new.embedding_model, new.embedding_dim, new.embedding)
    return INSERTED, int(cursor.lastrowid or 0), new.embedding is not None, model


def _write_episode(
    conn: sqlite3.Connection, ep: ImportedEpisode
) -> tuple[str, int | None, bool, tuple[str, int] | None]:
    if _episode_duplicate(conn, ep) is not None:
        return DUPLICATE, None, False, None
    cursor = conn.execute(
        "INSERT INTO episodes(agent_id, project_id, channel, summary, keywords, start_time, end_time, resolved, "
        "created_at, embedding, embedding_model, embedding_dim) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            ep.agent_id,
            ep.project_id,
            ep.channel,
            ep.summary,
            ep.keywords,
            ep.start_time,
            ep.end_time,
            int(ep.resolved),
            ep.created_at,
            ep.embedding,
            ep.embedding_model,
            ep.embedding_dim,
        ),
    )
    model = _model(ep.embedding_model, ep.embedding_dim, ep.embedding)
    return INSERTED, int(cursor.lastrowid or 0), ep.embedding is not None, model
