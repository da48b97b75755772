"""PostgreSQL rows of ``memory_links``, in the same shapes as SQLite (docs/decisions.md#declared-associations)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cpersona.storage.postgres.sql import Executor
from cpersona.storage.values import LinkRow

_SELECT_FROM = (
    "SELECT l.from_id, l.relation, l.to_id, l.entity, l.entity_key, s.agent_id AS from_agent, "
    "t.agent_id AS to_agent FROM"
)
_JOINS = "JOIN memories s ON s.id = l.from_id LEFT JOIN memories t ON t.id = l.to_id"


def _rows(rows: list[dict[str, Any]]) -> list[LinkRow]:
    return [
        LinkRow(
            from_id=int(r["from_id"]),
            relation=str(r["relation"]),
            to_id=None if r["to_id"] is None else int(r["to_id"]),
            entity=r["entity"],
            entity_key=r["entity_key"],
            from_agent=str(r["from_agent"]),
            to_agent=r["to_agent"],
        )
        for r in rows
    ]


class PgLinks:
    """``LinkRows`` over one ``Executor``."""

    __slots__ = ("ex",)

    def __init__(self, ex: Executor) -> None:
        self.ex = ex

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
        inserted = self.ex.run(
            "INSERT INTO memory_links(from_id, relation, to_id, entity, entity_key, created_at) "
            "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
            (from_id, relation, to_id, entity, entity_key, when),
        )
        return inserted > 0

    def _by(
        self,
        column: str,
        values: Sequence[object],
        relation: str | None,
        limit: int | None,
        agent: str | None = None,
    ) -> list[LinkRow]:
        # The links are picked first (relation and agent filtered, LIMIT applied without a sort, so a
        # hub's index entries are read only up to the limit), then joined to their ends, oldest first.
        where = f"k.{column} = ANY(%s)"
        params: list[Any] = [list(values)]
        if relation is not None:
            where += " AND k.relation = %s"
            params.append(relation)
        if agent is not None:
            where += " AND EXISTS (SELECT 1 FROM memories a WHERE a.id = k.from_id AND a.agent_id = %s)"
            params.append(agent)
        tail = ""
        if limit is not None:
            tail = " LIMIT %s"
            params.append(int(limit))
        return _rows(
            self.ex.all(
                f"{_SELECT_FROM} (SELECT k.* FROM memory_links k WHERE {where}{tail}) l {_JOINS} ORDER BY l.id",
                params,
            )
        )

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
