"""Rows as the layers above see them, and the column lists both engines select and insert.

The tables have the same columns on SQLite and PostgreSQL (only the types differ:
INTEGER 0/1 against BOOLEAN, BLOB against ``vector``), so both engines read a row with
the same SELECT list and turn it into the same public shape (docs/api-shapes.md) here.
A row is anything read by column name: either engine's fetched row, or a dict.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from cpersona.storage.values import EPISODES, MEMORIES, NewEpisode, NewMemory, NewProfile, Row


class RowLike(Protocol):
    """A fetched row read by column name (either engine's row type, or a dict)."""

    def __getitem__(self, key: str, /) -> Any: ...


#: What ``get``, lists and browsing select from ``memories`` (``has_embedding`` instead of the vector).
MEMORY_COLUMNS = (
    "id, agent_id, project_id, channel, msg_id, content, source, metadata, timestamp, created_at, "
    "embedding_model, embedding_dim, embedding IS NOT NULL AS has_embedding, recall_count, "
    "last_recalled_at, locked"
)
#: The same for ``episodes``.
EPISODE_COLUMNS = (
    "id, agent_id, project_id, channel, summary, keywords, start_time, end_time, resolved, created_at, "
    "embedding_model, embedding_dim, embedding IS NOT NULL AS has_embedding"
)

#: The columns a memory insert writes, in the order of ``memory_values`` (the vector is the tenth).
MEMORY_INSERT_COLUMNS = (
    "agent_id, project_id, channel, msg_id, content, source, metadata, timestamp, created_at, "
    "embedding, embedding_model, embedding_dim, recall_count, last_recalled_at, locked"
)
#: The columns an episode insert writes, in the order of ``episode_values`` (the vector is the tenth).
EPISODE_INSERT_COLUMNS = (
    "agent_id, project_id, channel, summary, keywords, start_time, end_time, resolved, created_at, "
    "embedding, embedding_model, embedding_dim"
)
#: Index of the vector in the two value tuples (an engine may wrap it, e.g. as a pgvector value).
VECTOR_POSITION = 9


def memory_values(
    new: NewMemory, *, recall_count: int = 0, last_recalled_at: str | None = None, locked: bool = False
) -> tuple[Any, ...]:
    """``new`` (and the recall statistics an import carries) in ``MEMORY_INSERT_COLUMNS`` order."""
    return (
        new.agent_id,
        new.project_id,
        new.channel,
        new.msg_id,
        new.content,
        new.source,
        new.metadata,
        new.timestamp,
        new.created_at,
        new.embedding,
        new.embedding_model,
        new.embedding_dim,
        recall_count,
        last_recalled_at,
        locked,
    )


def episode_values(new: NewEpisode) -> tuple[Any, ...]:
    """``new`` in ``EPISODE_INSERT_COLUMNS`` order."""
    return (
        new.agent_id,
        new.project_id,
        new.channel,
        new.summary,
        new.keywords,
        new.start_time,
        new.end_time,
        new.resolved,
        new.created_at,
        new.embedding,
        new.embedding_model,
        new.embedding_dim,
    )


def profile_values(profile: NewProfile) -> tuple[str, str, str, str, str]:
    """``profile`` in the column order (agent_id, project_id, user_id, content, updated_at)."""
    return (profile.agent_id, profile.project_id, profile.user_id, profile.content, profile.updated_at)


def memory_dict(row: RowLike) -> Row:
    """The public shape of a memory row (selected with ``MEMORY_COLUMNS``)."""
    return {
        "ref": f"mem:{row['id']}",
        "type": "memory",
        "id": row["id"],
        "agent_id": row["agent_id"],
        "project_id": row["project_id"],
        "channel": row["channel"],
        "msg_id": row["msg_id"],
        "content": row["content"],
        "source": json.loads(row["source"]) if row["source"] else None,
        "metadata": json.loads(row["metadata"]) if row["metadata"] else None,
        "timestamp": row["timestamp"],
        "created_at": row["created_at"],
        "locked": bool(row["locked"]),
        "recall_count": row["recall_count"],
        "last_recalled_at": row["last_recalled_at"],
        "embedded": bool(row["has_embedding"]),
        "embedding_model": row["embedding_model"],
    }


def episode_dict(row: RowLike) -> Row:
    """The public shape of an episode row (selected with ``EPISODE_COLUMNS``)."""
    keywords = [k for k in (row["keywords"] or "").split("\n") if k]
    return {
        "ref": f"ep:{row['id']}",
        "type": "episode",
        "id": row["id"],
        "agent_id": row["agent_id"],
        "project_id": row["project_id"],
        "channel": row["channel"],
        "content": row["summary"],
        "summary": row["summary"],
        "keywords": keywords,
        "start_time": row["start_time"],
        "end_time": row["end_time"],
        "resolved": bool(row["resolved"]),
        "created_at": row["created_at"],
        "embedded": bool(row["has_embedding"]),
        "embedding_model": row["embedding_model"],
    }


def memory_values_dict(values: Sequence[Any]) -> Row:
    """``memory_dict`` of a plain tuple in ``MEMORY_COLUMNS`` order: the same dict, keys in the same
    order. Recall hydrates ~100 rows, and reading each of 16 columns by name cost more than the
    fetch itself (SQLite's hot path; ``tests/storage/test_columns.py`` holds the two equal)."""
    (
        row_id,
        agent_id,
        project_id,
        channel,
        msg_id,
        content,
        source,
        metadata,
        timestamp,
        created_at,
        embedding_model,
        _dim,
        has_embedding,
        recall_count,
        last_recalled_at,
        locked,
    ) = values
    return {
        "ref": f"mem:{row_id}",
        "type": "memory",
        "id": row_id,
        "agent_id": agent_id,
        "project_id": project_id,
        "channel": channel,
        "msg_id": msg_id,
        "content": content,
        "source": json.loads(source) if source else None,
        "metadata": json.loads(metadata) if metadata else None,
        "timestamp": timestamp,
        "created_at": created_at,
        "locked": bool(locked),
        "recall_count": recall_count,
        "last_recalled_at": last_recalled_at,
        "embedded": bool(has_embedding),
        "embedding_model": embedding_model,
    }


def episode_values_dict(values: Sequence[Any]) -> Row:
    """``episode_dict`` of a plain tuple in ``EPISODE_COLUMNS`` order (same dict, same key order)."""
    (
        row_id,
        agent_id,
        project_id,
        channel,
        summary,
        keywords,
        start_time,
        end_time,
        resolved,
        created_at,
        embedding_model,
        _dim,
        has_embedding,
    ) = values
    return {
        "ref": f"ep:{row_id}",
        "type": "episode",
        "id": row_id,
        "agent_id": agent_id,
        "project_id": project_id,
        "channel": channel,
        "content": summary,
        "summary": summary,
        "keywords": [k for k in (keywords or "").split("\n") if k],
        "start_time": start_time,
        "end_time": end_time,
        "resolved": bool(resolved),
        "created_at": created_at,
        "embedded": bool(has_embedding),
        "embedding_model": embedding_model,
    }


def profile_dict(row: RowLike) -> Row:
    """The public shape of a profile row."""
    return {
        "type": "profile",
        "agent_id": row["agent_id"],
        "project_id": row["project_id"],
        "user_id": row["user_id"],
        "content": row["content"],
        "updated_at": row["updated_at"],
    }


@dataclass(frozen=True)
class TableShape:
    """One table with vectors as both engines' shared repositories read it."""

    table: str
    columns: str  # the SELECT list
    text_column: str  # what an embedding is computed from
    to_dict: Callable[[RowLike], Row]
    values_dict: Callable[[Sequence[Any]], Row]  # ``to_dict`` of a plain tuple in ``columns`` order


MEMORY_SHAPE = TableShape(MEMORIES, MEMORY_COLUMNS, "content", memory_dict, memory_values_dict)
EPISODE_SHAPE = TableShape(EPISODES, EPISODE_COLUMNS, "summary", episode_dict, episode_values_dict)
