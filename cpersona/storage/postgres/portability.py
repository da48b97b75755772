"""Export and import on PostgreSQL: the same records and outcomes as ``cpersona.storage.sqlite.portability``.

Export streams from one REPEATABLE READ snapshot through a server-side cursor
(bounded memory at any size). Import writes a batch per transaction: its memories with
one COPY and one ``INSERT ... ON CONFLICT DO NOTHING`` (the unique indexes are the dedup,
as for ``store``), episodes probing the same scope as ``store``.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any

from cpersona.storage.port_records import (
    DUPLICATE,
    INSERTED,
    KEPT,
    UPDATED,
    ImportedEpisode,
    ImportedMemory,
    ImportedProfile,
    ImportRecord,
)
from cpersona.storage.postgres.bulk import enqueue_many, insert_memories
from cpersona.storage.postgres.memories import PgMemories, insert_episode, upsert_profile
from cpersona.storage.postgres.migrations import current_version
from cpersona.storage.postgres.sql import Executor
from cpersona.storage.sqlite.tasks import EMBED

_MEMORY_EXPORT = (
    "id, agent_id, project_id, channel, msg_id, content, source, metadata, timestamp, created_at, "
    "recall_count, last_recalled_at, locked::int AS locked, embedding_model, embedding_dim"
)
_EPISODE_EXPORT = (
    "id, agent_id, project_id, channel, summary, keywords, start_time, end_time, resolved::int AS resolved, "
    "created_at, embedding_model, embedding_dim"
)
_PROFILE_EXPORT = "agent_id, project_id, user_id, content, updated_at"

Transaction = Callable[[bool], AbstractContextManager[Executor]]


class PgPortabilityRows:
    """``PortabilityRows`` on PostgreSQL; ``transaction(read_only)`` opens a snapshot or a write."""

    def __init__(self, transaction: Transaction) -> None:
        self.transaction = transaction

    def stream(
        self, agent_id: str | None, *, include_vectors: bool, chunk: int = 500
    ) -> Generator[tuple[str, dict[str, Any]], None, None]:
        """``("counts", {...})`` then memories, episodes, profiles in id (or key) order, one snapshot."""
        where, params = ("agent_id = %s", [agent_id]) if agent_id is not None else ("TRUE", [])
        with self.transaction(True) as ex:
            conn = ex.conn
            assert conn is not None
            counts = {
                t: int(ex.value(f"SELECT COUNT(*) FROM {t} WHERE {where}", params))
                for t in ("memories", "episodes", "profiles")
            }
            counts["schema_version"] = current_version(conn)
            yield "counts", counts
            vec = ", embedding" if include_vectors else ""
            queries = (
                ("memory", f"SELECT {_MEMORY_EXPORT}{vec} FROM memories WHERE {where} ORDER BY id"),
                ("episode", f"SELECT {_EPISODE_EXPORT}{vec} FROM episodes WHERE {where} ORDER BY id"),
                (
                    "profile",
                    f"SELECT {_PROFILE_EXPORT} FROM profiles WHERE {where} "
                    "ORDER BY agent_id, project_id, user_id",
                ),
            )
            for n, (kind, query) in enumerate(queries):
                yield from _server_side(conn, f"cpersona_export_{n}", query, params, kind, chunk)

    def write_batch(
        self, records: Sequence[ImportRecord], *, queued_at: str | None, active_model: tuple[str, int] | None
    ) -> tuple[list[str], int]:
        """Write ``records`` in one transaction; (outcome per record, rows queued for embedding).

        The batch's memories go in with one COPY and one INSERT (``storage/postgres/bulk.py``); episodes
        and profiles, few per export, one by one.
        """
        outcomes: list[str] = [""] * len(records)
        backfill: dict[str, list[int]] = {"memories": [], "episodes": []}
        with self.transaction(False) as ex:
            memories = [(n, r) for n, r in enumerate(records) if isinstance(r, ImportedMemory)]
            new_ids = insert_memories(ex, [r for _, r in memories])
            for (n, memory), new_id in zip(memories, new_ids, strict=True):
                outcomes[n] = DUPLICATE if new_id is None else INSERTED
                if new_id is not None and _needs_vector(
                    memory.row.embedding, _memory_model(memory), active_model
                ):
                    backfill["memories"].append(new_id)
            for n, other in enumerate(records):
                if isinstance(other, ImportedMemory):
                    continue
                outcome, new_id, has_vector, model = _write_one(ex, other)
                outcomes[n] = outcome
                if (
                    outcome == INSERTED
                    and new_id is not None
                    and (not has_vector or _differs(model, active_model))
                ):
                    backfill["episodes"].append(new_id)
            if queued_at is not None:
                for table, ids in backfill.items():
                    enqueue_many(ex, EMBED, table, ids, queued_at)
        queued = sum(len(ids) for ids in backfill.values()) if queued_at is not None else 0
        return outcomes, queued

    def probe_batch(self, records: Sequence[ImportRecord]) -> list[str]:
        """What ``write_batch`` would do, writing nothing (dry run)."""
        out: list[str] = []
        with self.transaction(True) as ex:
            for record in records:
                if isinstance(record, ImportedMemory):
                    out.append(DUPLICATE if PgMemories(ex).find_duplicate(record.row) else INSERTED)
                elif isinstance(record, ImportedEpisode):
                    out.append(DUPLICATE if _episode_duplicate(ex, record) else INSERTED)
                else:
                    out.append(_profile_outcome(ex, record))
        return out


def _server_side(
    conn: Any, name: str, query: str, params: list[Any], kind: str, chunk: int
) -> Iterator[tuple[str, dict[str, Any]]]:
    with conn.cursor(name=name) as cursor:
        cursor.itersize = chunk
        cursor.execute(query, params)
        for row in cursor:
            yield kind, dict(row)


def _episode_duplicate(ex: Executor, ep: ImportedEpisode) -> int | None:
    found = ex.value(
        "SELECT id FROM episodes WHERE agent_id = %s AND project_id = %s AND channel = %s AND summary = %s LIMIT 1",
        (ep.agent_id, ep.project_id, ep.channel, ep.summary),
    )
    return None if found is None else int(found)


def _profile_outcome(ex: Executor, profile: ImportedProfile) -> str:
    found = ex.value(
        "SELECT updated_at FROM profiles WHERE agent_id = %s AND project_id = %s AND user_id = %s",
        (profile.agent_id, profile.project_id, profile.user_id),
    )
    if found is None:
        return INSERTED
    return UPDATED if profile.updated_at > found else KEPT


def _model(model_id: str | None, dim: int | None, blob: bytes | None) -> tuple[str, int] | None:
    return (model_id, dim) if blob is not None and model_id and dim else None


def _memory_model(record: ImportedMemory) -> tuple[str, int] | None:
    new = record.row
    return _model(new.embedding_model, new.embedding_dim, new.embedding)


def _differs(model: tuple[str, int] | None, active_model: tuple[str, int] | None) -> bool:
    return active_model is not None and model != active_model


def _needs_vector(
    blob: bytes | None, model: tuple[str, int] | None, active_model: tuple[str, int] | None
) -> bool:
    """A new row is queued for embedding when it has no vector, or one of another model than the active one."""
    return blob is None or _differs(model, active_model)


def _write_one(
    ex: Executor, record: ImportedEpisode | ImportedProfile
) -> tuple[str, int | None, bool, tuple[str, int] | None]:
    if isinstance(record, ImportedEpisode):
        if _episode_duplicate(ex, record) is not None:
            return DUPLICATE, None, False, None
        new_id = insert_episode(
            ex,
            (
                record.agent_id,
                record.project_id,
                record.channel,
                record.summary,
                record.keywords,
                record.start_time,
                record.end_time,
                bool(record.resolved),
                record.created_at,
                record.embedding,
                record.embedding_model,
                record.embedding_dim,
            ),
        )
        model = _model(record.embedding_model, record.embedding_dim, record.embedding)
        return INSERTED, new_id, record.embedding is not None, model
    outcome = _profile_outcome(ex, record)
    if outcome in (INSERTED, UPDATED):
        upsert_profile(
            ex, (record.agent_id, record.project_id, record.user_id, record.content, record.updated_at)
        )
    return outcome, None, False, None
