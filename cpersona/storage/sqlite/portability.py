"""Portability SQL: stream rows out for export, write imported rows back with dedup.

Export reads in one snapshot (a deferred read transaction), in id order, a
chunk at a time, so memory stays bounded whatever the table size. Import
writes a batch of records per transaction; every record is probed against the
same unique-index scopes ``store`` uses (msg_id and content for memories,
summary for episodes) so a second import of the same file changes nothing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from cpersona.core.text import format_ts, utc_now
from cpersona.errors import DuplicateRow
from cpersona.storage.port_records import (
    DUPLICATE,
    INSERTED,
    UPDATED,
    ImportedEpisode,
    ImportedMemory,
    ImportedProfile,
    ImportRecord,
    Model,
    needs_vector,
    profile_outcome,
    vector_model,
)
from cpersona.storage.sql_text import agent_filter, exported_links
from cpersona.storage.sqlite.bulk_fts import (
    deferred_memory_fts,
    memory_count,
    merge_after_bulk,
    optimize_after_bulk,
)
from cpersona.storage.sqlite.db import Database
from cpersona.storage.sqlite.episodes import find_episode, insert_episode
from cpersona.storage.sqlite.import_tuning import import_connection
from cpersona.storage.sqlite.links import SqliteLinks
from cpersona.storage.sqlite.memories import SqliteMemories, insert_memory
from cpersona.storage.sqlite.migrations import current_version
from cpersona.storage.sqlite.profiles import profile_updated_at, upsert_profile
from cpersona.storage.sqlite.sql import SQLITE
from cpersona.storage.sqlite.supersede import SqliteSupersedeLinks
from cpersona.storage.sqlite.tasks import SqliteTasks
from cpersona.storage.supersede_interface import SUPERSEDE_RECORD, apply_imported_links, apply_lifecycle
from cpersona.storage.values import EMBED, EPISODES, MEMORIES, NewMemory

#: Rows fetched per round trip while streaming an export.
EXPORT_CHUNK = 500

_MEMORY_EXPORT = (
    "id, agent_id, project_id, channel, msg_id, content, source, metadata, timestamp, created_at, "
    "recall_count, last_recalled_at, locked, embedding_model, embedding_dim, expires_at, retired_at, retire_reason"
)
_EPISODE_EXPORT = (
    "id, agent_id, project_id, channel, summary, keywords, start_time, end_time, resolved, created_at, "
    "embedding_model, embedding_dim"
)
_PROFILE_EXPORT = "agent_id, project_id, user_id, content, updated_at"


class SqlitePortabilityRows:
    """``PortabilityRows`` over one SQLite ``Database``."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # -- export -----------------------------------------------------------------------
    def stream(
        self, agent_id: str | None, *, include_vectors: bool, chunk: int = EXPORT_CHUNK
    ) -> Generator[tuple[str, dict[str, Any]], None, None]:
        """Yield ``("counts", {...})`` then every row as ``(type, columns)`` in one consistent snapshot.

        Memories come first, then episodes, then profiles, each in id (or key) order.
        ``embedding`` (raw bytes) is present only when ``include_vectors``.
        """
        where, params = agent_filter(agent_id, SQLITE)
        with self.db.read() as conn:
            counts = {
                table: int(conn.execute(f"SELECT COUNT(*) FROM {table} WHERE {where}", params).fetchone()[0])
                for table in ("memories", "episodes", "profiles")
            }
            links_body, link_columns, link_params = exported_links(agent_id, SQLITE)
            counts["links"] = int(conn.execute(f"SELECT COUNT(*) {links_body}", link_params).fetchone()[0])
            counts["schema_version"] = current_version(conn)
            yield "counts", counts
            vec = ", embedding" if include_vectors else ""
            # Supersede links first, so an import knows which rows it must find again (by dedup key).
            yield from _chunked(
                conn,
                SUPERSEDE_RECORD,
                f"SELECT id AS older, superseded_by AS newer, superseded_at AS at FROM memories "
                f"INDEXED BY memories_superseded WHERE superseded_by IS NOT NULL AND {where} ORDER BY id",
                params,
                chunk,
            )
            blocks = (
                ", (SELECT COUNT(*) FROM memory_blocks b WHERE b.memory_id = memories.id) AS block_count"
                if include_vectors
                else ""
            )
            for kind, cols in _chunked(
                conn,
                "memory",
                f"SELECT {_MEMORY_EXPORT}{vec}{blocks} FROM memories WHERE {where} ORDER BY id",
                params,
                chunk,
            ):
                if cols.pop("block_count", 0) and cols.get("embedding_model"):  # a long memory's blocks
                    model, dim = cols["embedding_model"], cols["embedding_dim"]
                    cols["blocks"] = SqliteMemories(conn).blocks_of([cols["id"]], model, dim)
                yield kind, cols
            yield from _chunked(
                conn,
                "episode",
                f"SELECT {_EPISODE_EXPORT}{vec} FROM episodes WHERE {where} ORDER BY id",
                params,
                chunk,
            )
            yield from _chunked(
                conn,
                "profile",
                f"SELECT {_PROFILE_EXPORT} FROM profiles WHERE {where} "
                "ORDER BY agent_id, project_id, user_id",
                params,
                chunk,
            )
            # Links last: an import has placed every memory by the time it reads them.
            yield from _chunked(
                conn, "link", f"SELECT {link_columns} {links_body} ORDER BY l.id", link_params, chunk
            )

    # -- import -----------------------------------------------------------------------
    @contextmanager
    def bulk_load(self) -> Iterator[bool]:
        """Run an import's batches with the import's connection settings (``import_tuning``); at its
        end merge the keyword indexes: into one segment each after a large import
        (``bulk_fts.optimize_after_bulk``), by bounded ``merge`` steps otherwise (``merge_after_bulk``)."""
        conn = self.db.connection()
        with import_connection(conn):
            with self.db.read():
                before = memory_count(conn)
            yield False
            with self.db.write():
                total = memory_count(conn)
                if not optimize_after_bulk(conn, total - before, total):
                    merge_after_bulk(conn)

    def write_batch(
        self,
        records: Sequence[ImportRecord],
        *,
        queued_at: str | None,
        active_model: tuple[str, int] | None,
    ) -> tuple[list[str], int]:
        """Write ``records`` in one transaction; returns (outcome per record, rows queued for embedding).

        ``queued_at`` None means no back-fill queueing (no model configured; the
        start-up sweep queues them once one is). A row is queued when it has no
        vector or one of another model than ``active_model``.
        """
        outcomes: list[str] = []
        queued = 0
        memories = sum(isinstance(r, ImportedMemory) for r in records)
        with self.db.write() as conn, deferred_memory_fts(conn, memories) as indexed:
            for record in records:
                outcome, new_id, blob, model = _write_one(conn, record)
                outcomes.append(outcome)
                if outcome != INSERTED or new_id is None:
                    continue
                if isinstance(record, ImportedMemory):
                    indexed.append(new_id)
                if queued_at is None:
                    continue
                if needs_vector(blob, model, active_model):
                    table = MEMORIES if isinstance(record, ImportedMemory) else EPISODES
                    SqliteTasks(conn).enqueue(EMBED, table, new_id, queued_at)
                    queued += 1
        return outcomes, queued

    def memory_ids(self, rows: Sequence[NewMemory]) -> list[int | None]:
        """The stored row each of these (just imported) memories is: its dedup match, or None."""
        with self.db.read() as conn:
            found = [SqliteMemories(conn).find_duplicate(row) for row in rows]
        return [None if f is None else f[0] for f in found]

    def write_links(self, links: Sequence[tuple[int, str, int | None, str | None, str | None]]) -> list[bool]:
        """Declare (from_id, relation, to_id, entity, entity_key) links in one transaction; True = new."""
        when = format_ts(utc_now())
        with self.db.write() as conn:
            repo = SqliteLinks(conn)
            return [repo.add(f, rel, to, entity, key, when) for f, rel, to, entity, key in links]

    def mark_lifecycle(self, items: Sequence[tuple[NewMemory, str | None, str | None, str | None]]) -> int:
        """An import's expiries and retirements, in one transaction."""
        with self.db.write() as conn:
            memories = SqliteMemories(conn)

            def find(row: NewMemory) -> int | None:
                found = memories.find_duplicate(row)
                return None if found is None else found[0]

            return apply_lifecycle(find, SqliteSupersedeLinks(conn), items)

    def link_superseded(self, pairs: Sequence[tuple[NewMemory, NewMemory, str]]) -> tuple[int, int]:
        """An import's supersede links, in one transaction: (linked, skipped)."""
        with self.db.write() as conn:
            memories = SqliteMemories(conn)

            def find(row: NewMemory) -> int | None:
                found = memories.find_duplicate(row)
                return None if found is None else found[0]

            return apply_imported_links(find, SqliteSupersedeLinks(conn), pairs)

    def probe_batch(self, records: Sequence[ImportRecord]) -> list[str]:
        """What ``write_batch`` would do against the current database, writing nothing (dry run)."""
        conn = self.db.connection()
        out: list[str] = []
        with self.db.read():
            for record in records:
                if isinstance(record, ImportedMemory):
                    out.append(DUPLICATE if SqliteMemories(conn).find_duplicate(record.row) else INSERTED)
                elif isinstance(record, ImportedEpisode):
                    out.append(DUPLICATE if _episode_duplicate(conn, record) is not None else INSERTED)
                else:
                    out.append(_profile_outcome(conn, record))
        return out


