"""The SQLite engine's answers to ``HealthQueries``, ``HealthRepairs`` and ``MaintenanceRows``.

The SQL itself stays where it was written (``health_queries.py``, ``deep_queries.py``,
``repair.py``, ``port_merge.py``, ``port_channels.py``); these classes bind it to a
session's connection (or, for merges, to the database's write transaction).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

from cpersona.storage.health_reads import HealthReads
from cpersona.storage.maintenance_interface import (
    ChannelReport,
    ChannelRequest,
    FtsReport,
    MergeRequest,
    SchemaObject,
    VectorReport,
)
from cpersona.storage.sqlite import deep_health as dq
from cpersona.storage.sqlite import health as q
from cpersona.storage.sqlite import repair
from cpersona.storage.sqlite.channel_axis import migrate_channels
from cpersona.storage.sqlite.db import Database
from cpersona.storage.sqlite.merge import merge_agents
from cpersona.storage.sqlite.migrations import LATEST_VERSION
from cpersona.storage.sqlite.sql import SQLITE


class SqliteHealth(HealthReads):
    """``HealthQueries`` on one SQLite connection (read-only: works on a ``mode=ro`` view)."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        super().__init__(conn.execute, SQLITE)
        self.conn = conn

    def integrity_errors(self, limit: int = 20) -> list[str]:
        """``PRAGMA integrity_check`` messages; empty when the file is sound."""
        return q.integrity_errors(self.conn, limit)

    def schema_version(self) -> int:
        """The schema version recorded in the file."""
        return q.schema_version(self.conn)

    def latest_version(self) -> int:
        """The newest SQLite schema version."""
        return LATEST_VERSION

    def expected_objects(self) -> list[SchemaObject]:
        """Every index and trigger the migrations' DDL creates."""
        return q.expected_objects()

    def present_objects(self) -> set[tuple[str, str]]:
        """(type, name) of every index and trigger in the file."""
        return q.present_objects(self.conn)

    def keyword_reports(self, agent: str | None, sample: int) -> list[FtsReport]:
        """Every FTS5 index compared with its table through its docsize shadow table."""
        return [q.fts_report(self.conn, i.name, agent, sample) for i in q.FTS_INDEXES]

    def storage_facts(self) -> dict[str, Any]:
        """Page size / count / free list and the file and WAL sizes."""
        return q.storage_facts(self.conn)

    def vector_report(
        self, table: str, agent: str | None, model_id: str | None, dimension: int | None
    ) -> VectorReport:
        """Counts of rows needing a (new) vector."""
        return q.vector_report(self.conn, table, agent, model_id, dimension)

    def unqueued_vector_rows(
        self, table: str, agent: str | None, model_id: str | None, dimension: int | None, limit: int
    ) -> list[int]:
        """Ids needing a vector without an embedding task."""
        return q.unqueued_vector_rows(self.conn, table, agent, model_id, dimension, limit)

    def vector_shapes(self, agent: str | None) -> list[dict[str, Any]]:
        """Stored vectors per table, model and dimension."""
        return q.vector_shapes(self.conn, agent)

    def duplicate_groups(self, agent: str | None, limit: int) -> tuple[int, list[list[tuple[int, bool]]]]:
        """Memories sharing a dedup key."""
        return q.duplicate_groups(self.conn, agent, limit)

    def oversized_profiles(
        self, agent: str | None, cap: int, limit: int
    ) -> tuple[int, list[tuple[str, str, str, int]]]:
        """Profiles longer than ``cap``."""
        return q.oversized_profiles(self.conn, agent, cap, limit)

    def empty_rows(self, agent: str | None, limit: int) -> tuple[int, list[str]]:
        """Memories and episodes with empty text."""
        return q.empty_rows(self.conn, agent, limit)

    def invalid_json_rows(
        self, agent: str | None, limit: int
    ) -> tuple[int, list[tuple[int, str, str, bool]]]:
        """Memories whose source or metadata is not a JSON object."""
        return q.invalid_json_rows(self.conn, agent, limit)

    def _not_a_timestamp(self, column: str) -> tuple[str, list[Any]]:
        return f"NOT ({column} GLOB '{q.TS_GLOB}')", []

    def distributions(self, agent: str | None, limit: int = 50) -> dict[str, Any]:
        """Rows per agent and memories per project / channel."""
        return q.distributions(self.conn, agent, limit)

    def anonymous_sources(self, agent: str, limit: int) -> tuple[int, list[int]]:
        """Memories without a source id or name."""
        return dq.anonymous_sources(self.conn, agent, limit)

    def short_memories(self, agent: str, min_chars: int, limit: int) -> tuple[int, list[int]]:
        """Memories shorter than ``min_chars``."""
        return dq.short_memories(self.conn, agent, min_chars, limit)

    def profiles_with_newer_memories(self, agent: str) -> list[dict[str, Any]]:
        """Profiles with the memories that arrived after them."""
        return dq.profiles_with_newer_memories(self.conn, agent)

    def orphaned_episodes(self, agent: str, limit: int) -> tuple[int, list[int]]:
        """Episodes with no memory in their scope and range."""
        return dq.orphaned_episodes(self.conn, agent, limit)

    def recent_vectors(
        self, agent: str, model_id: str, dimension: int, limit: int
    ) -> list[tuple[int, bytes]]:
        """The agent's newest active-model vectors."""
        return dq.recent_vectors(self.conn, agent, model_id, dimension, limit)


