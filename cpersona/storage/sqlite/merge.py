"""Merging one agent's rows into another's, in one write transaction.

Dedup uses the target agent's scopes exactly as the unique indexes do: a
source memory is skipped when the target already holds its msg_id (same
project) or its content (same project and channel); an episode is skipped when
the target holds its summary in the same project and channel; a profile key
(project, user) keeps the newer text.

``copy`` inserts new rows for the target (vectors, timestamps, locks and
recall statistics copied). ``move`` re-owns the source rows (same ids, so the
vectors and queued tasks stay valid) and deletes the source rows that were
skipped as duplicates, so afterwards the source agent holds nothing; a locked
duplicate passes its lock to the target row it duplicates.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from cpersona.storage.link_carry import carry_links, links_of
from cpersona.storage.maintenance_interface import (
    COPY,
    MOVE,
    MergeRequest,
    merge_counts,
    rolled_back_if,
    stepped,
)
from cpersona.storage.sql_text import MERGE_COPY_COLUMNS
from cpersona.storage.sqlite.db import Database
from cpersona.storage.sqlite.links import SqliteLinks
from cpersona.storage.sqlite.supersede import SqliteSupersedeLinks
from cpersona.storage.sqlite.tasks import SqliteTasks
from cpersona.storage.supersede_interface import apply_imported_links
from cpersona.storage.values import EMBED


def merge_agents(db: Database, request: MergeRequest) -> dict[str, dict[str, int]]:
    """Merge ``request.source`` into its target; returns counts per table (the same numbers in a dry run).

    A dry run performs the whole merge inside the transaction and rolls it back,
    so its counts are exactly what a real run would do. ``request.step`` runs before each source
    memory and episode; whatever it raises rolls the merge back and propagates.
    """
    counts: dict[str, dict[str, int]] = {}
    with rolled_back_if(request.dry_run, db.write()) as conn:
        counts["memories"] = _merge_memories(conn, request)
        counts["episodes"] = _merge_episodes(conn, request)
        counts["profiles"] = _merge_profiles(conn, request.source, request.target, request.mode)
    return counts


def _ids(conn: sqlite3.Connection, table: str, agent: str) -> list[int]:
    return [
        int(r[0]) for r in conn.execute(f"SELECT id FROM {table} WHERE agent_id = ? ORDER BY id", (agent,))
    ]


_COPY_BLOCKS = (
    "INSERT INTO memory_blocks(memory_id, block_index, char_start, char_end, agent_id, project_id, channel, "
    "embedding, embedding_model, embedding_dim) SELECT ?, block_index, char_start, char_end, ?, project_id, "
    "channel, embedding, embedding_model, embedding_dim FROM memory_blocks WHERE memory_id = ?"
)


def _place(
    conn: sqlite3.Connection,
    table: str,
    rid: int,
    request: MergeRequest,
    duplicate: int | None,
    has_vector: bool,
    result: dict[str, int],
) -> int:
    """One source row into ``target``: skip a duplicate (a move deletes it), else move or copy it.

    Returns the id the row has in ``target`` now (the duplicate's, the moved row's, or the copy's).
    """
    target, mode, queued_at = request.target, request.mode, request.queued_at
    if duplicate is not None:
        result["skipped"] += 1
        if mode == MOVE:
            conn.execute(f"DELETE FROM {table} WHERE id = ?", (rid,))
            SqliteTasks(conn).remove_for_target(table, rid)
        return duplicate
    if mode == MOVE:
        conn.execute(f"UPDATE {table} SET agent_id = ? WHERE id = ?", (target, rid))
        result["moved"] += 1
        return rid
    columns = MERGE_COPY_COLUMNS[table]
    cursor = conn.execute(
        f"INSERT INTO {table}(agent_id, {columns}) SELECT ?, {columns} FROM {table} WHERE id = ?",
        (target, rid),
    )
    result["copied"] += 1
    new_id = int(cursor.lastrowid or 0)
    if table == "memories":  # a long memory's blocks come along (docs/retrieval.md#long-records)
        conn.execute(_COPY_BLOCKS, (new_id, target, rid))
    if not has_vector and queued_at is not None:
        SqliteTasks(conn).enqueue(EMBED, table, new_id, queued_at)
    return new_id


def _merge_memories(conn: sqlite3.Connection, request: MergeRequest) -> dict[str, int]:
    source, target, mode = request.source, request.target, request.mode
    result = merge_counts(mode)
    source_ids = _ids(conn, "memories", source)
    links = links_of(SqliteLinks(conn), source_ids)  # read before a move's deletes take them
    # The source's supersede links, to write again between the rows' places in the target.
    supersedes = [
        (int(r[0]), int(r[1]), str(r[2]))
        for r in conn.execute(
            "SELECT id, superseded_by, superseded_at FROM memories WHERE agent_id = ? AND superseded_by IS NOT NULL",
            (source,),
        )
    ]
    placed: dict[int, int] = {}
    for rid in stepped(source_ids, request.step):
        row = conn.execute(
            "SELECT project_id, channel, msg_id, content, locked, embedding IS NOT NULL FROM memories WHERE id = ?",
            (rid,),
        ).fetchone()
        project, channel, msg_id, content, locked, has_vector = row
        dup = None
        if msg_id:
            dup = conn.execute(
                "SELECT id FROM memories WHERE agent_id = ? AND project_id = ? AND msg_id = ? AND msg_id <> ''",
                (target, project, msg_id),
            ).fetchone()
        if dup is None:
            dup = conn.execute(
                "SELECT id FROM memories WHERE agent_id = ? AND project_id = ? AND channel = ? AND content = ?",
                (target, project, channel, content),
            ).fetchone()
        if dup is not None and mode == MOVE and locked:
            conn.execute(
                "UPDATE memories SET locked = 1 WHERE id = ?", (dup[0],)
            )  # the lock survives the move
        duplicate = None if dup is None else int(dup[0])
        placed[rid] = _place(conn, "memories", rid, request, duplicate, has_vector, result)
    # Declared links follow the rows whose id changed; supersede links are rewritten between places.
    carry_links(SqliteLinks(conn), links, {r: b for r, b in placed.items() if b != r}, mode)
    if supersedes:
        apply_imported_links(placed.get, SqliteSupersedeLinks(conn), supersedes)
    return result


def _merge_episodes(conn: sqlite3.Connection, request: MergeRequest) -> dict[str, int]:
    result = merge_counts(request.mode)
    for rid in stepped(_ids(conn, "episodes", request.source), request.step):
        project, channel, summary, has_vector = conn.execute(
            "SELECT project_id, channel, summary, embedding IS NOT NULL FROM episodes WHERE id = ?", (rid,)
        ).fetchone()
        dup = conn.execute(
            "SELECT id FROM episodes WHERE agent_id = ? AND project_id = ? AND channel = ? AND summary = ? LIMIT 1",
            (request.target, project, channel, summary),
        ).fetchone()
        duplicate = None if dup is None else int(dup[0])
        _place(conn, "episodes", rid, request, duplicate, has_vector, result)
    return result


def _merge_profiles(conn: sqlite3.Connection, source: str, target: str, mode: str) -> dict[str, int]:
    result = merge_counts(mode)
    rows: list[Any] = conn.execute(
        "SELECT project_id, user_id, content, updated_at FROM profiles WHERE agent_id = ? "
        "ORDER BY project_id, user_id",
        (source,),
    ).fetchall()
    for project, user, content, updated_at in rows:
        existing = conn.execute(
            "SELECT updated_at FROM profiles WHERE agent_id = ? AND project_id = ? AND user_id = ?",
            (target, project, user),
        ).fetchone()
        if existing is not None and existing[0] >= updated_at:
            result["skipped"] += 1
        else:
            conn.execute(
                "INSERT INTO profiles(agent_id, project_id, user_id, content, updated_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(agent_id, project_id, user_id) DO UPDATE SET content = excluded.content, "
                "updated_at = excluded.updated_at",
                (target, project, user, content, updated_at),
            )
            result["copied" if mode == COPY else "moved"] += 1
        if mode == MOVE:
            conn.execute(
                "DELETE FROM profiles WHERE agent_id = ? AND project_id = ? AND user_id = ?",
                (source, project, user),
            )
    return result
