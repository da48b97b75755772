"""SQLite rows of the ``memories`` table: insert with dedup, fetch, edit, lock, delete, list."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from cpersona.errors import DuplicateRow
from cpersona.storage.interface import NewMemory, Row
from cpersona.storage.scope import Scope
from cpersona.storage.sqlite.by_id import fetch_by_ids

__all__ = ["MEMORY_COLUMNS", "NewMemory", "SqliteMemories", "row_to_dict"]

MEMORY_COLUMNS = (
    "id, agent_id, project_id, channel, msg_id, content, source, metadata, timestamp, created_at, "
    "embedding_model, embedding_dim, embedding IS NOT NULL AS has_embedding, recall_count, "
    "last_recalled_at, locked"
)


def row_to_dict(row: sqlite3.Row | Mapping[str, Any]) -> Row:
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


def _duplicate(exc: sqlite3.IntegrityError) -> bool:
    return "UNIQUE" in str(exc)


class SqliteMemories:
    """``MemoryRows`` over one SQLite connection."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def find_duplicate(self, new: NewMemory) -> tuple[int, str] | None:
        """An existing row this one duplicates: (id, 'msg_id' | 'content'), or None.

        The probes use exactly the unique indexes' scopes, so what they miss the
        indexes still refuse (and ``insert`` reports that as a duplicate too).
        """
        if new.msg_id:
            row = self.conn.execute(
                # "msg_id <> ''" lets SQLite use the partial unique index instead of scanning the scope.
                "SELECT id FROM memories WHERE agent_id = ? AND project_id = ? AND msg_id = ? AND msg_id <> ''",
                (new.agent_id, new.project_id, new.msg_id),
            ).fetchone()
            if row:
                return int(row[0]), "msg_id"
        row = self.conn.execute(
            "SELECT id FROM memories WHERE agent_id = ? AND project_id = ? AND channel = ? AND content = ?",
            (new.agent_id, new.project_id, new.channel, new.content),
        ).fetchone()
        if row:
            return int(row[0]), "content"
        return None

    def insert(self, new: NewMemory) -> int:
        """Insert and return the new id (DuplicateRow when a unique index refuses it: a dedup race).

        The vector goes in with the row: a later UPDATE of ``embedding`` would bump
        the index generation and make every vector index reload in full.
        """
        try:
            cursor = self.conn.execute(
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
        except sqlite3.IntegrityError as exc:
            if not _duplicate(exc):
                raise
            raise DuplicateRow("a memory with this msg_id or content already exists in the scope") from exc
        return int(cursor.lastrowid or 0)

    def get(self, memory_id: int) -> Row | None:
        """One row by id, whoever owns it (callers check ownership)."""
        row = self.conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id = ?", (memory_id,)
        ).fetchone()
        return None if row is None else row_to_dict(row)

    def get_many(self, ids: Sequence[int], scope: Scope | None = None) -> dict[int, Row]:
        """Rows by id, restricted to ``scope`` when given."""
        return {
            i: row_to_dict(r)
            for i, r in fetch_by_ids(self.conn, "memories", MEMORY_COLUMNS, ids, scope).items()
        }

    def text_of(self, memory_id: int) -> str | None:
        """The content an embedding is computed from."""
        row = self.conn.execute("SELECT content FROM memories WHERE id = ?", (memory_id,)).fetchone()
        return None if row is None else str(row[0])

    def set_embedding(
        self, memory_id: int, blob: bytes | None, model_id: str | None, dim: int | None
    ) -> None:
        """Record (or clear) the vector of one row."""
        self.conn.execute(
            "UPDATE memories SET embedding = ?, embedding_model = ?, embedding_dim = ? WHERE id = ?",
            (blob, model_id, dim, memory_id),
        )

    def update_content(self, memory_id: int, content: str) -> None:
        """Replace content and drop the now-stale vector (the queue re-embeds it)."""
        try:
            self.conn.execute(
                "UPDATE memories SET content = ?, embedding = NULL, embedding_model = NULL, embedding_dim = NULL "
                "WHERE id = ?",
                (content, memory_id),
            )
        except sqlite3.IntegrityError as exc:
            if not _duplicate(exc):
                raise
            raise DuplicateRow("another memory in the same scope already has this content") from exc

    def set_locked(self, memory_id: int, locked: bool) -> None:
        """Lock or unlock one row."""
        self.conn.execute("UPDATE memories SET locked = ? WHERE id = ?", (1 if locked else 0, memory_id))

    def delete(self, memory_id: int) -> None:
        """Delete one row (the FTS trigger follows)."""
        self.conn.execute("DELETE FROM memories WHERE id = ?", (memory_id,))

    def mark_recalled(self, ids: Iterable[int], when: str) -> None:
        """Bump recall_count and last_recalled_at of the rows a recall returned."""
        self.conn.executemany(
            "UPDATE memories SET recall_count = recall_count + 1, last_recalled_at = ? WHERE id = ?",
            [(when, i) for i in ids],
        )

    def list_recent(self, scope: Scope, limit: int) -> list[Row]:
        """Newest first (created_at, then id, so equal timestamps still order stably)."""
        where, params = scope.where()
        rows = self.conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {where} ORDER BY created_at DESC, id DESC LIMIT ?",
            [*params, limit],
        ).fetchall()
        return [row_to_dict(r) for r in rows]

    def count(self, scope: Scope) -> int:
        """Rows in scope."""
        where, params = scope.where()
        return int(self.conn.execute(f"SELECT COUNT(*) FROM memories WHERE {where}", params).fetchone()[0])

    def timeline(self, agent_id: str) -> list[tuple[int, str, str, str]]:
        """(id, timestamp, project_id, channel) of one agent's memories, in id (insertion) order."""
        rows = self.conn.execute(
            "SELECT id, COALESCE(timestamp, created_at), project_id, channel FROM memories "
            "WHERE agent_id = ? ORDER BY id",
            (agent_id,),
        ).fetchall()
        return [(int(r[0]), str(r[1] or ""), str(r[2]), str(r[3])) for r in rows]

    def ids_with_source(self, scope: Scope, source_id: str) -> list[int]:
        """Ids in scope whose ``source.id`` starts with ``source_id``."""
        where, params = scope.where()
        rows = self.conn.execute(
            f"SELECT id FROM memories WHERE {where} AND "
            "substr(COALESCE(json_extract(source, '$.id'), ''), 1, ?) = ?",
            [*params, len(source_id), source_id],
        ).fetchall()
        return [r[0] for r in rows]
