"""Browsing the store as a person would: agents and their axes, filtered pages, profiles, a timeline.

Read-only and model-free; the ``cpersona ui`` pages are built on these. Axis
filters here are exact values (the rows of one project or one channel), not
recall's scopes (where project X also sees the global pool).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, cast

from cpersona.core.limits import LIST_LIMIT_MAX
from cpersona.core.public import public
from cpersona.core.validation import bounded_int, optional_str, required_str
from cpersona.errors import InvalidInput
from cpersona.health import agent_notice
from cpersona.result_types.browsing import (
    AgentAxis,
    AgentSummary,
    BrowseEpisodesResult,
    BrowseMemoriesResult,
    ListAgentsResult,
    ListProfilesResult,
    MemoryTimelineResult,
    StoredProfile,
    TimelineDay,
)
from cpersona.result_types.rows import EpisodeRow, MemoryRow
from cpersona.services import supersede
from cpersona.storage.interface import Store
from cpersona.storage.values import BrowseFilter

#: Deepest offset a page may start at (keeps OFFSET scans bounded).
BROWSE_OFFSET_MAX = 10_000_000


def _tristate(value: Any, name: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise InvalidInput(f"{name} must be true, false or null")


class Browser:
    """Read-only listings for people: what is stored, per agent, project and channel."""

    def __init__(self, store: Store) -> None:
        self.storage = store

    def agent_page(self, after: str | None, limit: int, allowed: frozenset[str] | None) -> list[str]:
        """Up to ``limit`` agents owning rows after ``after``, in order, only ``allowed`` ones (None:
        every agent): one keyset page of ``resources/list``."""
        with self.storage.read() as session:
            return session.browse.agents_after(after, limit, None if allowed is None else sorted(allowed))

    @public
    def agent_notice(self, agent_id: str | None, visible_agents: Collection[str] | None = None) -> str | None:
        """``agent 'x' has no rows; known agents: ...`` when ``agent_id`` owns no row at all, else None.

        ``visible_agents`` limits the agents named (an ACL client's readable agents; None: all).
        """
        agent = optional_str(agent_id, "agent_id")
        return agent_notice.agent_notice(self.storage.session().admin, agent, visible_agents)

    @public
    def list_agents(self) -> ListAgentsResult:
        """Every agent with its counts and its (project, channel) axes: ``{ok, agents, count}``."""
        with self.storage.read() as session:
            axes = session.browse.axes()
            profiles = session.browse.profile_counts()
        agents: dict[str, AgentSummary] = {}
        for row in axes:
            agent = agents.setdefault(
                row["agent_id"],
                {
                    "agent_id": row["agent_id"],
                    "memories": 0,
                    "episodes": 0,
                    "embedded_memories": 0,
                    "locked_memories": 0,
                    "profiles": profiles.get(row["agent_id"], 0),
                    "axes": [],
                },
            )
            agent["memories"] += row["memories"]
            agent["episodes"] += row["episodes"]
            agent["embedded_memories"] += row["embedded_memories"]
            agent["locked_memories"] += row["locked_memories"]
            axis: AgentAxis = {
                "project_id": row["project_id"],
                "channel": row["channel"],
                "memories": row["memories"],
                "episodes": row["episodes"],
            }
            agent["axes"].append(axis)
        for name, n in profiles.items():  # an agent may hold only a profile
            agents.setdefault(
                name,
                {
                    "agent_id": name,
                    "memories": 0,
                    "episodes": 0,
                    "embedded_memories": 0,
                    "locked_memories": 0,
                    "profiles": n,
                    "axes": [],
                },
            )
        listed = [agents[k] for k in sorted(agents)]
        return {"ok": True, "agents": listed, "count": len(listed)}

    def _filter(
        self, agent_id: Any, project_id: Any, channel: Any, embedded: Any, locked: Any = None
    ) -> BrowseFilter:
        return BrowseFilter(
            agent_id=optional_str(agent_id, "agent_id"),
            project_id=optional_str(project_id, "project_id"),
            channel=optional_str(channel, "channel"),
            embedded=_tristate(embedded, "embedded"),
            locked=_tristate(locked, "locked"),
        )

    @public
    def browse_memories(
        self,
        agent_id: str | None = None,
        *,
        project_id: str | None = None,
        channel: str | None = None,
        locked: bool | None = None,
        embedded: bool | None = None,
        offset: int = 0,
        limit: int = 50,
    ) -> BrowseMemoriesResult:
        """One page of memories newest first, filtered by exact axis values, lock and vector state.

        Returns ``{ok, items, count, total, offset}``; ``None`` filters match anything. A superseded
        memory carries ``superseded_by`` and ``superseded_at`` (it is listed all the same).
        """
        where = self._filter(agent_id, project_id, channel, embedded, locked)
        start = bounded_int(offset, "offset", 0, BROWSE_OFFSET_MAX)
        n = bounded_int(limit, "limit", 0, LIST_LIMIT_MAX)
        with self.storage.read() as session:
            items, total = session.browse.memories(where, start, n)
            supersede.mark_rows(session, items)  # the view marks superseded rows (one read of the page's ids)
        # Storage rows are plain dicts of the row shapes (tests/test_shapes.py checks them closed).
        return {
            "ok": True,
            "items": cast("list[MemoryRow]", items),
            "count": len(items),
            "total": total,
            "offset": start,
        }

    @public
    def browse_episodes(
        self,
        agent_id: str | None = None,
        *,
        project_id: str | None = None,
        channel: str | None = None,
        embedded: bool | None = None,
        offset: int = 0,
        limit: int = 50,
    ) -> BrowseEpisodesResult:
        """One page of episodes newest first: ``{ok, items, count, total, offset}``."""
        where = self._filter(agent_id, project_id, channel, embedded)
        start = bounded_int(offset, "offset", 0, BROWSE_OFFSET_MAX)
        n = bounded_int(limit, "limit", 0, LIST_LIMIT_MAX)
        with self.storage.read() as session:
            items, total = session.browse.episodes(where, start, n)
        return {
            "ok": True,
            "items": cast("list[EpisodeRow]", items),
            "count": len(items),
            "total": total,
            "offset": start,
        }

    @public
    def list_profiles(self, agent_id: str) -> ListProfilesResult:
        """Every profile of one agent (per project and user), newest first: ``{ok, agent_id, items, count}``."""
        agent = required_str(agent_id, "agent_id")
        items = cast("list[StoredProfile]", self.storage.session().browse.profiles(agent))
        return {"ok": True, "agent_id": agent, "items": items, "count": len(items)}

    @public
    def memory_timeline(self, agent_id: str | None = None) -> MemoryTimelineResult:
        """Memories stored per UTC day and how many hold a vector: ``{ok, agent_id, days, stored, embedded}``."""
        agent = optional_str(agent_id, "agent_id")
        days = cast("list[TimelineDay]", self.storage.session().browse.daily(agent))
        return {
            "ok": True,
            "agent_id": agent,
            "days": days,
            "stored": sum(d["stored"] for d in days),
            "embedded": sum(d["embedded"] for d in days),
        }
