"""PostgreSQL rows of ``memory_links``, in the same shapes as SQLite (docs/decisions.md#declared-associations)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cpersona.storage.interface import LinkRow
from cpersona.storage.postgres.sql import Executor

_SELECT = (
    "SELECT l.from_id, l.relation, l.to_id, l.entity, l.entity_key, s.agent_id AS from_agent, "
    "t.agent_id AS to_agent FROM memory_links l JOIN memories s ON s.id = l.from_id "
    "LEFT JOIN memories t ON t.id = l.to_id"
)


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

    def outgoing(self, ids: Sequence[int]) -> list[LinkRow]:
        """Links declared by these memories (to memories and to entities), oldest first."""
        return _rows(self.ex.all(f"{_SELECT} WHERE l.from_id = ANY(%s) ORDER BY l.id", (list(ids),)))

    def incoming(self, ids: Sequence[int]) -> list[LinkRow]:
        """Links pointing at these memories, oldest first."""
        return _rows(self.ex.all(f"{_SELECT} WHERE l.to_id = ANY(%s) ORDER BY l.id", (list(ids),)))

    def into_entity(self, agent_id: str, keys: Sequence[str]) -> list[LinkRow]:
        """Links from ``agent_id``'s memories to these entities (by key): entities are per agent."""
        return _rows(
            self.ex.all(
                f"{_SELECT} WHERE l.entity_key = ANY(%s) AND s.agent_id = %s ORDER BY l.id",
                (list(keys), agent_id),
            )
        )
