"""Rows of the ``memories`` table: insert with dedup, fetch, edit, lock, delete, list."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from cpersona.storage.by_id import fetch_by_ids
from cpersona.storage.scope import Scope

MEMORY_COLUMNS = (
    "id, agent_id, project_id, channel, msg_id, content, source, metadata, timestamp, created_at, "
    "embedding_model, embedding_dim, embedding IS NOT NULL AS has_embedding, recall_count, "
    "last_recalled_at, locked"
)


@dataclass(frozen=True)
class NewMemory:
    """A validated memory ready to insert (axes already normalised to '' when omitted)."""

    agent_id: str
    project_id: str
    channel: str
    msg_id: str
    content: str
    source: str | None
    metadata: str | None
    timestamp: str
    created_at: str
    embedding: bytes | None = None
    embedding_model: str | None = None
    embedding_dim: int | None = None


def row_to_dict(row: sqlite3.Row) -> dict[str, Any]:
    """The public shape of a memory row (see docs/api-shapes.md)."""
    return {
        "ref": f"mem:{row['id']}",
        "type": "memory",
        "id": row["id"],
        "agent_id": row["agent_id"],
        "project_id": row["project_id"],
        "channel": row["channel"],
        "msg_id": row["msg_id"],
        "content": row["content"],
        "source": json.loads(row["source"]) if row["source"] else None,
        "metadata": json.loads(row["metadata"]) if row["metadata"] else None,
        "timestamp": row["timestamp"],
        "created_at": row["created_at"],
        "locked": bool(row["locked"]),
        "recall_count": row["recall_count"],
        "last_recalled_at": row["last_recalled_at"],
        "embedded": bool(row["has_embedding"]),
        "embedding_model": row["embedding_model"],
    }


def find_duplicate(conn: sqlite3.Connection, new: NewMemory) -> tuple[int, str] | None:
    """An existing row this one duplicates: (id, 'msg_id' | 'content'), or None.

    The probes use exactly the unique indexes' scopes, so what they miss the
    indexes still refuse (and ``insert`` reports that as a duplicate too).
    """
    if new.msg_id:
        row = conn.execute(
            # "msg_id <> ''" lets SQLite use the partial unique index instead of scanning the scope.
            "SELECT id FROM memories WHERE agent_id = ? AND project_id = ? AND msg_id = ? AND msg_id <> ''",
            (new.agent_id, new.project_id, new.msg_id),
        ).fetchone()
        if row:
            return int(row[0]), "msg_id"
    row = conn.execute(
        "SELECT id FROM memories WHERE agent_id = ? AND project_id = ? AND channel = ? AND content = ?",
        (new.agent_id, new.project_id, new.channel, new.content),
    ).fetchone()
    if row:
        return int(row[0]), "content"
    return None


def insert(conn: sqlite3.Connection, new: NewMemory) -> int:
    """Insert and return the new id (raises sqlite3.IntegrityError on a dedup race).

    The vector goes in with the row: a later UPDATE of ``embedding`` would bump
    the index generation and make every vector index reload in full.
    """
    cursor = conn.execute(
        "INSERT INTO memories(agent_id, project_id, channel, msg_id, content, source, metadata, "
        "timestamp, created_at, embedding, embedding_model, embedding_dim) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
        ),
    )
    return int(cursor.lastrowid)


def get(conn: sqlite3.Connection, memory_id: int) -> sqlite3.Row | None:
    """One row by id, whoever owns it (callers check ownership)."""
    return conn.execute(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id = ?", (memory_id,)).fetchone()


def get_many(conn: sqlite3.Connection, ids: Sequence[int], scope: Scope | None = None) -> dict[int, sqlite3.Row]:
    """Rows by id, restricted to ``scope`` when given."""
    return fetch_by_ids(conn, "memories", MEMORY_COLUMNS, ids, scope)


def set_embedding(
    conn: sqlite3.Connection, memory_id: int, blob: bytes | None, model_id: str | None, dim: int | None
) -> None:
    """Record (or clear) the vector of one row."""
    conn.execute(
        "UPDATE memories SET embedding = ?, embedding_model = ?, embedding_dim = ? WHERE id = ?",
        (blob, model_id, dim, memory_id),
    )


def update_content(conn: sqlite3.Connection, memory_id: int, content: str) -> None:
    """Replace content and drop the now-stale vector (the queue re-embeds it)."""
    conn.execute(
        "UPDATE memories SET content = ?, embedding = NULL, embedding_model = NULL, embedding_dim = NULL "
        "WHERE id = ?",
        (content, memory_id),
    )


def set_locked(conn: sqlite3.Connection, memory_id: int, locked: bool) -> None:
    """Lock or unlock one row."""
    conn.execute("UPDATE memories SET locked = ? WHERE id = ?", (1 if locked else 0, memory_id))


def delete(conn: sqlite3.Connection, memory_id: int) -> None:
    """Delete one row (the FTS trigger follows)."""
    conn.execute("DELETE FROM memories WHERE id = ?", (memory_id,))


def mark_recalled(conn: sqlite3.Connection, ids: Iterable[int], when: str) -> None:
    """Bump recall_count and last_recalled_at of the rows a recall returned."""
    conn.executemany(
        "UPDATE memories SET recall_count = recall_count + 1, last_recalled_at = ? WHERE id = ?",
        [(when, i) for i in ids],
    )


def list_recent(conn: sqlite3.Connection, scope: Scope, limit: int) -> list[sqlite3.Row]:
    """Newest first (created_at, then id, so equal timestamps still order stably)."""
    where, params = scope.where()
    return conn.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {where} ORDER BY created_at DESC, id DESC LIMIT ?",
        [*params, limit],
    ).fetchall()


def count(conn: sqlite3.Connection, scope: Scope) -> int:
    """Rows in scope."""
    where, params = scope.where()
    return int(conn.execute(f"SELECT COUNT(*) FROM memories WHERE {where}", params).fetchone()[0])
