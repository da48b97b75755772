"""PostgreSQL rows of ``memories``, ``episodes`` and ``profiles``, in the same public shapes as SQLite.

Dedup is the unique indexes plus ``INSERT ... ON CONFLICT DO NOTHING``: a clash
returns no id (skip, never upsert) and leaves the surrounding transaction usable,
where a raised unique violation would abort it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import psycopg

from cpersona.errors import DuplicateRow
from cpersona.storage.interface import NewMemory, Row
from cpersona.storage.postgres.sql import Executor, PgVector, where
from cpersona.storage.scope import Scope
from cpersona.storage.sqlite.episodes import row_to_dict as episode_dict
from cpersona.storage.sqlite.memories import row_to_dict as memory_dict
from cpersona.storage.sqlite.profiles import row_to_dict as profile_dict

MEMORY_COLUMNS = (
    "id, agent_id, project_id, channel, msg_id, content, source, metadata, timestamp, created_at, "
    "embedding_model, embedding_dim, embedding IS NOT NULL AS has_embedding, recall_count, "
    "last_recalled_at, locked"
)
EPISODE_COLUMNS = (
    "id, agent_id, project_id, channel, summary, keywords, start_time, end_time, resolved, created_at, "
    "embedding_model, embedding_dim, embedding IS NOT NULL AS has_embedding"
)


def vector_param(blob: bytes | None) -> PgVector | None:
    """A stored vector as a bind parameter (None stays NULL)."""
    return None if blob is None else PgVector(blob)


def source_clause(source_id: str | None, alias: str = "") -> tuple[str, list[Any]]:
    """``AND source.id starts with source_id`` (empty when no filter)."""
    if source_id is None:
        return "", []
    prefix = f"{alias}." if alias else ""
    return f" AND left(COALESCE({prefix}source::jsonb ->> 'id', ''), %s) = %s", [len(source_id), source_id]


class PgMemories:
    """``MemoryRows`` on PostgreSQL."""

    __slots__ = ("ex",)

    def __init__(self, ex: Executor) -> None:
        self.ex = ex

    def find_duplicate(self, new: NewMemory) -> tuple[int, str] | None:
        """An existing row ``new`` duplicates: (id, 'msg_id' | 'content'), or None (probes use the unique indexes)."""
        if new.msg_id:
            found = self.ex.value(
                "SELECT id FROM memories WHERE agent_id = %s AND project_id = %s AND md5(msg_id) = md5(%s) "
                "AND msg_id = %s AND msg_id <> ''",
                (new.agent_id, new.project_id, new.msg_id, new.msg_id),
            )
            if found is not None:
                return int(found), "msg_id"
        found = self.ex.value(
            "SELECT id FROM memories WHERE agent_id = %s AND project_id = %s AND channel = %s "
            "AND md5(content) = md5(%s) AND content = %s",
            (new.agent_id, new.project_id, new.channel, new.content, new.content),
        )
        return None if found is None else (int(found), "content")

    def insert(self, new: NewMemory) -> int:
        """Insert and return the new id; DuplicateRow when a unique index refuses it (a dedup race)."""
        return insert_memory(self.ex, new)

    def get(self, memory_id: int) -> Row | None:
        """One row by id, whoever owns it."""
        row = self.ex.one(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id = %s", (memory_id,))
        return None if row is None else memory_dict(row)

    def get_many(self, ids: Sequence[int], scope: Scope | None = None) -> dict[int, Row]:
        """Rows by id, restricted to ``scope`` when given."""
        if not ids:
            return {}
        clause, params = where(scope or Scope())
        rows = self.ex.all(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id = ANY(%s) AND {clause}", [list(ids), *params]
        )
        return {int(r["id"]): memory_dict(r) for r in rows}

    def text_of(self, memory_id: int) -> str | None:
        """The content an embedding is computed from."""
        found = self.ex.value("SELECT content FROM memories WHERE id = %s", (memory_id,))
        return None if found is None else str(found)

    def set_embedding(
        self, memory_id: int, blob: bytes | None, model_id: str | None, dim: int | None
    ) -> None:
        """Record (or clear) the vector of one row."""
        self.ex.run(
            "UPDATE memories SET embedding = %b, embedding_model = %s, embedding_dim = %s WHERE id = %s",
            (vector_param(blob), model_id, dim, memory_id),
        )

    def update_content(self, memory_id: int, content: str) -> None:
        """Replace content and drop the stale vector; DuplicateRow on a content clash (under a savepoint)."""
        try:
            with self.ex.savepoint():
                self.ex.run(
                    "UPDATE memories SET content = %s, embedding = NULL, embedding_model = NULL, "
                    "embedding_dim = NULL WHERE id = %s",
                    (content, memory_id),
                )
        except psycopg.errors.UniqueViolation as exc:
            raise DuplicateRow("another memory in the same scope already has this content") from exc

    def set_locked(self, memory_id: int, locked: bool) -> None:
        """Lock or unlock one row."""
        self.ex.run("UPDATE memories SET locked = %s WHERE id = %s", (locked, memory_id))

    def delete(self, memory_id: int) -> None:
        """Delete one row."""
        self.ex.run("DELETE FROM memories WHERE id = %s", (memory_id,))

    def mark_recalled(self, ids: Iterable[int], when: str) -> None:
        """Bump recall_count and last_recalled_at of the rows a recall returned (one statement)."""
        chosen = sorted(set(ids))  # a fixed order: concurrent recalls lock rows in the same sequence
        if chosen:
            self.ex.run(
                "UPDATE memories SET recall_count = recall_count + 1, last_recalled_at = %s WHERE id = ANY(%s)",
                (when, chosen),
            )

    def list_recent(self, scope: Scope, limit: int) -> list[Row]:
        """Newest first (created_at, then id)."""
        clause, params = where(scope)
        rows = self.ex.all(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {clause} ORDER BY created_at DESC, id DESC LIMIT %s",
            [*params, limit],
        )
        return [memory_dict(r) for r in rows]

    def count(self, scope: Scope) -> int:
        """Rows in scope."""
        clause, params = where(scope)
        return int(self.ex.value(f"SELECT COUNT(*) FROM memories WHERE {clause}", params))

    def timeline(self, agent_id: str) -> list[tuple[int, str, str, str]]:
        """(id, timestamp, project_id, channel) of one agent's memories, in id (insertion) order."""
        rows = self.ex.all(
            "SELECT id, COALESCE(timestamp, created_at) AS ts, project_id, channel FROM memories "
            "WHERE agent_id = %s ORDER BY id",
            (agent_id,),
        )
        return [(int(r["id"]), str(r["ts"] or ""), str(r["project_id"]), str(r["channel"])) for r in rows]

    def ids_with_source(self, scope: Scope, source_id: str) -> list[int]:
        """Ids in scope whose ``source.id`` starts with ``source_id``."""
        clause, params = where(scope)
        source_sql, source_params = source_clause(source_id)
        rows = self.ex.all(f"SELECT id FROM memories WHERE {clause}{source_sql}", [*params, *source_params])
        return [int(r["id"]) for r in rows]


