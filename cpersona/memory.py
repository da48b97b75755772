"""The plain Python API: one ``Memory`` object per database file.

The MCP tools, the CLI, the tests and the benchmarks all call this. It returns
full rows (no preview trimming); shaping for MCP responses lives in
``cpersona.server``. Return shapes are documented in docs/api-shapes.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cpersona.config import Settings


class Memory:
    """Persistent memory over one SQLite file with hybrid recall.

    ``Memory(settings)`` opens (and migrates) the database and starts loading
    the embedding model in the background; ``Memory(settings, embeddings=...)``
    injects a ready embedding service (tests, benchmarks). Use as a context
    manager or call ``close()``.
    """

    def __init__(self, settings: Settings | None = None, *, start_background: bool = True) -> None:
        raise NotImplementedError

    # -- lifecycle -----------------------------------------------------------------
    def close(self) -> None:
        """Stop background work and close connections."""
        raise NotImplementedError

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def wait_until_ready(self, timeout: float = 60.0) -> bool:
        """Block until the embedding model finished loading (or failed); True when it works."""
        raise NotImplementedError

    # -- everyday memory -------------------------------------------------------------
    def store(
        self,
        agent_id: str,
        content: str,
        *,
        msg_id: str | None = None,
        source: dict[str, Any] | str | None = None,
        timestamp: str | float | None = None,
        metadata: dict[str, Any] | str | None = None,
        channel: str | None = None,
        project_id: str | None = None,
    ) -> dict[str, Any]:
        """Store one memory. Returns ``result`` stored | skipped | rejected (never raises for content)."""
        raise NotImplementedError

    def recall(
        self,
        agent_id: str | None,
        query: str = "",
        *,
        limit: int = 10,
        deep: bool = False,
        channel: str | None = None,
        project_id: str | None = None,
        exclude_contents: Sequence[str] | None = None,
        source_id: str | None = None,
    ) -> dict[str, Any]:
        """Hybrid recall; ``results`` ordered worst → best (last element is the best match)."""
        raise NotImplementedError

    def recall_with_context(
        self,
        agent_id: str,
        query: str,
        external_context: Sequence[dict[str, Any]],
        *,
        limit: int = 10,
        deep: bool = False,
        channel: str | None = None,
        project_id: str | None = None,
    ) -> dict[str, Any]:
        """Recall merged with conversation entries, deduplicated, in chronological order."""
        raise NotImplementedError

    def get_contents(self, agent_id: str, refs: Sequence[str]) -> dict[str, Any]:
        """Full rows for ``mem:<id>`` / ``ep:<id>`` refs, in request order: ``{ok, items, missing}``.

        Unknown refs and other agents' refs are listed in ``missing`` (never revealed).
        The MCP layer applies the 40,000-character batch budget (``deferred``).
        """
        raise NotImplementedError

    def archive_episode(
        self,
        agent_id: str,
        summary: str,
        *,
        keywords: Sequence[str] | str | None = None,
        resolved: bool = False,
        history: Sequence[dict[str, Any]] | None = None,
        project_id: str | None = None,
        channel: str | None = None,
    ) -> dict[str, Any]:
        """Store a session summary; it becomes the newest episode boundary of its scope."""
        raise NotImplementedError

    def update_memory(self, memory_id: int, content: str, *, agent_id: str | None = None) -> dict[str, Any]:
        """Replace a memory's content and re-embed it; refused when locked or not owned."""
        raise NotImplementedError

    # -- profile ---------------------------------------------------------------------
    def get_profile(self, agent_id: str, *, project_id: str = "", user_id: str = "") -> dict[str, Any]:
        """The agent's profile text (``profile: None`` when none is stored)."""
        raise NotImplementedError

    def update_profile(
        self, agent_id: str, profile: str, *, project_id: str = "", user_id: str = ""
    ) -> dict[str, Any]:
        """Replace the profile (capped at CPERSONA_MAX_PROFILE_LENGTH, says ``truncated``)."""
        raise NotImplementedError

    # -- browsing --------------------------------------------------------------------
    def list_memories(
        self, agent_id: str | None = None, *, limit: int = 100, project_id: str | None = None
    ) -> dict[str, Any]:
        """Memories newest first: ``{ok, items, count, total}``."""
        raise NotImplementedError

    def list_episodes(
        self, agent_id: str | None = None, *, limit: int = 50, project_id: str | None = None
    ) -> dict[str, Any]:
        """Episodes newest first: ``{ok, items, count, total}``."""
        raise NotImplementedError

    def get_queue_status(self) -> dict[str, Any]:
        """Background queue: ``{ok, depth, retrying, oldest_task, by_kind}``."""
        raise NotImplementedError

    # -- protection and deletion -------------------------------------------------------
    def lock_memory(self, memory_id: int, *, agent_id: str | None = None) -> dict[str, Any]:
        """Protect a memory from edit and delete."""
        raise NotImplementedError

    def unlock_memory(self, memory_id: int, *, agent_id: str | None = None) -> dict[str, Any]:
        """Remove the protection."""
        raise NotImplementedError

    def delete_memory(self, memory_id: int, *, agent_id: str | None = None) -> dict[str, Any]:
        """Delete one memory (refused when locked or owned by another agent)."""
        raise NotImplementedError

    def delete_episode(self, episode_id: int, *, agent_id: str | None = None) -> dict[str, Any]:
        """Delete one episode (ownership enforced when agent_id is given)."""
        raise NotImplementedError

    def delete_agent_data(self, agent_id: str) -> dict[str, Any]:
        """Delete everything of one agent: memories (locked too), episodes, profiles, tasks."""
        raise NotImplementedError

    # -- health ----------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        """Counts, database path and size, embedding mode/model, health state, queue depth."""
        raise NotImplementedError

    def embedding_status(self) -> dict[str, Any]:
        """The degradation state: ``{state: unknown|healthy|hint|fault, reason?, evidence?, runbook?}``."""
        raise NotImplementedError
