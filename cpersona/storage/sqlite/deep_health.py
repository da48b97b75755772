"""Read-only queries behind ``deep_check`` (one agent at a time; verdicts in cpersona/health/deep_checks.py)."""

from __future__ import annotations

import sqlite3
from typing import Any


def anonymous_sources(conn: sqlite3.Connection, agent: str, limit: int) -> tuple[int, list[int]]:
    """Memories with no source, or a source carrying neither an id nor a name."""
    cond = (
        "agent_id = ? AND (source IS NULL OR NOT json_valid(source) OR "
        "(COALESCE(json_extract(source, '$.id'), '') = '' AND COALESCE(json_extract(source, '$.name'), '') = ''))"
    )
    count = int(conn.execute(f"SELECT COUNT(*) FROM memories WHERE {cond}", (agent,)).fetchone()[0])
    ids = [
        int(r[0])
        for r in conn.execute(
            f"SELECT id FROM memories WHERE {cond} ORDER BY id DESC LIMIT ?", (agent, limit)
        )
    ]
    return count, ids


def short_memories(conn: sqlite3.Connection, agent: str, min_chars: int, limit: int) -> tuple[int, list[int]]:
    """Memories whose trimmed text is shorter than ``min_chars`` characters."""
    cond = "agent_id = ? AND length(trim(content)) < ?"
    count = int(conn.execute(f"SELECT COUNT(*) FROM memories WHERE {cond}", (agent, min_chars)).fetchone()[0])
    ids = [
        int(r[0])
        for r in conn.execute(
            f"SELECT id FROM memories WHERE {cond} ORDER BY id DESC LIMIT ?", (agent, min_chars, limit)
        )
    ]
    return count, ids


def profiles_with_newer_memories(conn: sqlite3.Connection, agent: str) -> list[dict[str, Any]]:
    """Each profile of the agent with how many memories of its project arrived after its last update."""
    rows = conn.execute(
        "SELECT p.project_id, p.user_id, p.updated_at, (SELECT COUNT(*) FROM memories m WHERE m.agent_id = p.agent_id "
        "AND m.project_id = p.project_id AND m.created_at > p.updated_at) FROM profiles p WHERE p.agent_id = ?",
        (agent,),
    ).fetchall()
    return [
        {"project_id": r[0], "user_id": r[1], "updated_at": r[2], "newer_memories": int(r[3])} for r in rows
    ]


def orphaned_episodes(conn: sqlite3.Connection, agent: str, limit: int) -> tuple[int, list[int]]:
    """Episodes with no memory of the same (agent, project, channel) in their time range.

    The range is [start_time, end_time] when the episode has one (from its
    history); otherwise any memory stored before the episode was archived counts.
    """
    cond = (
        "e.agent_id = ? AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.agent_id = e.agent_id "
        "AND m.project_id = e.project_id AND m.channel = e.channel AND ("
        "CASE WHEN e.start_time IS NOT NULL AND e.end_time IS NOT NULL "
        "THEN m.timestamp BETWEEN e.start_time AND e.end_time ELSE m.created_at <= e.created_at END))"
    )
    count = int(conn.execute(f"SELECT COUNT(*) FROM episodes e WHERE {cond}", (agent,)).fetchone()[0])
    ids = [
        int(r[0])
        for r in conn.execute(
            f"SELECT e.id FROM episodes e WHERE {cond} ORDER BY e.id DESC LIMIT ?", (agent, limit)
        )
    ]
    return count, ids


def recent_vectors(
    conn: sqlite3.Connection, agent: str, model_id: str, dimension: int, limit: int
) -> list[tuple[int, bytes]]:
    """The agent's ``limit`` newest memory vectors of the active model: [(id, blob)]."""
    return [
        (int(r[0]), bytes(r[1]))
        for r in conn.execute(
            "SELECT id, embedding FROM memories WHERE agent_id = ? AND embedding_model = ? AND embedding_dim = ? "
            "AND length(embedding) = ? ORDER BY id DESC LIMIT ?",
            (agent, model_id, dimension, dimension * 4, limit),
        )
    ]
