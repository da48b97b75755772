"""SQLite rows of the ``profiles`` table: one text per (agent, project, user)."""

from __future__ import annotations

import sqlite3

from cpersona.storage.columns import profile_values
from cpersona.storage.shared_reads import ProfileReads
from cpersona.storage.sqlite.sql import SQLITE
from cpersona.storage.values import NewProfile


def upsert_profile(conn: sqlite3.Connection, profile: NewProfile) -> None:
    """Insert or replace the profile under its key (profiles are the one thing replaced, by design)."""
    conn.execute(
        "INSERT INTO profiles(agent_id, project_id, user_id, content, updated_at) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT(agent_id, project_id, user_id) DO UPDATE SET content = excluded.content, "
        "updated_at = excluded.updated_at",
        profile_values(profile),
    )


def profile_updated_at(conn: sqlite3.Connection, agent_id: str, project_id: str, user_id: str) -> str | None:
    """When the profile under this key was last written (None when there is none)."""
    row = conn.execute(
        "SELECT updated_at FROM profiles WHERE agent_id = ? AND project_id = ? AND user_id = ?",
        (agent_id, project_id, user_id),
    ).fetchone()
    return None if row is None else str(row[0])


class SqliteProfiles(ProfileReads):
    """``ProfileRows`` over one SQLite connection."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        super().__init__(conn.execute, SQLITE)
        self.conn = conn

    def upsert(self, profile: NewProfile) -> None:
        """Replace the profile text under its key."""
        upsert_profile(self.conn, profile)
