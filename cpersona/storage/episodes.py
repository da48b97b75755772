"""Rows of the ``episodes`` table (session summaries)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from cpersona.storage.by_id import fetch_by_ids
from cpersona.storage.scope import Scope

EPISODE_COLUMNS = (
    "id, agent_id, project_id, channel, summary, keywords, start_time, end_time, resolved, created_at, "
    "embedding_model, embedding_dim, embedding IS NOT NULL AS has_embedding"
)


def row_to_dict(row: sqlite3.Row) -> dict[str, Any]:
    """The public shape of an episode row (see docs/api-shapes.md)."""
    keywords = [k for k in (row["keywords"] or "").split("\n") if k]
    return {
        "ref": f"ep:{row['id']}",
        "type": "episode",
        "id": row["id"],
        "agent_id": row["agent_id"],
        "project_id": row["project_id"],
        "channel": row["channel"],
        "content": row["summary"],
        "summary": row["summary"],
        "keywords": keywords,
        "start_time": row["start_time"],
        "end_time": row["end_time"],
        "resolved": bool(row["resolved"]),
        "created_at": row["created_at"],
        "embedded": bool(row["has_embedding"]),
        "embedding_model": row["embedding_model"],
    }


def insert(
    conn: sqlite3.Connection,
    *,
    agent_id: str,
    project_id: str,
    channel: str,
    summary: str,
    keywords: Sequence[str],
    start_time: str | None,
    end_time: str | None,
    resolved: bool,
    created_at: str,
    embedding: bytes | None = None,
    embedding_model: str | None = None,
    embedding_dim: int | None = None,
) -> int:
    """Insert one episode; keywords are stored one per line (searchable by FTS)."""
    cursor = conn.execute(
        "INSERT INTO episodes(agent_id, project_id, channel, summary, keywords, start_time, end_time, "
        "resolved, created_at, embedding, embedding_model, embedding_dim) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            agent_id,
            project_id,
            channel,
            summary,
            "\n".join(keywords),
            start_time,
            end_time,
            int(resolved),
            created_at,
            embedding,
            embedding_model,
            embedding_dim,
        ),
    )
    return int(cursor.lastrowid)


def get(conn: sqlite3.Connection, episode_id: int) -> sqlite3.Row | None:
    """One row by id, whoever owns it."""
    return conn.execute(f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE id = ?", (episode_id,)).fetchone()


def get_many(conn: sqlite3.Connection, ids: Sequence[int], scope: Scope | None = None) -> dict[int, sqlite3.Row]:
    """Rows by id, restricted to ``scope`` when given."""
    return fetch_by_ids(conn, "episodes", EPISODE_COLUMNS, ids, scope)


def set_embedding(
    conn: sqlite3.Connection, episode_id: int, blob: bytes | None, model_id: str | None, dim: int | None
) -> None:
    """Record (or clear) the vector of one episode."""
    conn.execute(
        "UPDATE episodes SET embedding = ?, embedding_model = ?, embedding_dim = ? WHERE id = ?",
        (blob, model_id, dim, episode_id),
    )


def delete(conn: sqlite3.Connection, episode_id: int) -> None:
    """Delete one episode."""
    conn.execute("DELETE FROM episodes WHERE id = ?", (episode_id,))


def newest_boundary(conn: sqlite3.Connection, scope: Scope) -> str | None:
    """created_at of the newest episode in scope: the episode boundary."""
    where, params = scope.where()
    row = conn.execute(f"SELECT MAX(created_at) FROM episodes WHERE {where}", params).fetchone()
    return row[0] if row and row[0] else None


def list_recent(conn: sqlite3.Connection, scope: Scope, limit: int) -> list[sqlite3.Row]:
    """Newest first."""
    where, params = scope.where()
    return conn.execute(
        f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE {where} ORDER BY created_at DESC, id DESC LIMIT ?",
        [*params, limit],
    ).fetchall()


def count(conn: sqlite3.Connection, scope: Scope) -> int:
    """Rows in scope."""
    where, params = scope.where()
    return int(conn.execute(f"SELECT COUNT(*) FROM episodes WHERE {where}", params).fetchone()[0])
