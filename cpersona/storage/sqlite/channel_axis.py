"""SQL of the channel-axis repair: find rows under bridge channels and move them, collision-aware.

The policy (which channels are bridges, how a concrete channel is read from a
row) is passed in by ``cpersona.portability.channel_axis``; this module only
reads and writes rows, in one write transaction.
"""

from __future__ import annotations

import sqlite3

from cpersona.storage.maintenance_interface import ChannelReport, ChannelRequest, rolled_back_if
from cpersona.storage.sqlite.db import Database


def migrate_channels(db: Database, request: ChannelRequest) -> ChannelReport:
    """Move rows stored under ``bridges`` onto the channel ``resolve`` finds; one transaction.

    Locked rows are never moved. A row whose target scope already holds the same
    content (memories) or summary (episodes) stays where it is and counts as a
    collision. Episodes carry no session id, so they are only ever globalized.
    """
    report = ChannelReport()
    bridges, agent_id = request.bridges, request.agent_id
    if not bridges:
        return report
    marks = ",".join("?" * len(bridges))
    agent_sql, agent_params = ("AND agent_id = ?", [agent_id]) if agent_id is not None else ("", [])
    with rolled_back_if(request.dry_run, db.write()) as conn:
        rows = conn.execute(
            f"SELECT id, agent_id, project_id, channel, content, source, metadata, locked FROM memories "
            f"WHERE channel IN ({marks}) {agent_sql} ORDER BY id",
            [*bridges, *agent_params],
        ).fetchall()
        for row in rows:
            report.scanned += 1
            _migrate_memory(conn, row, request, report)
        episodes = conn.execute(
            f"SELECT id, agent_id, project_id, channel, summary FROM episodes "
            f"WHERE channel IN ({marks}) {agent_sql} ORDER BY id",
            [*bridges, *agent_params],
        ).fetchall()
        for ep in episodes:
            report.scanned += 1
            _migrate_episode(conn, ep, request.globalize, report)
    return report


def _migrate_memory(
    conn: sqlite3.Connection, row: sqlite3.Row, request: ChannelRequest, report: ChannelReport
) -> None:
    destination = report.target_for(row, request)
    if destination is None:
        return
    target, kind = destination
    ref = f"mem:{row['id']}"
    clash = conn.execute(
        "SELECT id FROM memories WHERE agent_id = ? AND project_id = ? AND channel = ? AND content = ?",
        (row["agent_id"], row["project_id"], target, row["content"]),
    ).fetchone()
    if clash is not None:
        report.note("collisions", ref, channel=row["channel"], target=target, existing=f"mem:{clash[0]}")
        return
    conn.execute("UPDATE memories SET channel = ? WHERE id = ?", (target, row["id"]))
    report.landed(kind, target)


def _migrate_episode(
    conn: sqlite3.Connection, ep: sqlite3.Row, globalize: bool, report: ChannelReport
) -> None:
    ref = f"ep:{ep['id']}"
    if not globalize:
        report.note("unrecoverable", ref, channel=ep["channel"])
        return
    clash = conn.execute(
        "SELECT id FROM episodes WHERE agent_id = ? AND project_id = ? AND channel = '' AND summary = ? LIMIT 1",
        (ep["agent_id"], ep["project_id"], ep["summary"]),
    ).fetchone()
    if clash is not None:
        report.note("collisions", ref, channel=ep["channel"], target="", existing=f"ep:{clash[0]}")
        return
    conn.execute("UPDATE episodes SET channel = '' WHERE id = ?", (ep["id"],))
    report.landed("globalized", "")
