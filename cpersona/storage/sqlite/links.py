"""SQLite rows of ``memory_links``: the associations agents declare (docs/decisions.md#declared-associations)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from cpersona.storage.values import LinkRow

#: Ids per ``IN (...)`` list (far below SQLite's bound variables limit).
_CHUNK = 500

# Every read names both ends' agents: the service decides what the caller may see from them.
_SELECT_FROM = (
    "SELECT l.from_id, l.relation, l.to_id, l.entity, l.entity_key, s.agent_id AS from_agent, "
    "t.agent_id AS to_agent FROM"
)
_JOINS = "JOIN memories s ON s.id = l.from_id LEFT JOIN memories t ON t.id = l.to_id"


def _rows(cursor: sqlite3.Cursor) -> list[LinkRow]:
    return [
        LinkRow(
            from_id=int(r[0]),
            relation=str(r[1]),
            to_id=None if r[2] is None else int(r[2]),
            entity=r[3],
            entity_key=r[4],
            from_agent=str(r[5]),
            to_agent=r[6],
        )
        for r in cursor.fetchall()
    ]


class SqliteLinks:
    """``LinkRows`` over one SQLite connection."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def add(
        self,
        from_id: int,
        relation: str,
        to_id: int | None,
        entity: str | None,
        entity_key: str | None,
        when: str,
    ) -> bool:
        """Record one link; False when the same link was already declared (nothing changes)."""
        cursor = self.conn.execute(
            "INSERT OR IGNORE INTO memory_links(from_id, relation, to_id, entity, entity_key, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (from_id, relation, to_id, entity, entity_key, when),
        )
        return cursor.rowcount > 0

    def _by(
        self,
        column: str,
        values: Sequence[object],
        relation: str | None,
        limit: int | None,
        agent: str | None = None,
    ) -> list[LinkRow]:
        # The links are picked first (relation and agent filtered, LIMIT applied, in the index's
        # order: (column, rowid), so oldest first), then joined to their ends: a hub's other links are
        # never read, let alone joined.
        found: list[LinkRow] = []
        for start in range(0, len(values), _CHUNK):
            chunk = list(values[start : start + _CHUNK])
            marks = ", ".join("?" * len(chunk))
            where = f"k.{column} IN ({marks})"
            params: list[object] = list(chunk)
            if relation is not None:
                where += " AND k.relation = ?"
                params.append(relation)
            if agent is not None:
                where += " AND EXISTS (SELECT 1 FROM memories a WHERE a.id = k.from_id AND a.agent_id = ?)"
                params.append(agent)
            tail = ""
            if limit is not None:
                tail = " LIMIT ?"
                params.append(limit - len(found))
            cursor = self.conn.execute(
                f"{_SELECT_FROM} (SELECT k.* FROM memory_links k WHERE {where}{tail}) l {_JOINS} ORDER BY l.id",
                params,
            )
            found.extend(_rows(cursor))
            if limit is not None and len(found) >= limit:
                break
        return found

    def outgoing(
        self, ids: Sequence[int], *, relation: str | None = None, limit: int | None = None
    ) -> list[LinkRow]:
        """Links declared by these memories (to memories and to entities), oldest first."""
        return self._by("from_id", ids, relation, limit)

    def incoming(
        self, ids: Sequence[int], *, relation: str | None = None, limit: int | None = None
    ) -> list[LinkRow]:
        """Links pointing at these memories, oldest first."""
        return self._by("to_id", ids, relation, limit)

    def into_entity(
        self, agent_id: str, keys: Sequence[str], *, relation: str | None = None, limit: int | None = None
    ) -> list[LinkRow]:
        """Links from ``agent_id``'s memories to these entities (by key): entities are per agent."""
        return self._by("entity_key", keys, relation, limit, agent_id)