class SqliteRepairs:
    """``HealthRepairs`` on the connection of an open write transaction."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def recreate(self, obj: SchemaObject) -> None:
        """Run the migration statement that creates a missing index or trigger."""
        repair.recreate(self.conn, obj)

    def rebuild_keyword_index(self, index_name: str) -> None:
        """FTS5 'rebuild' of one index."""
        repair.rebuild_fts(self.conn, index_name)

    def queue_embeddings(self, table: str, ids: Iterable[int], when: str) -> int:
        """Queue embedding tasks; how many were new."""
        return repair.queue_embeddings(self.conn, table, ids, when)

    def delete_unlocked_memories(self, ids: Iterable[int]) -> int:
        """Delete unlocked memories and their tasks."""
        return repair.delete_unlocked_memories(self.conn, ids)

    def cut_memory(self, rid: int, cap: int) -> bool:
        """Cut an unlocked memory to the cap."""
        return repair.cut_memory(self.conn, rid, cap)

    def cut_profile(self, agent: str, project: str, user: str, cap: int) -> bool:
        """Cut a profile to the cap."""
        return repair.cut_profile(self.conn, agent, project, user, cap)

    def wrap_invalid_json(self, rid: int, column: str, raw: str) -> bool:
        """Wrap a non-object source/metadata."""
        return repair.wrap_invalid_json(self.conn, rid, column, raw)

    def set_timestamp(self, table: str, key: Any, column: str, old: str, new: str) -> bool:
        """Rewrite one timestamp."""
        return repair.set_timestamp(self.conn, table, key, column, old, new)

    def replace_text(self, table: str, key: Any, column: str, old: str, new: str) -> bool:
        """Rewrite one text column (the secrets check's redaction)."""
        return repair.replace_text(self.conn, table, key, column, old, new)

    def delete_tasks(self, ids: Iterable[int]) -> int:
        """Remove queued tasks by id."""
        return repair.delete_tasks(self.conn, ids)


class SqliteMaintenanceRows:
    """``MaintenanceRows`` over one SQLite file."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def merge_agents(self, request: MergeRequest) -> dict[str, dict[str, int]]:
        """See ``cpersona.storage.sqlite.merge.merge_agents``."""
        return merge_agents(self.db, request)

    def migrate_channels(self, request: ChannelRequest) -> ChannelReport:
        """See ``cpersona.storage.sqlite.channel_axis.migrate_channels``."""
        return migrate_channels(self.db, request)
