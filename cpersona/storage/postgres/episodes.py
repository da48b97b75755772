"""PostgreSQL rows of ``episodes`` (session summaries), in the same public shape as SQLite."""

from __future__ import annotations

from cpersona.storage.columns import EPISODE_INSERT_COLUMNS, EPISODE_SHAPE, episode_values
from cpersona.storage.postgres.rows import PgTableRows, pg_values
from cpersona.storage.postgres.sql import POSTGRES, Executor
from cpersona.storage.scope import Scope
from cpersona.storage.shared_reads import newest_boundary
from cpersona.storage.values import NewEpisode

_INSERT = (
    f"INSERT INTO episodes({EPISODE_INSERT_COLUMNS}) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %b, %s, %s) RETURNING id"
)


def insert_episode(ex: Executor, new: NewEpisode) -> int:
    """Insert one episode (keywords one per line) and return its id."""
    return int(ex.value(_INSERT, pg_values(episode_values(new))))


def find_episode(ex: Executor, agent_id: str, project_id: str, channel: str, summary: str) -> int | None:
    """An episode with this summary in exactly this scope (what import and merge count as a duplicate)."""
    found = ex.value(
        "SELECT id FROM episodes WHERE agent_id = %s AND project_id = %s AND channel = %s AND summary = %s LIMIT 1",
        (agent_id, project_id, channel, summary),
    )
    return None if found is None else int(found)


class PgEpisodes(PgTableRows):
    """``EpisodeRows`` on PostgreSQL."""

    __slots__ = ()
    shape = EPISODE_SHAPE

    def insert(self, new: NewEpisode) -> int:
        """Insert one episode and return its id."""
        return insert_episode(self.ex, new)

    def newest_boundary(self, scope: Scope) -> str | None:
        """created_at of the newest episode in scope: the episode boundary."""
        return newest_boundary(self.ex.all, POSTGRES, scope)
