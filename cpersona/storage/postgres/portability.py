"""Export and import on PostgreSQL: the same records, outcomes and rules (``storage.port_records``) as SQLite.

Export streams from one REPEATABLE READ snapshot through a server-side cursor
(bounded memory at any size). Import writes a batch per transaction: its memories with
one COPY and one ``INSERT ... ON CONFLICT DO NOTHING`` (the unique indexes are the dedup,
as for ``store``), episodes probing the same scope as ``store``.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from cpersona.core.text import format_ts, utc_now
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
from cpersona.storage.postgres.bulk import (
    defer_postings,
    enqueue_many,
    insert_memories,
    postings_index_deferred,
)
from cpersona.storage.postgres.episodes import find_episode, insert_episode
from cpersona.storage.postgres.links import PgLinks
from cpersona.storage.postgres.memories import PgMemories, find_memory
from cpersona.storage.postgres.migrations import current_version
from cpersona.storage.postgres.profiles import profile_updated_at, upsert_profile
from cpersona.storage.postgres.sql import POSTGRES, Executor
from cpersona.storage.postgres.statistics import (
    ensure_statistics,
    refresh_due,
    refresh_statistics,
    stored_rows,
)
from cpersona.storage.postgres.supersede import PgSupersedeLinks
from cpersona.storage.sql_text import agent_filter, exported_links
from cpersona.storage.supersede_interface import SUPERSEDE_RECORD, apply_imported_links, apply_lifecycle
from cpersona.storage.values import EMBED, EPISODES, MEMORIES, NewMemory

_MEMORY_EXPORT = (
    "id, agent_id, project_id, channel, msg_id, content, source, metadata, timestamp, created_at, "
    "recall_count, last_recalled_at, locked::int AS locked, embedding_model, embedding_dim, expires_at, "
    "retired_at, retire_reason"
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
        self._written = 0  # memories and episodes inserted by write_batch (bulk_load's statistics rule)
        self._deferred = False  # inside a bulk_load whose memories are posted at its end

    def stream(
        self, agent_id: str | None, *, include_vectors: bool, chunk: int = 500
    ) -> Generator[tuple[str, dict[str, Any]], None, None]:
        """``("counts", {...})`` then memories, episodes, profiles in id (or key) order, one snapshot."""
        where, params = agent_filter(agent_id, POSTGRES)
        with self.transaction(True) as ex:
            conn = ex.conn
            assert conn is not None
            counts = {
                t: int(ex.value(f"SELECT COUNT(*) FROM {t} WHERE {where}", params))
                for t in ("memories", "episodes", "profiles")
            }
            links_body, link_columns, link_params = exported_links(agent_id, POSTGRES)
            counts["links"] = int(ex.value(f"SELECT COUNT(*) {links_body}", link_params))
            counts["schema_version"] = current_version(conn)
            yield "counts", counts
            vec = ", embedding" if include_vectors else ""
            blocks = (
                ", (SELECT COUNT(*) FROM memory_blocks b WHERE b.memory_id = memories.id) AS block_count"
                if include_vectors
                else ""
            )
            queries = (
                # Supersede links first, so an import knows which rows it must find again (by dedup key).
                (
                    SUPERSEDE_RECORD,
                    "SELECT id AS older, superseded_by AS newer, superseded_at AS at FROM memories "
                    f"WHERE superseded_by IS NOT NULL AND {where} ORDER BY id",
                ),
                ("memory", f"SELECT {_MEMORY_EXPORT}{vec}{blocks} FROM memories WHERE {where} ORDER BY id"),
                ("episode", f"SELECT {_EPISODE_EXPORT}{vec} FROM episodes WHERE {where} ORDER BY id"),
                (
                    "profile",
                    f"SELECT {_PROFILE_EXPORT} FROM profiles WHERE {where} "
                    "ORDER BY agent_id, project_id, user_id",
                ),
            )
            for n, (kind, query) in enumerate(queries):
                for kind_, cols in _server_side(conn, f"cpersona_export_{n}", query, params, kind, chunk):
                    if cols.pop("block_count", 0) and cols.get("embedding_model"):  # a long memory's blocks
                        model, dim = cols["embedding_model"], cols["embedding_dim"]
                        cols["blocks"] = PgMemories(ex).blocks_of([cols["id"]], model, dim)
                    yield kind_, cols
            # Links last: an import has placed every memory by the time it reads them.
            link_query = f"SELECT {link_columns} {links_body} ORDER BY l.id"
            yield from _server_side(conn, "cpersona_export_links", link_query, link_params, "link", chunk)

    def write_batch(
        self, records: Sequence[ImportRecord], *, queued_at: str | None, active_model: tuple[str, int] | None
    ) -> tuple[list[str], int]:
        """Write ``records`` in one transaction; (outcome per record, rows queued for embedding).

        The batch's memories go in with one COPY and one INSERT (``storage/postgres/bulk.py``); episodes
        and profiles, few per export, one by one.
        """
        outcomes: list[str] = [""] * len(records)
        backfill: dict[str, list[int]] = {MEMORIES: [], EPISODES: []}
        with self.transaction(False) as ex:
            # The batch is one transaction: a crash before its commit loses only this batch. Not waiting
            # for the WAL flush at commit means a crash of the database server (not of this process) may
            # also lose the batches committed in its last ~0.6 s (3 x wal_writer_delay), never half a
            # batch; re-running the import writes exactly those again (dedup). docs/decisions.md.
            ex.run("SET LOCAL synchronous_commit = off")
            if self._deferred:
                defer_postings(ex)  # queued by the insert trigger, posted when bulk_load ends (bulk.py)
            memories = [(n, r) for n, r in enumerate(records) if isinstance(r, ImportedMemory)]
            new_ids = insert_memories(ex, [r for _, r in memories])
            for (n, memory), new_id in zip(memories, new_ids, strict=True):
                outcomes[n] = DUPLICATE if new_id is None else INSERTED
                new = memory.row
                model = vector_model(new.embedding, new.embedding_model, new.embedding_dim)
                if new_id is not None and needs_vector(new.embedding, model, active_model):
                    backfill[MEMORIES].append(new_id)
                if new_id is not None and memory.blocks and model is not None:
                    PgMemories(ex).set_blocks(new_id, memory.blocks, *model)
            for n, other in enumerate(records):
                if isinstance(other, ImportedMemory):
                    continue
                outcome, new_id, blob, model = _write_one(ex, other)
                outcomes[n] = outcome
                if outcome == INSERTED and new_id is not None and needs_vector(blob, model, active_model):
                    backfill[EPISODES].append(new_id)
            if queued_at is not None:
                for table, ids in backfill.items():
                    enqueue_many(ex, EMBED, table, ids, queued_at)
        queued = sum(len(ids) for ids in backfill.values()) if queued_at is not None else 0
        self._written += sum(
            outcome == INSERTED and not isinstance(record, ImportedProfile)
            for outcome, record in zip(outcomes, records, strict=True)
        )
        return outcomes, queued

    @contextmanager
    def bulk_load(self) -> Iterator[bool]:
        """Into an empty keyword index, the memories are posted and the postings' read index built once
        when the block ends;
        then the recall tables' planner statistics are refreshed (statistics.refresh_statistics) when
        the block wrote enough rows to make them stale (``refresh_due``), else only those of tables
        that have none are made."""
        with self.transaction(True) as ex:
            pool = ex.pool
            before = stored_rows(ex)
        written_at_start = self._written
        with postings_index_deferred(self.transaction) as deferred:
            self._deferred = deferred
            try:
                yield deferred
            finally:
                self._deferred = False
        # Autocommit, a statement at a time: a refusal (a role that does not own a table) is logged by
        # refresh_statistics and cannot leave a failed transaction behind.
        if refresh_due(before, self._written - written_at_start):
            refresh_statistics(Executor(pool))
        else:
            ensure_statistics(Executor(pool))

    def memory_ids(self, rows: Sequence[NewMemory]) -> list[int | None]:
        """The stored row each of these (just imported) memories is: its dedup match, or None."""
        with self.transaction(True) as ex:
            found = [find_memory(ex, row) for row in rows]
        return [None if f is None else f[0] for f in found]

    def write_links(self, links: Sequence[tuple[int, str, int | None, str | None, str | None]]) -> list[bool]:
        """Declare (from_id, relation, to_id, entity, entity_key) links in one transaction; True = new."""
        when = format_ts(utc_now())
        with self.transaction(False) as ex:
            repo = PgLinks(ex)
            return [repo.add(f, rel, to, entity, key, when) for f, rel, to, entity, key in links]

    def mark_lifecycle(self, items: Sequence[tuple[NewMemory, str | None, str | None, str | None]]) -> int:
        """An import's expiries and retirements, in one transaction."""
        with self.transaction(False) as ex:

            def find(row: NewMemory) -> int | None:
                found = find_memory(ex, row)
                return None if found is None else found[0]

            return apply_lifecycle(find, PgSupersedeLinks(ex), items)

    def link_superseded(self, pairs: Sequence[tuple[NewMemory, NewMemory, str]]) -> tuple[int, int]:
        """An import's supersede links, in one transaction: (linked, skipped)."""
        with self.transaction(False) as ex:
            # The batch's rows found by content in one statement (a round trip per row made the
            # links 4x slower than SQLite's); a row with a msg_id is probed as store probes it.
            by_content = _content_ids(ex, {row for pair in pairs for row in pair[:2] if not row.msg_id})

            def find(row: NewMemory) -> int | None:
                if not row.msg_id:
                    return by_content.get(row)
                found = find_memory(ex, row)
                return None if found is None else found[0]

            return apply_imported_links(find, PgSupersedeLinks(ex), pairs)

    def probe_batch(self, records: Sequence[ImportRecord]) -> list[str]:
        """What ``write_batch`` would do, writing nothing (dry run)."""
        out: list[str] = []
        with self.transaction(True) as ex:
            for record in records:
                if isinstance(record, ImportedMemory):
                    out.append(DUPLICATE if find_memory(ex, record.row) else INSERTED)
                elif isinstance(record, ImportedEpisode):
                    out.append(DUPLICATE if _episode_duplicate(ex, record) is not None else INSERTED)
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
    return find_episode(ex, ep.agent_id, ep.project_id, ep.channel, ep.summary)


