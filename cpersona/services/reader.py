"""Reading rows as they are: fetch by ref, the profile, newest-first listings."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Annotated, cast

from cpersona import arguments as arg
from cpersona.core.limits import (
    LIST_EPISODES_LIMIT_DEFAULT,
    LIST_LIMIT_MAX,
    LIST_MEMORIES_LIMIT_DEFAULT,
    MAX_REF_CHARS,
    MAX_REFS_PER_CALL,
    MAX_ROW_ID,
    MAX_ROW_ID_DIGITS,
)
from cpersona.core.public import public
from cpersona.core.validation import agent_set, bounded_int, optional_str, required_str, row_id, string_list
from cpersona.errors import InvalidInput
from cpersona.health.agent_notice import agent_notice
from cpersona.result_types.everyday import (
    GetContentsResult,
    GetHistoryResult,
    GetProfileResult,
    ListEpisodesResult,
    ListMemoriesResult,
)
from cpersona.result_types.rows import EpisodeRow, MemoryRow, StoredRow
from cpersona.services import supersede
from cpersona.storage.interface import Session, Store, TableRows
from cpersona.storage.scope import Scope
from cpersona.storage.values import Row


def _storable(row_id: int) -> bool:
    """Whether ``row_id`` can name a row at all (SQLite ids are positive signed 64-bit)."""
    return 0 < row_id <= MAX_ROW_ID


class Reader:
    """Read-only access that needs no model: refs, profiles, listings."""

    def __init__(self, store: Store) -> None:
        self.storage = store

    @public
    def get_contents(
        self,
        agent_id: str,
        refs: Annotated[
            Sequence[str],
            arg.Field(
                min_length=1,
                max_length=MAX_REFS_PER_CALL,
                description="e.g. 'mem:12', 'ep:3'.",
            ),
        ],
    ) -> GetContentsResult:
        """Full rows for ``mem:<id>`` / ``ep:<id>`` refs, in request order: ``{ok, items, missing}``.

        Unknown refs and other agents' refs are listed in ``missing`` (never revealed). A superseded
        memory carries ``superseded_by`` and ``superseded_at``.
        The MCP layer applies the 40,000-character batch budget (``deferred``).
        """
        agent = required_str(agent_id, "agent_id")
        wanted = string_list(refs, "refs", max_items=MAX_REFS_PER_CALL, max_len=MAX_REF_CHARS)
        scope = Scope(agent_id=agent)
        parsed: list[tuple[str, str, int]] = []
        for ref in wanted:
            kind, _, digits = ref.strip().partition(":")
            if kind not in ("mem", "ep") or not (digits.isascii() and digits.isdigit()):
                raise InvalidInput(f"ref {ref!r} is not of the form mem:<id> or ep:<id>")
            # An id SQLite cannot hold names no row: report it missing like any unknown ref.
            parsed.append((ref, kind, int(digits) if len(digits) <= MAX_ROW_ID_DIGITS else 0))
        with self.storage.read() as session:
            mems = session.memories.get_many([n for _, k, n in parsed if k == "mem" and _storable(n)], scope)
            eps = session.episodes.get_many([n for _, k, n in parsed if k == "ep" and _storable(n)], scope)
            supersede.mark_rows(session, list(mems.values()))  # a superseded row says by what
        items: list[StoredRow] = []
        missing: list[str] = []
        for ref, kind, number in parsed:
            row = (mems if kind == "mem" else eps).get(number)
            if row is None:
                missing.append(ref)
            else:
                items.append(cast("StoredRow", row))  # storage rows are untyped dicts of this shape
        return {"ok": True, "items": items, "missing": missing}

    @public
    def get_history(
        self,
        memory_id: arg.MemoryRef,
        *,
        agent_id: arg.OwnerAgentId = None,
        allowed_agents: Collection[str] | None = None,
    ) -> GetHistoryResult:
        """The supersede chain ``memory_id`` belongs to: every memory of it, oldest to newest, each
        superseded one with ``superseded_by`` and ``superseded_at``; ``current`` names the newest.

        A memory nothing superseded and that supersedes nothing is a chain of one. Another agent's
        row (or one outside ``allowed_agents``) answers not found.
        """
        rid = row_id(memory_id, "memory_id", "mem")
        agent = optional_str(agent_id, "agent_id")
        allowed = agent_set(allowed_agents)
        with self.storage.read() as session:
            return supersede.history(session, rid, agent, allowed)

    @public
    def get_profile(
        self,
        agent_id: str,
        *,
        project_id: Annotated[str, arg.Field(description="Default '': the global profile.")] = "",
        user_id: arg.UserId = "",
    ) -> GetProfileResult:
        """The agent's profile text (``profile: None`` when none is stored)."""
        agent = required_str(agent_id, "agent_id")
        row = self.storage.session().profiles.get(
            agent, required_str(project_id, "project_id"), required_str(user_id, "user_id")
        )
        return {
            "ok": True,
            "agent_id": agent,
            "profile": row["content"] if row else None,
            "updated_at": row["updated_at"] if row else None,
        }

    @public
    def list_memories(
        self,
        agent_id: Annotated[str | None, arg.Field(description="Omit for every agent.")] = None,
        *,
        limit: arg.ListLimit = LIST_MEMORIES_LIMIT_DEFAULT,
        project_id: arg.ProjectRead = None,
        allowed_agents: Collection[str] | None = None,
    ) -> ListMemoriesResult:
        """Memories newest first: ``{ok, items, count, total, notice?}`` (``notice``: the agent owns no rows).

        ``allowed_agents`` restricts the listing to those agents' rows (an HTTP client's ACL grants).
        """
        items, total, notice = self._newest(_memories, agent_id, limit, project_id, allowed_agents)
        # The listing shows every row it holds as it is: an expiring one says when, a retired one since when.
        session = self.storage.session()
        expiring = session.supersede.expiries([int(i["id"]) for i in items])
        for item in items:
            if int(item["id"]) in expiring:
                item["expires_at"] = expiring[int(item["id"])]
        supersede.mark_retired(session, items)
        result: ListMemoriesResult = {
            "ok": True,
            "items": cast("list[MemoryRow]", items),
            "count": len(items),
            "total": total,
        }
        if notice:
            result["notice"] = notice
        return result

    @public
    def list_episodes(
        self,
        agent_id: Annotated[str | None, arg.Field(description="Omit for every agent.")] = None,
        *,
        limit: arg.ListLimit = LIST_EPISODES_LIMIT_DEFAULT,
        project_id: arg.ProjectRead = None,
        allowed_agents: Collection[str] | None = None,
    ) -> ListEpisodesResult:
        """Episodes newest first: ``{ok, items, count, total, notice?}`` (``notice``: the agent owns no rows).

        ``allowed_agents`` restricts the listing to those agents' rows (an HTTP client's ACL grants).
        """
        items, total, notice = self._newest(_episodes, agent_id, limit, project_id, allowed_agents)
        result: ListEpisodesResult = {
            "ok": True,
            "items": cast("list[EpisodeRow]", items),
            "count": len(items),
            "total": total,
        }
        if notice:
            result["notice"] = notice
        return result

    def _newest(
        self,
        table: Callable[[Session], TableRows],
        agent_id: str | None,
        limit: int,
        project_id: str | None,
        allowed_agents: Collection[str] | None,
    ) -> tuple[list[Row], int, str | None]:
        """One table's rows newest first, its total in scope, and the notice for an agent owning no rows."""
        scope = Scope(
            optional_str(agent_id, "agent_id"),
            optional_str(project_id, "project_id"),
            agents=agent_set(allowed_agents),
        )
        n = bounded_int(limit, "limit", 0, LIST_LIMIT_MAX)
        with self.storage.read() as session:
            items = table(session).list_recent(scope, n)
            total = table(session).count(scope)
            notice = agent_notice(session.admin, scope.agent_id, allowed_agents) if total == 0 else None
        return items, total, notice


def _memories(session: Session) -> TableRows:
    return session.memories


def _episodes(session: Session) -> TableRows:
    return session.episodes
