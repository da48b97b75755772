"""SQLite rows of the ``episodes`` table (session summaries)."""

from __future__ import annotations

import sqlite3

from cpersona.storage.columns import EPISODE_INSERT_COLUMNS, EPISODE_SHAPE, episode_values
from cpersona.storage.scope import Scope
from cpersona.storage.shared_reads import newest_boundary
from cpersona.storage.sqlite.rows import SqliteTableRows
from cpersona.storage.sqlite.sql import SQLITE
from cpersona.storage.values import NewEpisode

_INSERT = f"INSERT INTO episodes({EPISODE_INSERT_COLUMNS}) VALUES ({', '.join('?' * 12)})"


def insert_episode(conn: sqlite3.Connection, new: NewEpisode) -> int:
    """Insert one episode (keywords one per line, searchable by FTS) and return its id."""
    return int(conn.execute(_INSERT, episode_values(new)).lastrowid or 0)


def find_episode(
    conn: sqlite3.Connection, agent_id: str, project_id: str, channel: str, summary: str
) -> int | None:
    """An episode with this summary in exactly this scope (what import and merge count as a duplicate)."""
    row = conn.execute(
        "SELECT id FROM episodes WHERE agent_id = ? AND project_id = ? AND channel = ? AND summary = ? LIMIT 1",
        (agent_id, project_id, channel, summary),
    ).fetchone()
    return int(row[0]) if row else None


class SqliteEpisodes(SqliteTableRows):
    """``EpisodeRows`` over one SQLite connection."""

    __slots__ = ()
    shape = EPISODE_SHAPE

    def insert(self, new: NewEpisode) -> int:
        """Insert one episode and return its id."""
        return insert_episode(self.conn, new)

    def newest_boundary(self, scope: Scope) -> str | None:
        """created_at of the newest episode in scope: the episode boundary."""
        return newest_boundary(self.conn.execute, SQLITE, scope)
