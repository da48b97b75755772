"""Shapes of the browsing calls behind ``cpersona ui``."""

# No ``from __future__ import annotations`` here: with string annotations Python 3.11 cannot see
# NotRequired at runtime, and the doc generator reads __optional_keys__.
from typing import Annotated, Literal, TypedDict

from cpersona.result_types.common import ItemCount, Success
from cpersona.result_types.rows import EpisodeRow, MemoryRow

# -- browsing (cpersona ui) ------------------------------------------------------------------------------


class AgentAxis(TypedDict):
    """One (project, channel) pair an agent has rows on."""

    project_id: Annotated[str, "Project ('' = global pool)."]
    channel: Annotated[str, "Channel ('' = none)."]
    memories: Annotated[int, "Memories on this pair."]
    episodes: Annotated[int, "Episodes on this pair."]


class AgentSummary(TypedDict):
    """One agent and what it holds."""

    agent_id: Annotated[str, "The agent."]
    memories: Annotated[int, "Its memories."]
    episodes: Annotated[int, "Its episodes."]
    embedded_memories: Annotated[int, "Memories holding a vector (any model)."]
    locked_memories: Annotated[int, "Locked memories."]
    profiles: Annotated[int, "Profiles (per project and user)."]
    axes: Annotated[list[AgentAxis], "Rows per (project, channel), sorted."]


class ListAgentsResult(TypedDict):
    """list_agents: every agent with counts, sorted by id."""

    ok: Success
    agents: Annotated[list[AgentSummary], "One entry per agent."]
    count: Annotated[int, "len(agents)."]


class BrowseMemoriesResult(TypedDict):
    """browse_memories: one page of memories newest first (exact axis, lock and vector filters)."""

    ok: Success
    items: Annotated[list[MemoryRow], "This page, newest first."]
    count: ItemCount
    total: Annotated[int, "Rows matching the filters."]
    offset: Annotated[int, "Where this page starts."]


class BrowseEpisodesResult(TypedDict):
    """browse_episodes: one page of episodes newest first."""

    ok: Success
    items: Annotated[list[EpisodeRow], "This page, newest first."]
    count: ItemCount
    total: Annotated[int, "Rows matching the filters."]
    offset: Annotated[int, "Where this page starts."]


class StoredProfile(TypedDict):
    """A stored profile as list_profiles returns it."""

    type: Annotated[Literal["profile"], "Row kind."]
    agent_id: Annotated[str, "Owner agent."]
    project_id: Annotated[str, "Profile scope ('' = global)."]
    user_id: Annotated[str, "Whose profile ('' = default)."]
    content: Annotated[str, "The profile text."]
    updated_at: Annotated[str, "Last update (UTC ISO-8601)."]


class ListProfilesResult(TypedDict):
    """list_profiles: every profile of one agent, newest first."""

    ok: Success
    agent_id: Annotated[str, "The agent."]
    items: Annotated[list[StoredProfile], "Its profiles."]
    count: ItemCount


class TimelineDay(TypedDict):
    """Memories stored on one UTC day."""

    day: Annotated[str, "YYYY-MM-DD (from created_at)."]
    stored: Annotated[int, "Memories stored that day (still present)."]
    embedded: Annotated[int, "Of those, how many hold a vector now."]


class MemoryTimelineResult(TypedDict):
    """memory_timeline: memories stored per day, oldest day first (days without rows are absent)."""

    ok: Success
    agent_id: Annotated[str | None, "The agent (None: every agent)."]
    days: Annotated[list[TimelineDay], "One entry per day with rows."]
    stored: Annotated[int, "Sum of stored."]
    embedded: Annotated[int, "Sum of embedded."]
