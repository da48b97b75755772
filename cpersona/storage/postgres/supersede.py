"""PostgreSQL supersede links (``SupersedeLinks``): two columns on ``memories``, migration 5."""

from __future__ import annotations

from collections.abc import Sequence

from cpersona.storage.postgres.sql import Executor, where
from cpersona.storage.scope import Scope
from cpersona.storage.supersede_interface import Link


def _link(row: dict[str, object]) -> Link:
    return Link(int(str(row["id"])), int(str(row["superseded_by"])), str(row["superseded_at"] or ""))


class PgSupersedeLinks:
    """``SupersedeLinks`` over one ``Executor``."""

    __slots__ = ("ex",)

    def __init__(self, ex: Executor) -> None:
        self.ex = ex

    def _links(self, column: str, ids: Sequence[int]) -> list[Link]:
        if not ids:
            return []
        rows = self.ex.all(
            f"SELECT id, superseded_by, superseded_at FROM memories "
            f"WHERE superseded_by IS NOT NULL AND {column} = ANY(%s)",
            ([int(i) for i in ids],),
        )
        return [_link(r) for r in rows]

    def successors(self, ids: Sequence[int]) -> dict[int, Link]:
        """The link of each superseded id in ``ids``."""
        return {link.older: link for link in self._links("id", ids)}

    def predecessors(self, newer_ids: Sequence[int]) -> list[Link]:
        """Links whose newer row is in ``newer_ids``."""
        return self._links("superseded_by", newer_ids)

    def mark(self, older_ids: Sequence[int], newer_id: int, at: str) -> None:
        """Mark ``older_ids`` superseded by ``newer_id``."""
        if older_ids:
            self.ex.run(
                "UPDATE memories SET superseded_by = %s, superseded_at = %s WHERE id = ANY(%s)",
                (newer_id, at, [int(i) for i in older_ids]),
            )

    def hidden_ids(self, scope: Scope) -> set[int]:
        """Superseded ids in ``scope`` (the partial index holds only those rows)."""
        clause, params = where(scope)
        rows = self.ex.all(
            f"SELECT id FROM memories WHERE superseded_by IS NOT NULL AND {clause}", tuple(params)
        )
        return {int(r["id"]) for r in rows}

    def dangling(self, limit: int = 20) -> list[Link]:
        """Links to a newer row that does not exist."""
        rows = self.ex.all(
            "SELECT o.id, o.superseded_by, o.superseded_at FROM memories o "
            "WHERE o.superseded_by IS NOT NULL AND NOT EXISTS (SELECT 1 FROM memories n WHERE n.id = o.superseded_by) "
            "LIMIT %s",
            (int(limit),),
        )
        return [_link(r) for r in rows]