def _chunked(
    conn: sqlite3.Connection, kind: str, sql: str, params: list[Any], chunk: int
) -> Iterator[tuple[str, dict[str, Any]]]:
    cursor = conn.execute(sql, params)
    while True:
        rows = cursor.fetchmany(chunk)
        if not rows:
            return
        for row in rows:
            # sqlite3.Row iterates over values, so pair them with the column names explicitly.
            yield kind, dict(zip(row.keys(), tuple(row), strict=True))


def _episode_duplicate(conn: sqlite3.Connection, ep: ImportedEpisode) -> int | None:
    return find_episode(conn, ep.agent_id, ep.project_id, ep.channel, ep.summary)


def _profile_outcome(conn: sqlite3.Connection, profile: ImportedProfile) -> str:
    stored = profile_updated_at(conn, profile.agent_id, profile.project_id, profile.user_id)
    return profile_outcome(stored, profile)


#: What writing one record did: (outcome, new id, its vector bytes, that vector's model).
Written = tuple[str, int | None, bytes | None, Model | None]


def _write_one(conn: sqlite3.Connection, record: ImportRecord) -> Written:
    if isinstance(record, ImportedMemory):
        new = record.row
        if SqliteMemories(conn).find_duplicate(new) is not None:
            return DUPLICATE, None, None, None
        try:
            new_id = insert_memory(
                conn,
                new,
                recall_count=record.recall_count,
                last_recalled_at=record.last_recalled_at,
                locked=record.locked,
            )
        except DuplicateRow:  # the unique indexes refuse what the probe could not see
            return DUPLICATE, None, None, None
        if record.blocks and new.embedding_model and new.embedding_dim:
            SqliteMemories(conn).set_blocks(new_id, record.blocks, new.embedding_model, new.embedding_dim)
        return (
            INSERTED,
            new_id,
            new.embedding,
            vector_model(new.embedding, new.embedding_model, new.embedding_dim),
        )
    if isinstance(record, ImportedEpisode):
        if _episode_duplicate(conn, record) is not None:
            return DUPLICATE, None, None, None
        model = vector_model(record.embedding, record.embedding_model, record.embedding_dim)
        return INSERTED, insert_episode(conn, record), record.embedding, model
    outcome = _profile_outcome(conn, record)
    if outcome in (INSERTED, UPDATED):
        upsert_profile(conn, record)
    return outcome, None, None, None
