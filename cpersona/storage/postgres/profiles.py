"""PostgreSQL rows of ``profiles``: one text per (agent, project, user)."""

from __future__ import annotations

from cpersona.storage.columns import profile_values
from cpersona.storage.postgres.sql import POSTGRES, Executor
from cpersona.storage.shared_reads import ProfileReads
from cpersona.storage.values import NewProfile


def upsert_profile(ex: Executor, profile: NewProfile) -> None:
    """Insert or replace the profile under its key (the one thing that is replaced, by design)."""
    ex.run(
        "INSERT INTO profiles(agent_id, project_id, user_id, content, updated_at) VALUES (%s, %s, %s, %s, %s) "
        "ON CONFLICT (agent_id, project_id, user_id) DO UPDATE SET content = excluded.content, "
        "updated_at = excluded.updated_at",
        profile_values(profile),
    )


def profile_updated_at(ex: Executor, agent_id: str, project_id: str, user_id: str) -> str | None:
    """When the profile under this key was last written (None when there is none)."""
    found = ex.value(
        "SELECT updated_at FROM profiles WHERE agent_id = %s AND project_id = %s AND user_id = %s",
        (agent_id, project_id, user_id),
    )
    return None if found is None else str(found)


class PgProfiles(ProfileReads):
    """``ProfileRows`` on PostgreSQL."""

    __slots__ = ("ex",)

    def __init__(self, ex: Executor) -> None:
        super().__init__(ex.all, POSTGRES)
        self.ex = ex

    def upsert(self, profile: NewProfile) -> None:
        """Replace the profile text under its key."""
        upsert_profile(self.ex, profile)
