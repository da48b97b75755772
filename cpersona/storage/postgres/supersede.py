"""PostgreSQL supersede links (``SupersedeLinks``): two columns on ``memories``, migration 5."""

from __future__ import annotations

from collections.abc import Sequence

from cpersona.storage.postgres.sql import POSTGRES, Executor, where
from cpersona.storage.scope import Scope
from cpersona.storage.shared_reads import SupersedeReads, link_of
from cpersona.storage.supersede_interface import Link


class PgSupersedeLinks(SupersedeReads):
    """``SupersedeLinks`` over one ``Executor``."""

    __slots__ = ("ex",)

    def __init__(self, ex: Executor) -> None:
        super().__init__(ex.all, POSTGRES)
        self.ex = ex

    def _links(self, column: str, ids: Sequence[int], limit: int | None = None) -> list[Link]:
        if not ids:
            return []
        # Bounded: ordered by (column, id) so the cut is deterministic, and never more than asked.
        tail = "" if limit is None else f" ORDER BY {column}, id LIMIT {int(limit)}"
        rows = self.ex.all(
            f"SELECT id, superseded_by, superseded_at FROM memories "
            f"WHERE superseded_by IS NOT NULL AND {column} = ANY(%s){tail}",
            ([int(i) for i in ids],),
        )
        return [link_of(r) for r in rows]

    def successors(self, ids: Sequence[int]) -> dict[int, Link]:
        """The link of each superseded id in ``ids``."""
        return {link.older: link for link in self._links("id", ids)}

    def predecessors(self, newer_ids: Sequence[int], limit: int | None = None) -> list[Link]:
        """Links whose newer row is in ``newer_ids`` (the first ``limit`` by newer, older id)."""
        return self._links("superseded_by", newer_ids, limit)

    def mark(self, older_ids: Sequence[int], newer_id: int, at: str) -> None:
        """Mark ``older_ids`` superseded by ``newer_id``."""
        if older_ids:
            self.ex.run(
                "UPDATE memories SET superseded_by = %s, superseded_at = %s WHERE id = ANY(%s)",
                (newer_id, at, [int(i) for i in older_ids]),
            )

    def mark_many(self, links: Sequence[tuple[int, int, str]]) -> None:
        """Mark each (older, newer, at): one statement over three arrays."""
        if links:
            self.ex.run(
                "UPDATE memories m SET superseded_by = v.newer, superseded_at = v.at "
                "FROM unnest(%s::bigint[], %s::bigint[], %s::text[]) AS v(older, newer, at) WHERE m.id = v.older",
                ([o for o, _, _ in links], [n for _, n, _ in links], [a for _, _, a in links]),
            )

    def hidden_ids(
        self, scope: Scope, *, superseded: bool = True, retired: bool = True, now: str | None = None
    ) -> set[int]:
        """Superseded and / or retired ids in ``scope``, and those expired by ``now`` (each partial
        index holds only those rows)."""
        clause, params = where(scope)
        found: set[int] = set()
        if now is not None:
            rows = self.ex.all(
                f"SELECT id FROM memories WHERE expires_at IS NOT NULL AND expires_at <= %s AND {clause}",
                (now, *params),
            )
            found.update(int(r["id"]) for r in rows)
        for wanted, column in ((superseded, "superseded_by"), (retired, "retired_at")):
            if wanted:
                rows = self.ex.all(
                    f"SELECT id FROM memories WHERE {column} IS NOT NULL AND {clause}", tuple(params)
                )
                found.update(int(r["id"]) for r in rows)
        return found

    def set_expiry(self, memory_id: int, at: str | None) -> None:
        """Let one memory expire at ``at`` (None: never)."""
        self.ex.run("UPDATE memories SET expires_at = %s WHERE id = %s", (at, memory_id))

    def set_retired(self, memory_id: int, at: str | None, reason: str | None) -> None:
        """Retire (or, ``at`` None, bring back) one memory."""
        self.ex.run(
            "UPDATE memories SET retired_at = %s, retire_reason = %s WHERE id = %s",
            (at, reason if at is not None else None, memory_id),
        )
