"""``MaintenanceRows`` on PostgreSQL: merging agents and the channel-axis repair, one transaction each.

The same rules as the SQLite engine (``cpersona.storage.sqlite.merge``, ``port_channels``):
dedup on the target's scopes exactly as the unique indexes do, skip (never upsert) a
duplicate, copy keeps vectors / timestamps / locks / recall statistics, move re-owns the
rows (same ids, so vectors and queued tasks stay valid) and deletes the skipped ones, a
locked duplicate passes its lock on; locked rows never change channel. Inserts are
``ON CONFLICT DO NOTHING`` and updates that could clash run under a savepoint, so a row
another server wrote in the meantime is skipped rather than aborting the transaction. A
dry run does all of it and rolls back, so its counts are exact.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import psycopg

from cpersona.storage.link_carry import carry_links, links_of
from cpersona.storage.maintenance_interface import (
    COPY,
    MOVE,
    ChannelReport,
    ChannelRequest,
    MergeRequest,
    merge_counts,
    rolled_back_if,
    stepped,
)
from cpersona.storage.postgres.links import PgLinks
from cpersona.storage.postgres.sql import Executor
from cpersona.storage.postgres.supersede import PgSupersedeLinks
from cpersona.storage.postgres.tasks import PgTasks
from cpersona.storage.sql_text import MERGE_COPY_COLUMNS
from cpersona.storage.supersede_interface import apply_imported_links
from cpersona.storage.values import EMBED

Transaction = Callable[[bool], AbstractContextManager[Executor]]


class PgMaintenanceRows:
    """``MaintenanceRows`` on PostgreSQL; ``transaction(read_only)`` opens a snapshot or a write."""

    def __init__(self, transaction: Transaction) -> None:
        self.transaction = transaction

    def merge_agents(self, request: MergeRequest) -> dict[str, dict[str, int]]:
        """Merge ``request.source`` into its target; counts per table (the same numbers in a dry run)."""
        counts: dict[str, dict[str, int]] = {}
        with rolled_back_if(request.dry_run, self.transaction(False)) as ex:
            counts["memories"] = _merge_memories(ex, request)
            counts["episodes"] = _merge_episodes(ex, request)
            counts["profiles"] = _merge_profiles(ex, request.source, request.target, request.mode)
        return counts

    def migrate_channels(self, request: ChannelRequest) -> ChannelReport:
        """Move rows under the bridges onto the channel ``request.resolve`` finds; one transaction."""
        report = ChannelReport()
        bridges, agent_id = request.bridges, request.agent_id
        if not bridges:
            return report
        agent_sql, agent_params = (" AND agent_id = %s", [agent_id]) if agent_id is not None else ("", [])
        with rolled_back_if(request.dry_run, self.transaction(False)) as ex:
            for row in ex.all(
                "SELECT id, agent_id, project_id, channel, content, source, metadata, locked FROM memories "
                f"WHERE channel = ANY(%s){agent_sql} ORDER BY id",
                [list(bridges), *agent_params],
            ):
                report.scanned += 1
                _migrate_memory(ex, row, request, report)
            for ep in ex.all(
                f"SELECT id, agent_id, project_id, channel, summary FROM episodes WHERE channel = ANY(%s){agent_sql} "
                "ORDER BY id",
                [list(bridges), *agent_params],
            ):
                report.scanned += 1
                _migrate_episode(ex, ep, request.globalize, report)
        return report


# -- merge ---------------------------------------------------------------------------------------


def _ids(ex: Executor, table: str, agent: str) -> list[int]:
    return [int(r["id"]) for r in ex.all(f"SELECT id FROM {table} WHERE agent_id = %s ORDER BY id", (agent,))]


def _skip(ex: Executor, table: str, rid: int, mode: str, result: dict[str, int]) -> None:
    result["skipped"] += 1
    if mode == MOVE:
        ex.run(f"DELETE FROM {table} WHERE id = %s", (rid,))
        PgTasks(ex).remove_for_target(table, rid)


def _place(
    ex: Executor,
    table: str,
    rid: int,
    request: MergeRequest,
    duplicate: int | None,
    has_vector: bool,
    result: dict[str, int],
) -> int | None:
    """One source row into ``target``: skip a duplicate (a move deletes it), else move or copy it.

    Returns the id the row has in ``target`` now (None: a duplicate that appeared since the probe).
    """
    target, mode, queued_at = request.target, request.mode, request.queued_at
    if duplicate is not None:
        _skip(ex, table, rid, mode, result)
        return duplicate
    if mode == MOVE:
        try:
            with ex.savepoint():
                ex.run(f"UPDATE {table} SET agent_id = %s WHERE id = %s", (target, rid))
        except psycopg.errors.UniqueViolation:  # the target gained this row since the probe
            _skip(ex, table, rid, mode, result)
            return None
        result["moved"] += 1
        return rid
    columns = MERGE_COPY_COLUMNS[table]
    new_id = ex.value(
        f"INSERT INTO {table}(agent_id, {columns}) SELECT %s, {columns} FROM {table} WHERE id = %s "
        "ON CONFLICT DO NOTHING RETURNING id",
        (target, rid),
    )
    if new_id is None:
        result["skipped"] += 1
        return None
    result["copied"] += 1
    if table == "memories":  # a long memory's blocks come along (docs/retrieval.md#long-records)
        ex.run(
            "INSERT INTO memory_blocks(memory_id, block_index, char_start, char_end, agent_id, project_id, channel, "
            "embedding, embedding_model, embedding_dim) SELECT %s, block_index, char_start, char_end, %s, "
            "project_id, channel, embedding, embedding_model, embedding_dim FROM memory_blocks WHERE memory_id = %s",
            (int(new_id), target, rid),
        )
    if not has_vector and queued_at is not None:
        PgTasks(ex).enqueue(EMBED, table, int(new_id), queued_at)
    return int(new_id)


def _merge_memories(ex: Executor, request: MergeRequest) -> dict[str, int]:
    source, target, mode = request.source, request.target, request.mode
    result = merge_counts(mode)
    source_ids = _ids(ex, "memories", source)
    links = links_of(PgLinks(ex), source_ids)  # read before a move's deletes take them
    # The source's supersede links, to write again between the rows' places in the target.
    supersedes = [
        (int(r["id"]), int(r["superseded_by"]), str(r["superseded_at"]))
        for r in ex.all(
            "SELECT id, superseded_by, superseded_at FROM memories WHERE agent_id = %s AND superseded_by IS NOT NULL",
            (source,),
        )
    ]
    placed: dict[int, int | None] = {}
    for rid in stepped(source_ids, request.step):
        row = ex.one(
            "SELECT project_id, channel, msg_id, content, locked, embedding IS NOT NULL AS has_vector FROM memories "
            "WHERE id = %s",
            (rid,),
        )
        assert row is not None
        dup = None
        if row["msg_id"]:
            dup = ex.value(
                "SELECT id FROM memories WHERE agent_id = %s AND project_id = %s AND md5(msg_id) = md5(%s) "
                "AND msg_id = %s AND msg_id <> ''",
                (target, row["project_id"], row["msg_id"], row["msg_id"]),
            )
        if dup is None:
            dup = ex.value(
                "SELECT id FROM memories WHERE agent_id = %s AND project_id = %s AND channel = %s "
                "AND md5(content) = md5(%s) AND content = %s",
                (target, row["project_id"], row["channel"], row["content"], row["content"]),
            )
        if dup is not None and mode == MOVE and row["locked"]:
            ex.run("UPDATE memories SET locked = TRUE WHERE id = %s", (dup,))  # the lock survives the move
        placed[rid] = _place(
            ex, "memories", rid, request, None if dup is None else int(dup), bool(row["has_vector"]), result
        )
    # Declared links follow the rows whose id changed; supersede links are rewritten between places.
    moved = {r: b for r, b in placed.items() if b is not None and b != r}
    carry_links(PgLinks(ex), links, moved, mode)
    if supersedes:
        apply_imported_links(lambda rid: placed.get(rid), PgSupersedeLinks(ex), supersedes)
    return result


def _merge_episodes(ex: Executor, request: MergeRequest) -> dict[str, int]:
    result = merge_counts(request.mode)
    for rid in stepped(_ids(ex, "episodes", request.source), request.step):
        row = ex.one(
            "SELECT project_id, channel, summary, embedding IS NOT NULL AS has_vector FROM episodes WHERE id = %s",
            (rid,),
        )
        assert row is not None
        dup = ex.value(
            "SELECT id FROM episodes WHERE agent_id = %s AND project_id = %s AND channel = %s AND summary = %s LIMIT 1",
            (request.target, row["project_id"], row["channel"], row["summary"]),
        )
        _place(
            ex, "episodes", rid, request, None if dup is None else int(dup), bool(row["has_vector"]), result
        )
    return result


def _merge_profiles(ex: Executor, source: str, target: str, mode: str) -> dict[str, int]:
    result = merge_counts(mode)
    rows = ex.all(
        "SELECT project_id, user_id, content, updated_at FROM profiles WHERE agent_id = %s "
        'ORDER BY project_id COLLATE "C", user_id COLLATE "C"',
        (source,),
    )
    for r in rows:
        key = (r["project_id"], r["user_id"])
        existing = ex.value(
            "SELECT updated_at FROM profiles WHERE agent_id = %s AND project_id = %s AND user_id = %s",
            (target, *key),
        )
        if existing is not None and existing >= r["updated_at"]:
            result["skipped"] += 1
        else:
            ex.run(
                "INSERT INTO profiles(agent_id, project_id, user_id, content, updated_at) VALUES (%s, %s, %s, %s, %s) "
                "ON CONFLICT (agent_id, project_id, user_id) DO UPDATE SET content = excluded.content, "
                "updated_at = excluded.updated_at",
                (target, *key, r["content"], r["updated_at"]),
            )
            result["copied" if mode == COPY else "moved"] += 1
        if mode == MOVE:
            ex.run(
                "DELETE FROM profiles WHERE agent_id = %s AND project_id = %s AND user_id = %s",
                (source, *key),
            )
    return result


# -- channel axis --------------------------------------------------------------------------------


def _migrate_memory(
    ex: Executor, row: dict[str, Any], request: ChannelRequest, report: ChannelReport
) -> None:
    destination = report.target_for(row, request)
    if destination is None:
        return
    target, kind = destination
    ref = f"mem:{row['id']}"
    clash = ex.value(
        "SELECT id FROM memories WHERE agent_id = %s AND project_id = %s AND channel = %s "
        "AND md5(content) = md5(%s) AND content = %s",
        (row["agent_id"], row["project_id"], target, row["content"], row["content"]),
    )
    if clash is None:
        try:
            with ex.savepoint():
                ex.run("UPDATE memories SET channel = %s WHERE id = %s", (target, row["id"]))
        except psycopg.errors.UniqueViolation:  # written by another server since the probe
            clash = "?"
    if clash is not None:
        report.note("collisions", ref, channel=row["channel"], target=target, existing=f"mem:{clash}")
        return
    report.landed(kind, target)


def _migrate_episode(ex: Executor, ep: dict[str, Any], globalize: bool, report: ChannelReport) -> None:
    ref = f"ep:{ep['id']}"
    if not globalize:
        report.note("unrecoverable", ref, channel=ep["channel"])
        return
    clash = ex.value(
        "SELECT id FROM episodes WHERE agent_id = %s AND project_id = %s AND channel = '' AND summary = %s LIMIT 1",
        (ep["agent_id"], ep["project_id"], ep["summary"]),
    )
    if clash is not None:
        report.note("collisions", ref, channel=ep["channel"], target="", existing=f"ep:{clash}")
        return
    ex.run("UPDATE episodes SET channel = '' WHERE id = %s", (ep["id"],))
    report.landed("globalized", "")
