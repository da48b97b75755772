"""SQLite rows of the ``memories`` table: insert with dedup, fetch, edit, lock, delete, list."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from cpersona.errors import DuplicateRow
from cpersona.storage.blocks import NewBlock, StoredBlock
from cpersona.storage.columns import MEMORY_INSERT_COLUMNS, MEMORY_SHAPE, memory_values
from cpersona.storage.scope import Scope
from cpersona.storage.sqlite.rows import SqliteTableRows
from cpersona.storage.sqlite.sql import source_clause, where
from cpersona.storage.values import NewMemory

_INSERT = f"INSERT INTO memories({MEMORY_INSERT_COLUMNS}) VALUES ({', '.join('?' * 15)})"


def _duplicate(exc: sqlite3.IntegrityError) -> bool:
    return "UNIQUE" in str(exc)


def insert_memory(
    conn: sqlite3.Connection,
    new: NewMemory,
    *,
    recall_count: int = 0,
    last_recalled_at: str | None = None,
    locked: bool = False,
) -> int:
    """Insert one row (with an import's recall statistics) and return its id.

    DuplicateRow when a unique index refuses it (a dedup race the probe could not see).
    """
    values = memory_values(new, recall_count=recall_count, last_recalled_at=last_recalled_at, locked=locked)
    try:
        cursor = conn.execute(_INSERT, values)
    except sqlite3.IntegrityError as exc:
        if not _duplicate(exc):
            raise
        raise DuplicateRow("a memory with this msg_id or content already exists in the scope") from exc
    return int(cursor.lastrowid or 0)


class SqliteMemories(SqliteTableRows):
    """``MemoryRows`` over one SQLite connection."""

    __slots__ = ()
    shape = MEMORY_SHAPE

    def find_duplicate(self, new: NewMemory) -> tuple[int, str] | None:
        """An existing row this one duplicates: (id, 'msg_id' | 'content'), or None.

        The probes use exactly the unique indexes' scopes, so what they miss the
        indexes still refuse (and ``insert`` reports that as a duplicate too).
        """
        if new.msg_id:
            row = self.conn.execute(
                # "msg_id <> ''" lets SQLite use the partial unique index instead of scanning the scope.
                "SELECT id FROM memories WHERE agent_id = ? AND project_id = ? AND msg_id = ? AND msg_id <> ''",
                (new.agent_id, new.project_id, new.msg_id),
            ).fetchone()
            if row:
                return int(row[0]), "msg_id"
        row = self.conn.execute(
            "SELECT id FROM memories WHERE agent_id = ? AND project_id = ? AND channel = ? AND content = ?",
            (new.agent_id, new.project_id, new.channel, new.content),
        ).fetchone()
        if row:
            return int(row[0]), "content"
        return None

    def insert(self, new: NewMemory) -> int:
        """Insert and return the new id (DuplicateRow when a unique index refuses it: a dedup race).

        The vector goes in with the row: a later UPDATE of ``embedding`` would bump
        the index generation and make every vector index reload in full.
        """
        return insert_memory(self.conn, new)

    def update_content(self, memory_id: int, content: str) -> None:
        """Replace content and drop the now-stale vector (the queue re-embeds it)."""
        try:
            self.conn.execute(
                "UPDATE memories SET content = ?, embedding = NULL, embedding_model = NULL, embedding_dim = NULL "
                "WHERE id = ?",
                (content, memory_id),
            )
        except sqlite3.IntegrityError as exc:
            if not _duplicate(exc):
                raise
            raise DuplicateRow("another memory in the same scope already has this content") from exc

    def set_blocks(self, memory_id: int, blocks: Sequence[NewBlock], model_id: str, dim: int) -> None:
        """Replace the memory's block vectors (none: drop them); the scope columns are copied from the row."""
        self.conn.execute("DELETE FROM memory_blocks WHERE memory_id = ?", (memory_id,))
        self.conn.executemany(
            "INSERT INTO memory_blocks(memory_id, block_index, char_start, char_end, agent_id, project_id, "
            "channel, embedding, embedding_model, embedding_dim) SELECT id, ?, ?, ?, agent_id, project_id, "
            "channel, ?, ?, ? FROM memories WHERE id = ?",
            [(b.index, b.start, b.end, b.embedding, model_id, dim, memory_id) for b in blocks],
        )

    def blocks_of(self, memory_ids: Sequence[int], model_id: str, dim: int) -> list[StoredBlock]:
        """The stored blocks of ``memory_ids`` with vectors of this model, by memory then index."""
        found: list[StoredBlock] = []
        for start in range(0, len(memory_ids), 5000):
            chunk = list(memory_ids[start : start + 5000])
            marks = ",".join("?" * len(chunk))
            found += [
                StoredBlock(int(r[0]), int(r[1]), int(r[2]), int(r[3]), bytes(r[4]))
                for r in self.conn.execute(
                    "SELECT memory_id, block_index, char_start, char_end, embedding FROM memory_blocks "
                    f"WHERE memory_id IN ({marks}) AND embedding_model = ? AND embedding_dim = ? "
                    "ORDER BY memory_id, block_index",
                    (*chunk, model_id, dim),
                )
            ]
        return found

    def without_lead(
        self, model_id: str, dim: int, min_chars: int, after_id: int, limit: int
    ) -> list[tuple[int, str, int]]:
        """(id, content, blocks held) of memories with a vector of this model, at least ``min_chars`` long
        and no lead block (index 0) of it, in id order after ``after_id`` (the back-fill sweep decides
        which of them need blocks: ``blocks.needs_blocks``)."""
        rows = self.conn.execute(
            "SELECT id, content, (SELECT COUNT(*) FROM memory_blocks b WHERE b.memory_id = m.id "
            "AND b.embedding_model = ? AND b.embedding_dim = ?) AS held FROM memories m WHERE id > ? "
            "AND embedding_model = ? AND embedding_dim = ? AND length(content) >= ? AND NOT EXISTS "
            "(SELECT 1 FROM memory_blocks b WHERE b.memory_id = m.id AND b.block_index = 0 "
            "AND b.embedding_model = ? AND b.embedding_dim = ?) ORDER BY id LIMIT ?",
            (model_id, dim, after_id, model_id, dim, min_chars, model_id, dim, limit),
        ).fetchall()
        return [(int(r[0]), str(r[1]), int(r[2])) for r in rows]

    def set_locked(self, memory_id: int, locked: bool) -> None:
        """Lock or unlock one row."""
        self.conn.execute("UPDATE memories SET locked = ? WHERE id = ?", (1 if locked else 0, memory_id))

    def mark_recalled(self, ids: Iterable[int], when: str) -> None:
        """Bump recall_count and last_recalled_at of the rows a recall returned."""
        self.conn.executemany(
            "UPDATE memories SET recall_count = recall_count + 1, last_recalled_at = ? WHERE id = ?",
            [(when, i) for i in ids],
        )

    def timeline(self, agent_id: str) -> list[tuple[int, str, str, str]]:
        """(id, timestamp, project_id, channel) of one agent's memories, in id (insertion) order."""
        rows = self.conn.execute(
            "SELECT id, COALESCE(timestamp, created_at), project_id, channel FROM memories "
            "WHERE agent_id = ? ORDER BY id",
            (agent_id,),
        ).fetchall()
        return [(int(r[0]), str(r[1] or ""), str(r[2]), str(r[3])) for r in rows]

    def ids_with_source(self, scope: Scope, source_id: str) -> list[int]:
        """Ids in scope whose ``source.id`` starts with ``source_id``."""
        clause, params = where(scope)
        source_sql, source_params = source_clause(source_id)
        rows = self.conn.execute(
            f"SELECT id FROM memories WHERE {clause}{source_sql}", [*params, *source_params]
        ).fetchall()
        return [r[0] for r in rows]

    def ids_in_period(self, scope: Scope, start: str | None, end: str | None) -> list[int]:
        """Ids in scope whose ``timestamp`` is in [start, end) (stored forms compare as text)."""
        clause, params = where(scope)
        bounds = [(">=", start), ("<", end)]
        extra = "".join(f" AND timestamp {op} ?" for op, value in bounds if value is not None)
        values = [value for _, value in bounds if value is not None]
        rows = self.conn.execute(
            f"SELECT id FROM memories WHERE {clause}{extra}", [*params, *values]
        ).fetchall()
        return [r[0] for r in rows]
