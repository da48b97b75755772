"""Reads both engines run with the same statement: profiles, the episode boundary, table rows, dangling links, admin counts.

The statements differ between SQLite and PostgreSQL only in the parameter mark, so each engine
passes its ``fetch`` (a statement and its parameters in, rows readable by column name out) and
its ``Dialect``; the isolation rule comes from ``Scope.where`` as everywhere else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

from cpersona.storage.columns import RowLike, TableShape, profile_dict
from cpersona.storage.scope import Scope
from cpersona.storage.sql_text import Dialect
from cpersona.storage.supersede_interface import Link
from cpersona.storage.values import VECTOR_TABLES, Row

#: Run one statement with its parameters; the rows it returns, read by column name.
Fetch = Callable[[str, Sequence[Any]], Iterable[RowLike]]


def first(fetch: Fetch, sql: str, params: Sequence[Any]) -> RowLike | None:
    """The first row ``sql`` returns, or None."""
    return next(iter(fetch(sql, params)), None)


def newest_boundary(fetch: Fetch, dialect: Dialect, scope: Scope) -> str | None:
    """created_at of the newest episode in scope, the episode boundary (``EpisodeRows.newest_boundary``)."""
    clause, params = scope.where(dialect)
    row = first(fetch, f"SELECT MAX(created_at) AS newest FROM episodes WHERE {clause}", params)
    return str(row["newest"]) if row is not None and row["newest"] else None


class ProfileReads:
    """The reads of ``ProfileRows``, over one engine's ``fetch`` and ``Dialect`` (engines add ``upsert``)."""

    __slots__ = ("_dialect", "_fetch")

    def __init__(self, fetch: Fetch, dialect: Dialect) -> None:
        self._fetch = fetch
        self._dialect = dialect

    def get(self, agent_id: str, project_id: str, user_id: str) -> Row | None:
        """The profile stored under exactly this key."""
        m = self._dialect.mark
        row = first(
            self._fetch,
            f"SELECT * FROM profiles WHERE agent_id = {m} AND project_id = {m} AND user_id = {m}",
            (agent_id, project_id, user_id),
        )
        return None if row is None else profile_dict(row)

    def newest_in_scope(self, scope: Scope, limit: int = 3) -> list[Row]:
        """Up to ``limit`` profiles in scope, newest first (recall's profile injection)."""
        clause, params = scope.where(self._dialect, has_channel=False)
        rows = self._fetch(
            f"SELECT * FROM profiles WHERE {clause} ORDER BY updated_at DESC, user_id LIMIT {self._dialect.mark}",
            [*params, limit],
        )
        return [profile_dict(r) for r in rows]


class TableReads:
    """The reads of ``TableRows`` on the table ``shape`` names, over one engine's ``fetch`` and ``Dialect``.

    Engines add what their driver does differently: ``get_many``, ``set_embedding``, ``delete``.
    """

    __slots__ = ("_dialect", "_fetch")
    shape: ClassVar[TableShape]

    def __init__(self, fetch: Fetch, dialect: Dialect) -> None:
        self._fetch = fetch
        self._dialect = dialect

    def get(self, row_id: int) -> Row | None:
        """One row by id, whoever owns it (callers check ownership)."""
        s = self.shape
        row = first(
            self._fetch, f"SELECT {s.columns} FROM {s.table} WHERE id = {self._dialect.mark}", (row_id,)
        )
        return None if row is None else s.to_dict(row)

    def text_of(self, row_id: int) -> str | None:
        """The text an embedding is computed from."""
        s = self.shape
        row = first(
            self._fetch,
            f"SELECT {s.text_column} AS body FROM {s.table} WHERE id = {self._dialect.mark}",
            (row_id,),
        )
        return None if row is None else str(row["body"])

    def _newest(self, scope: Scope, limit: int, select: str) -> list[RowLike]:
        """``select`` of the newest ``limit`` rows in scope (created_at, then id, so equal timestamps
        still order stably)."""
        clause, params = scope.where(self._dialect)
        return list(
            self._fetch(
                f"SELECT {select} FROM {self.shape.table} WHERE {clause} ORDER BY created_at DESC, id DESC "
                f"LIMIT {self._dialect.mark}",
                [*params, limit],
            )
        )

    def list_recent(self, scope: Scope, limit: int) -> list[Row]:
        """Newest first (created_at, then id, so equal timestamps still order stably)."""
        return [self.shape.to_dict(r) for r in self._newest(scope, limit, self.shape.columns)]

    def recent_lengths(self, scope: Scope, limit: int) -> list[int]:
        """The text lengths (characters) of the newest ``limit`` rows in scope, newest first: the
        corpus shape without reading the texts out."""
        rows = self._newest(scope, limit, f"LENGTH({self.shape.text_column}) AS n")
        return [int(r["n"] or 0) for r in rows]

    def count(self, scope: Scope, *, cap: int | None = None) -> int:
        """Rows in scope; with ``cap``, counted up to ``cap`` (at most ``cap`` index entries read)."""
        clause, scope_params = scope.where(self._dialect)
        rows, params = f"SELECT 1 FROM {self.shape.table} WHERE {clause}", list[Any](scope_params)
        if cap is not None:
            rows, params = f"{rows} LIMIT {self._dialect.mark}", [*params, max(cap, 0)]
        row = first(self._fetch, f"SELECT COUNT(*) AS n FROM ({rows}) counted", params)
        return 0 if row is None else int(row["n"])


