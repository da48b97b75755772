"""SQLite supersede links (``SupersedeLinks``): two columns on ``memories``, migration 4."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from cpersona.storage.scope import Scope
from cpersona.storage.shared_reads import SupersedeReads, link_of
from cpersona.storage.sqlite.sql import SQLITE, where
from cpersona.storage.supersede_interface import Link

_CHUNK = 500


class SqliteSupersedeLinks(SupersedeReads):
    """``SupersedeLinks`` over one SQLite connection."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        super().__init__(conn.execute, SQLITE)
        self.conn = conn

    def _links(self, column: str, ids: Sequence[int], limit: int | None = None) -> list[Link]:
        found: list[Link] = []
        ordered = sorted(ids) if limit is not None else list(ids)  # chunks in order: the cut stays ordered
        for start in range(0, len(ordered), _CHUNK):
            chunk = ordered[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            # Bounded: ordered by (column, id) so the cut is deterministic, and never more than asked.
            tail = "" if limit is None else f" ORDER BY {column}, id LIMIT {int(limit) - len(found)}"
            rows = self.conn.execute(
                f"SELECT id, superseded_by, superseded_at FROM memories "
                f"WHERE superseded_by IS NOT NULL AND {column} IN ({marks}){tail}",
                chunk,
            ).fetchall()
            found.extend(link_of(r) for r in rows)
            if limit is not None and len(found) >= limit:
                break
        return found

    def successors(self, ids: Sequence[int]) -> dict[int, Link]:
        """The link of each superseded id in ``ids``."""
        return {link.older: link for link in self._links("id", ids)}

    def predecessors(self, newer_ids: Sequence[int], limit: int | None = None) -> list[Link]:
        """Links whose newer row is in ``newer_ids`` (the first ``limit`` by newer, older id)."""
        return self._links("superseded_by", newer_ids, limit)

    def mark(self, older_ids: Sequence[int], newer_id: int, at: str) -> None:
        """Mark ``older_ids`` superseded by ``newer_id``."""
        self.conn.executemany(
            "UPDATE memories SET superseded_by = ?, superseded_at = ? WHERE id = ?",
            [(newer_id, at, rid) for rid in older_ids],
        )

    def mark_many(self, links: Sequence[tuple[int, int, str]]) -> None:
        """Mark each (older, newer, at)."""
        self.conn.executemany(
            "UPDATE memories SET superseded_by = ?, superseded_at = ? WHERE id = ?",
            [(newer, at, older) for older, newer, at in links],
        )

    def hidden_ids(
        self, scope: Scope, *, superseded: bool = True, retired: bool = True, now: str | None = None
    ) -> set[int]:
        """Superseded and / or retired ids in ``scope``, and those expired by ``now`` (each partial
        index holds only those rows)."""
        clause, params = where(scope)
        found: set[int] = set()
        if now is not None:
            rows = self.conn.execute(
                f"SELECT id FROM memories INDEXED BY memories_expiring WHERE expires_at IS NOT NULL "
                f"AND expires_at <= ? AND {clause}",
                [now, *params],
            ).fetchall()
            found.update(int(r[0]) for r in rows)
        for wanted, index, column in (
            (superseded, "memories_superseded", "superseded_by"),
            (retired, "memories_retired", "retired_at"),
        ):
            if wanted:
                rows = self.conn.execute(
                    f"SELECT id FROM memories INDEXED BY {index} WHERE {column} IS NOT NULL AND {clause}",
                    params,
                ).fetchall()
                found.update(int(r[0]) for r in rows)
        return found

    def set_expiry(self, memory_id: int, at: str | None) -> None:
        """Let one memory expire at ``at`` (None: never)."""
        self.conn.execute("UPDATE memories SET expires_at = ? WHERE id = ?", (at, memory_id))

    def set_retired(self, memory_id: int, at: str | None, reason: str | None) -> None:
        """Retire (or, ``at`` None, bring back) one memory."""
        self.conn.execute(
            "UPDATE memories SET retired_at = ?, retire_reason = ? WHERE id = ?",
            (at, reason if at is not None else None, memory_id),
        )
