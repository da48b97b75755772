"""SQLite rows of the ``profiles`` table: one text per (agent, project, user)."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from cpersona.storage.interface import Row
from cpersona.storage.scope import Scope


def row_to_dict(row: sqlite3.Row | Mapping[str, Any]) -> Row:
    """The public shape of a profile row."""
    return {
        "type": "profile",
        "agent_id": row["agent_id"],
        "project_id": row["project_id"],
        "user_id": row["user_id"],
        "content": row["content"],
        "updated_at": row["updated_at"],
    }


class SqliteProfiles:
    """``ProfileRows`` over one SQLite connection."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def get(self, agent_id: str, project_id: str, user_id: str) -> Row | None:
        """The profile for exactly this key."""
        row = self.conn.execute(
            "SELECT * FROM profiles WHERE agent_id = ? AND project_id = ? AND user_id = ?",
            (agent_id, project_id, user_id),
        ).fetchone()
        return None if row is None else row_to_dict(row)

    def upsert(self, agent_id: str, project_id: str, user_id: str, content: str, when: str) -> None:
        """Replace the profile text (profiles are the one thing that is replaced, by design)."""
        self.conn.execute(
            "INSERT INTO profiles(agent_id, project_id, user_id, content, updated_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT(agent_id, project_id, user_id) DO UPDATE SET content = excluded.content, "
            "updated_at = excluded.updated_at",
            (agent_id, project_id, user_id, content, when),
        )

    def newest_in_scope(self, scope: Scope, limit: int = 3) -> list[Row]:
        """Up to ``limit`` profiles in scope, newest first (recall's profile injection)."""
        where, params = scope.where(has_channel=False)
        rows = self.conn.execute(
            f"SELECT * FROM profiles WHERE {where} ORDER BY updated_at DESC, user_id LIMIT ?",
            [*params, limit],
        ).fetchall()
        return [row_to_dict(r) for r in rows]
