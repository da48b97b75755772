"""SQLite rows of the ``episodes`` table (session summaries)."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from cpersona.storage.interface import Row
from cpersona.storage.scope import Scope
from cpersona.storage.sqlite.by_id import fetch_by_ids

EPISODE_COLUMNS = (
    "id, agent_id, project_id, channel, summary, keywords, start_time, end_time, resolved, created_at, "
    "embedding_model, embedding_dim, embedding IS NOT NULL AS has_embedding"
)


def row_to_dict(row: sqlite3.Row | Mapping[str, Any]) -> Row:
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


class SqliteEpisodes:
    """``EpisodeRows`` over one SQLite connection."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def insert(
        self,
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
        cursor = self.conn.execute(
            "INSERT INTO episodes(agent_id, project_id, channel, summary, keywords, start_time, end_time, "
            "resolved, created_at, embedding, embedding_model, embedding_dim) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
        return int(cursor.lastrowid or 0)

    def get(self, episode_id: int) -> Row | None:
        """One row by id, whoever owns it."""
        row = self.conn.execute(
            f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE id = ?", (episode_id,)
        ).fetchone()
        return None if row is None else row_to_dict(row)

    def get_many(self, ids: Sequence[int], scope: Scope | None = None) -> dict[int, Row]:
        """Rows by id, restricted to ``scope`` when given."""
        return {
            i: row_to_dict(r)
            for i, r in fetch_by_ids(self.conn, "episodes", EPISODE_COLUMNS, ids, scope).items()
        }

    def text_of(self, episode_id: int) -> str | None:
        """The summary an embedding is computed from."""
        row = self.conn.execute("SELECT summary FROM episodes WHERE id = ?", (episode_id,)).fetchone()
        return None if row is None else str(row[0])

    def set_embedding(
        self, episode_id: int, blob: bytes | None, model_id: str | None, dim: int | None
    ) -> None:
        """Record (or clear) the vector of one episode."""
        self.conn.execute(
            "UPDATE episodes SET embedding = ?, embedding_model = ?, embedding_dim = ? WHERE id = ?",
            (blob, model_id, dim, episode_id),
        )

    def delete(self, episode_id: int) -> None:
        """Delete one episode."""
        self.conn.execute("DELETE FROM episodes WHERE id = ?", (episode_id,))

    def newest_boundary(self, scope: Scope) -> str | None:
        """created_at of the newest episode in scope: the episode boundary."""
        where, params = scope.where()
        row = self.conn.execute(f"SELECT MAX(created_at) FROM episodes WHERE {where}", params).fetchone()
        return row[0] if row and row[0] else None

    def list_recent(self, scope: Scope, limit: int) -> list[Row]:
        """Newest first."""
        where, params = scope.where()
        rows = self.conn.execute(
            f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE {where} ORDER BY created_at DESC, id DESC LIMIT ?",
            [*params, limit],
        ).fetchall()
        return [row_to_dict(r) for r in rows]

    def count(self, scope: Scope) -> int:
        """Rows in scope."""
        where, params = scope.where()
        return int(self.conn.execute(f"SELECT COUNT(*) FROM episodes WHERE {where}", params).fetchone()[0])