def _profile_outcome(ex: Executor, profile: ImportedProfile) -> str:
    stored = profile_updated_at(ex, profile.agent_id, profile.project_id, profile.user_id)
    return profile_outcome(stored, profile)


def _write_one(
    ex: Executor, record: ImportedEpisode | ImportedProfile
) -> tuple[str, int | None, bytes | None, Model | None]:
    """(outcome, new id, its vector bytes, that vector's model) of one episode or profile record."""
    if isinstance(record, ImportedEpisode):
        if _episode_duplicate(ex, record) is not None:
            return DUPLICATE, None, None, None
        model = vector_model(record.embedding, record.embedding_model, record.embedding_dim)
        return INSERTED, insert_episode(ex, record), record.embedding, model
    outcome = _profile_outcome(ex, record)
    if outcome in (INSERTED, UPDATED):
        upsert_profile(ex, record)
    return outcome, None, None, None


def _content_ids(ex: Executor, rows: set[NewMemory]) -> dict[NewMemory, int]:
    """The stored id of each row duplicating one of ``rows`` by content (its scope and text), through
    the ``memories_dedup_content`` index: the content probe of ``find_memory``, for a batch at once."""
    ordered = list(rows)
    if not ordered:
        return {}
    found = ex.all(
        # A scalar subquery per row: one probe of the unique index each (a join was planned as a
        # scan of the agent's rows with md5 on every one).
        "SELECT v.i, (SELECT m.id FROM memories m WHERE m.agent_id = v.agent AND m.project_id = v.project "
        "AND m.channel = v.channel AND md5(m.content) = md5(v.content) AND m.content = v.content) AS id "
        "FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[]) WITH ORDINALITY "
        "AS v(agent, project, channel, content, i)",
        (
            [r.agent_id for r in ordered],
            [r.project_id for r in ordered],
            [r.channel for r in ordered],
            [r.content for r in ordered],
        ),
    )
    return {ordered[int(r["i"]) - 1]: int(r["id"]) for r in found if r["id"] is not None}