def link_of(row: RowLike) -> Link:
    """A supersede ``Link`` from a row selecting ``id, superseded_by, superseded_at``."""
    return Link(int(row["id"]), int(row["superseded_by"]), str(row["superseded_at"] or ""))


class SupersedeReads:
    """The reads of ``SupersedeLinks`` both engines run alike (engines add the id-list reads and writes)."""

    __slots__ = ("_dialect", "_fetch")

    def __init__(self, fetch: Fetch, dialect: Dialect) -> None:
        self._fetch = fetch
        self._dialect = dialect

    def retirements(self, ids: Sequence[int]) -> dict[int, tuple[str, str | None]]:
        """``(retired_at, reason)`` of each retired id in ``ids``."""
        found: dict[int, tuple[str, str | None]] = {}
        wanted = [int(i) for i in ids]
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join([self._dialect.mark] * len(chunk))
            for r in self._fetch(
                f"SELECT id, retired_at, retire_reason FROM memories WHERE retired_at IS NOT NULL AND id IN ({marks})",
                chunk,
            ):
                found[int(r["id"])] = (str(r["retired_at"]), r["retire_reason"])
        return found

    def expiries(self, ids: Sequence[int]) -> dict[int, str]:
        """``expires_at`` of each id in ``ids`` that has one."""
        found: dict[int, str] = {}
        wanted = [int(i) for i in ids]
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join([self._dialect.mark] * len(chunk))
            for r in self._fetch(
                f"SELECT id, expires_at FROM memories WHERE expires_at IS NOT NULL AND id IN ({marks})", chunk
            ):
                found[int(r["id"])] = str(r["expires_at"])
        return found

    def expired_before(self, cutoff: str, limit: int) -> list[int]:
        """Unlocked memories that expired before ``cutoff``, oldest first."""
        m = self._dialect.mark
        rows = self._fetch(
            f"SELECT id FROM memories WHERE expires_at IS NOT NULL AND expires_at < {m} AND NOT locked "
            f"ORDER BY expires_at LIMIT {m}",
            (cutoff, int(limit)),
        )
        return [int(r["id"]) for r in rows]

    def chain_above(self, rid: int) -> list[Link]:
        """The links from ``rid`` up to the current row, nearest first, however long the chain: one
        recursive statement (UNION, not UNION ALL, keeps it finite even on a cycle written before
        cycles were refused at any length)."""
        m = self._dialect.mark
        rows = self._fetch(
            "WITH RECURSIVE up(id, superseded_by, superseded_at) AS ("
            f"SELECT id, superseded_by, superseded_at FROM memories WHERE id = {m} AND superseded_by IS NOT NULL "
            "UNION SELECT n.id, n.superseded_by, n.superseded_at FROM memories n JOIN up ON n.id = up.superseded_by "
            "WHERE n.superseded_by IS NOT NULL) SELECT id, superseded_by, superseded_at FROM up",
            (int(rid),),
        )
        by_older = {link.older: link for link in map(link_of, rows)}
        out: list[Link] = []
        seen = {int(rid)}
        link = by_older.get(int(rid))
        while link is not None:
            out.append(link)
            if link.newer in seen:  # a cycle: its closing link is the last step
                break
            seen.add(link.newer)
            link = by_older.get(link.newer)
        return out

    def owners(self, ids: Sequence[int]) -> dict[int, tuple[str, bool]]:
        """(agent, locked) of each id that exists: what the supersede rules read of a row."""
        if not ids:
            return {}
        m = self._dialect.mark
        marks = ",".join([m] * len(ids))
        rows = self._fetch(
            f"SELECT id, agent_id, (locked = {self._dialect.true}) AS locked FROM memories WHERE id IN ({marks})",
            [int(i) for i in ids],
        )
        return {int(r["id"]): (str(r["agent_id"]), bool(r["locked"])) for r in rows}

    def left_out_below(self, listed: Sequence[int], limit: int) -> list[int]:
        """Up to ``limit`` ids of ``listed`` that some row outside ``listed`` supersedes (where a
        bounded history was cut), lowest first."""
        if not listed:
            return []
        m = self._dialect.mark
        marks = ",".join([m] * len(listed))
        rows = self._fetch(
            f"SELECT DISTINCT superseded_by FROM memories WHERE superseded_by IN ({marks}) "
            f"AND id NOT IN ({marks}) ORDER BY superseded_by LIMIT {m}",
            [*listed, *listed, int(limit)],
        )
        return [int(r["superseded_by"]) for r in rows]

    def dangling(self, limit: int = 20) -> list[Link]:
        """Links to a newer row that does not exist."""
        rows = self._fetch(
            "SELECT o.id, o.superseded_by, o.superseded_at FROM memories o "
            "WHERE o.superseded_by IS NOT NULL AND NOT EXISTS (SELECT 1 FROM memories n WHERE n.id = o.superseded_by) "
            f"LIMIT {self._dialect.mark}",
            (int(limit),),
        )
        return [link_of(r) for r in rows]