def insert_memory(
    ex: Executor,
    new: NewMemory,
    *,
    recall_count: int = 0,
    last_recalled_at: str | None = None,
    locked: bool = False,
) -> int:
    """``INSERT ... ON CONFLICT DO NOTHING RETURNING id``; DuplicateRow when nothing was inserted."""
    found = ex.value(
        "INSERT INTO memories(agent_id, project_id, channel, msg_id, content, source, metadata, timestamp, "
        "created_at, embedding, embedding_model, embedding_dim, recall_count, last_recalled_at, locked) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %b, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING id",
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
            vector_param(new.embedding),
            new.embedding_model,
            new.embedding_dim,
            recall_count,
            last_recalled_at,
            locked,
        ),
    )
    if found is None:
        raise DuplicateRow("a memory with this msg_id or content already exists in the scope")
    return int(found)


class PgEpisodes:
    """``EpisodeRows`` on PostgreSQL."""

    __slots__ = ("ex",)

    def __init__(self, ex: Executor) -> None:
        self.ex = ex

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
        """Insert one episode; keywords are stored one per line."""
        return insert_episode(
            self.ex,
            (
                agent_id,
                project_id,
                channel,
                summary,
                "\n".join(keywords),
                start_time,
                end_time,
                bool(resolved),
                created_at,
                embedding,
                embedding_model,
                embedding_dim,
            ),
        )

    def get(self, episode_id: int) -> Row | None:
        """One row by id, whoever owns it."""
        row = self.ex.one(f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE id = %s", (episode_id,))
        return None if row is None else episode_dict(row)

    def get_many(self, ids: Sequence[int], scope: Scope | None = None) -> dict[int, Row]:
        """Rows by id, restricted to ``scope`` when given."""
        if not ids:
            return {}
        clause, params = where(scope or Scope())
        rows = self.ex.all(
            f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE id = ANY(%s) AND {clause}", [list(ids), *params]
        )
        return {int(r["id"]): episode_dict(r) for r in rows}

    def text_of(self, episode_id: int) -> str | None:
        """The summary an embedding is computed from."""
        found = self.ex.value("SELECT summary FROM episodes WHERE id = %s", (episode_id,))
        return None if found is None else str(found)

    def set_embedding(
        self, episode_id: int, blob: bytes | None, model_id: str | None, dim: int | None
    ) -> None:
        """Record (or clear) the vector of one episode."""
        self.ex.run(
            "UPDATE episodes SET embedding = %b, embedding_model = %s, embedding_dim = %s WHERE id = %s",
            (vector_param(blob), model_id, dim, episode_id),
        )

    def delete(self, episode_id: int) -> None:
        """Delete one episode."""
        self.ex.run("DELETE FROM episodes WHERE id = %s", (episode_id,))

    def newest_boundary(self, scope: Scope) -> str | None:
        """created_at of the newest episode in scope."""
        clause, params = where(scope)
        found = self.ex.value(f"SELECT MAX(created_at) FROM episodes WHERE {clause}", params)
        return str(found) if found else None

    def list_recent(self, scope: Scope, limit: int) -> list[Row]:
        """Newest first."""
        clause, params = where(scope)
        rows = self.ex.all(
            f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE {clause} ORDER BY created_at DESC, id DESC LIMIT %s",
            [*params, limit],
        )
        return [episode_dict(r) for r in rows]

    def count(self, scope: Scope) -> int:
        """Rows in scope."""
        clause, params = where(scope)
        return int(self.ex.value(f"SELECT COUNT(*) FROM episodes WHERE {clause}", params))


def insert_episode(ex: Executor, values: tuple[Any, ...]) -> int:
    """Insert one episode from (agent, project, channel, summary, keywords text, start, end, resolved,
    created_at, embedding bytes, model, dim); returns its id."""
    *head, blob, model, dim = values
    found = ex.value(
        "INSERT INTO episodes(agent_id, project_id, channel, summary, keywords, start_time, end_time, resolved, "
        "created_at, embedding, embedding_model, embedding_dim) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %b, %s, %s) RETURNING id",
        (*head, vector_param(blob), model, dim),
    )
    return int(found)


class PgProfiles:
    """``ProfileRows`` on PostgreSQL."""

    __slots__ = ("ex",)

    def __init__(self, ex: Executor) -> None:
        self.ex = ex

    def get(self, agent_id: str, project_id: str, user_id: str) -> Row | None:
        """The profile for exactly this key."""
        row = self.ex.one(
            "SELECT * FROM profiles WHERE agent_id = %s AND project_id = %s AND user_id = %s",
            (agent_id, project_id, user_id),
        )
        return None if row is None else profile_dict(row)

    def upsert(self, agent_id: str, project_id: str, user_id: str, content: str, when: str) -> None:
        """Replace the profile text (the one thing that is replaced, by design)."""
        upsert_profile(self.ex, (agent_id, project_id, user_id, content, when))

    def newest_in_scope(self, scope: Scope, limit: int = 3) -> list[Row]:
        """Up to ``limit`` profiles in scope, newest first."""
        clause, params = where(scope, has_channel=False)
        rows = self.ex.all(
            f"SELECT * FROM profiles WHERE {clause} ORDER BY updated_at DESC, user_id LIMIT %s",
            [*params, limit],
        )
        return [profile_dict(r) for r in rows]


def upsert_profile(ex: Executor, values: tuple[str, str, str, str, str]) -> None:
    """Insert or replace one profile (agent, project, user, content, updated_at)."""
    ex.run(
        "INSERT INTO profiles(agent_id, project_id, user_id, content, updated_at) VALUES (%s, %s, %s, %s, %s) "
        "ON CONFLICT (agent_id, project_id, user_id) DO UPDATE SET content = excluded.content, "
        "updated_at = excluded.updated_at",
        values,
    )
