"""PostgreSQL rows of ``memories``, in the same public shapes as SQLite.

Dedup is the unique indexes plus ``INSERT ... ON CONFLICT DO NOTHING``: a clash
returns no id (skip, never upsert) and leaves the surrounding transaction usable,
where a raised unique violation would abort it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import psycopg

from cpersona.errors import DuplicateRow
from cpersona.storage.blocks import NewBlock, StoredBlock
from cpersona.storage.columns import MEMORY_INSERT_COLUMNS, MEMORY_SHAPE, memory_values
from cpersona.storage.postgres.rows import PgTableRows, pg_values
from cpersona.storage.postgres.sql import Executor, source_clause, vector_param, where
from cpersona.storage.scope import Scope
from cpersona.storage.values import NewMemory

_INSERT = (
    f"INSERT INTO memories({MEMORY_INSERT_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %b, %s, %s, "
    "%s, %s, %s) ON CONFLICT DO NOTHING RETURNING id"
)


#: The recall bookkeeping commits without waiting for its WAL flush. The counters only steer the
#: recent-recall penalty; a crash of the database server (not of this process) may lose the bumps of the
#: last ~0.6 s (3 x wal_writer_delay), never tear a row, as SQLite's WAL with synchronous=NORMAL may lose
#: its last commits on power loss. Every other write keeps the server's durability (docs/decisions.md).
_BOOKKEEPING = "SET LOCAL synchronous_commit = off"


def find_memory(ex: Executor, new: NewMemory, agent_id: str | None = None) -> tuple[int, str] | None:
    """A row of ``agent_id`` (default ``new``'s) that ``new`` duplicates: (id, 'msg_id' | 'content'), or None.

    The probes use the unique indexes (``md5`` of the text, then the text itself).
    """
    agent = new.agent_id if agent_id is None else agent_id
    if new.msg_id:
        found = ex.value(
            "SELECT id FROM memories WHERE agent_id = %s AND project_id = %s AND md5(msg_id) = md5(%s) "
            "AND msg_id = %s AND msg_id <> ''",
            (agent, new.project_id, new.msg_id, new.msg_id),
        )
        if found is not None:
            return int(found), "msg_id"
    found = ex.value(
        "SELECT id FROM memories WHERE agent_id = %s AND project_id = %s AND channel = %s "
        "AND md5(content) = md5(%s) AND content = %s",
        (agent, new.project_id, new.channel, new.content, new.content),
    )
    return None if found is None else (int(found), "content")


def insert_memory(
    ex: Executor,
    new: NewMemory,
    *,
    recall_count: int = 0,
    last_recalled_at: str | None = None,
    locked: bool = False,
) -> int:
    """``INSERT ... ON CONFLICT DO NOTHING RETURNING id``; DuplicateRow when nothing was inserted."""
    values = memory_values(new, recall_count=recall_count, last_recalled_at=last_recalled_at, locked=locked)
    found = ex.value(_INSERT, pg_values(values))
    if found is None:
        raise DuplicateRow("a memory with this msg_id or content already exists in the scope")
    return int(found)


class PgMemories(PgTableRows):
    """``MemoryRows`` on PostgreSQL."""

    __slots__ = ()
    shape = MEMORY_SHAPE

    def find_duplicate(self, new: NewMemory) -> tuple[int, str] | None:
        """An existing row ``new`` duplicates: (id, 'msg_id' | 'content'), or None (probes use the unique indexes)."""
        return find_memory(self.ex, new)

    def insert(self, new: NewMemory) -> int:
        """Insert and return the new id; DuplicateRow when a unique index refuses it (a dedup race)."""
        return insert_memory(self.ex, new)

    def update_content(self, memory_id: int, content: str) -> None:
        """Replace content and drop the stale vector; DuplicateRow on a content clash (under a savepoint)."""
        try:
            with self.ex.savepoint():
                self.ex.run(
                    "UPDATE memories SET content = %s, embedding = NULL, embedding_model = NULL, "
                    "embedding_dim = NULL WHERE id = %s",
                    (content, memory_id),
                )
                self.ex.run("DELETE FROM memory_blocks WHERE memory_id = %s", (memory_id,))
        except psycopg.errors.UniqueViolation as exc:
            raise DuplicateRow("another memory in the same scope already has this content") from exc

    def set_blocks(self, memory_id: int, blocks: Sequence[NewBlock], model_id: str, dim: int) -> None:
        """Replace the memory's block vectors (none: drop them); the scope columns are copied from the row."""
        self.ex.run("DELETE FROM memory_blocks WHERE memory_id = %s", (memory_id,))
        for b in blocks:
            self.ex.run(
                "INSERT INTO memory_blocks(memory_id, block_index, char_start, char_end, agent_id, project_id, "
                "channel, embedding, embedding_model, embedding_dim) SELECT id, %s, %s, %s, agent_id, project_id, "
                "channel, %b, %s, %s FROM memories WHERE id = %s",
                (b.index, b.start, b.end, vector_param(b.embedding), model_id, dim, memory_id),
            )

    def blocks_of(self, memory_ids: Sequence[int], model_id: str, dim: int) -> list[StoredBlock]:
        """The stored blocks of ``memory_ids`` with vectors of this model, by memory then index."""
        if not memory_ids:
            return []
        rows = self.ex.all_binary(
            "SELECT memory_id, block_index, char_start, char_end, embedding FROM memory_blocks "
            "WHERE memory_id = ANY(%s) AND embedding_model = %s AND embedding_dim = %s "
            "ORDER BY memory_id, block_index",
            [list(memory_ids), model_id, dim],
        )
        return [
            StoredBlock(
                int(r["memory_id"]),
                int(r["block_index"]),
                int(r["char_start"]),
                int(r["char_end"]),
                bytes(r["embedding"]),
            )
            for r in rows
        ]

    def without_lead(
        self, model_id: str, dim: int, min_chars: int, after_id: int, limit: int
    ) -> list[tuple[int, str, int]]:
        """(id, content, blocks held) of memories with a vector of this model, at least ``min_chars`` long
        and no lead block (index 0) of it, in id order after ``after_id`` (the back-fill sweep decides
        which of them need blocks: ``blocks.needs_blocks``)."""
        rows = self.ex.all(
            "SELECT id, content, (SELECT COUNT(*) FROM memory_blocks b WHERE b.memory_id = m.id "
            "AND b.embedding_model = %s AND b.embedding_dim = %s) AS held FROM memories m WHERE id > %s "
            "AND embedding_model = %s AND embedding_dim = %s AND length(content) >= %s AND NOT EXISTS "
            "(SELECT 1 FROM memory_blocks b WHERE b.memory_id = m.id AND b.block_index = 0 "
            "AND b.embedding_model = %s AND b.embedding_dim = %s) ORDER BY id LIMIT %s",
            (model_id, dim, after_id, model_id, dim, min_chars, model_id, dim, limit),
        )
        return [(int(r["id"]), str(r["content"]), int(r["held"])) for r in rows]

    def set_locked(self, memory_id: int, locked: bool) -> None:
        """Lock or unlock one row."""
        self.ex.run("UPDATE memories SET locked = %s WHERE id = %s", (locked, memory_id))

    def mark_recalled(self, ids: Iterable[int], when: str) -> None:
        """Bump recall_count and last_recalled_at of the rows a recall returned (one statement).

        In a transaction (the recall's own bookkeeping write, services/recaller.py) its commit does not wait
        for the WAL flush: see ``_BOOKKEEPING``.
        """
        chosen = sorted(set(ids))  # a fixed order: concurrent recalls lock rows in the same sequence
        if not chosen:
            return
        update = (
            "UPDATE memories SET recall_count = recall_count + 1, last_recalled_at = %s WHERE id = ANY(%s)"
        )
        conn = self.ex.conn
        if conn is None:
            self.ex.run(update, (when, chosen))
            return
        with conn.pipeline():  # both statements in one round trip
            conn.execute(_BOOKKEEPING)
            conn.execute(update, (when, chosen))

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

    def ids_in_period(self, scope: Scope, start: str | None, end: str | None) -> list[int]:
        """Ids in scope whose ``timestamp`` is in [start, end) (stored forms compare as text)."""
        clause, params = where(scope)
        bounds = [(">=", start), ("<", end)]
        extra = "".join(f' AND timestamp COLLATE "C" {op} %s' for op, value in bounds if value is not None)
        values = [value for _, value in bounds if value is not None]
        rows = self.ex.all(f"SELECT id FROM memories WHERE {clause}{extra}", [*params, *values])
        return [int(r["id"]) for r in rows]