def rows_outside_window(
    fetch: Fetch, dialect: Dialect, agent: str | None, model_id: str | None, window: int
) -> dict[str, dict[str, int]]:
    """Per agent and table, rows with a vector (of ``model_id`` when given) beyond the ``window`` newest."""
    m = dialect.mark
    where, params = (f" AND agent_id = {m}", [agent]) if agent is not None else ("", [])
    model_sql = f"embedding_model = {m}" if model_id else "embedding IS NOT NULL"
    model_params: list[Any] = [model_id] if model_id else []
    outside: dict[str, dict[str, int]] = {}
    for table in VECTOR_TABLES:
        for r in fetch(
            f"SELECT agent_id, COUNT(*) AS n FROM {table} WHERE {model_sql}{where} GROUP BY agent_id "
            f"HAVING COUNT(*) > {m}",
            [*model_params, *params, window],
        ):
            outside.setdefault(str(r["agent_id"]), {})[table] = int(r["n"]) - window
    return outside


#: The tables whose rows ``AdminQueries`` counts and deletes per agent.
COUNTED_TABLES = ("memories", "episodes", "profiles")


class AdminReads:
    """The reads of ``AdminQueries`` over one engine's ``fetch`` and ``Dialect`` (engines add the rest)."""

    __slots__ = ("_dialect", "_fetch")

    def __init__(self, fetch: Fetch, dialect: Dialect) -> None:
        self._fetch = fetch
        self._dialect = dialect

    def row_counts(self) -> dict[str, int]:
        """Rows per table: memories, episodes, profiles."""
        counts: dict[str, int] = {}
        for table in COUNTED_TABLES:
            row = first(self._fetch, f"SELECT COUNT(*) AS n FROM {table}", ())
            counts[table] = 0 if row is None else int(row["n"])
        return counts

    def rows_beyond_window(self, model_id: str, window: int) -> dict[str, dict[str, int]]:
        """Per agent and table, rows with vectors of ``model_id`` beyond the ``window`` most recent."""
        return rows_outside_window(self._fetch, self._dialect, None, model_id, window)

    def agent_ids(self) -> list[str]:
        """Every agent id owning at least one memory or episode, sorted."""
        sql = "SELECT agent_id FROM memories UNION SELECT agent_id FROM episodes ORDER BY 1"
        return [str(r["agent_id"]) for r in self._fetch(sql, ())]

    def known_agent_ids(self) -> list[str]:
        """Every agent id owning any row at all (memory, episode or profile), sorted."""
        sql = (
            "SELECT agent_id FROM memories UNION SELECT agent_id FROM episodes "
            "UNION SELECT agent_id FROM profiles ORDER BY 1"
        )
        return [str(r["agent_id"]) for r in self._fetch(sql, ())]
