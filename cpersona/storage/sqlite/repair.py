"""Write statements behind ``check_health(fix=true)``. Each runs inside the caller's ``db.write()``.

Every statement on ``memories`` carries ``AND locked = 0``: a repair never
touches a locked row, even if the caller's list was stale.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import Any

from cpersona.storage.sqlite.health import FTS_BY_NAME, SchemaObject
from cpersona.storage.sqlite.tasks import SqliteTasks
from cpersona.storage.values import EMBED


def recreate(conn: sqlite3.Connection, obj: SchemaObject) -> None:
    """Run the migration statement that creates a missing index or trigger."""
    conn.execute(obj.ddl)


def rebuild_fts(conn: sqlite3.Connection, index_name: str) -> None:
    """Rebuild an FTS index (trigram or words) from its content table (FTS5 'rebuild')."""
    fts = FTS_BY_NAME[index_name].name
    conn.execute(f"INSERT INTO {fts}({fts}) VALUES ('rebuild')")


def queue_embeddings(conn: sqlite3.Connection, table: str, ids: Iterable[int], when: str) -> int:
    """Queue embedding tasks for ``ids`` (existing tasks are kept); returns how many were new."""
    before = conn.total_changes
    queue = SqliteTasks(conn)
    for rid in ids:
        queue.enqueue(EMBED, table, rid, when)
    return conn.total_changes - before


def delete_unlocked_memories(conn: sqlite3.Connection, ids: Iterable[int]) -> int:
    """Delete memories (and their queued tasks) unless locked; returns rows deleted."""
    deleted = 0
    for rid in ids:
        n = conn.execute("DELETE FROM memories WHERE id = ? AND locked = 0", (rid,)).rowcount
        if n:
            SqliteTasks(conn).remove_for_target("memories", rid)
            deleted += n
    return deleted


def cut_memory(conn: sqlite3.Connection, rid: int, cap: int) -> bool:
    """Cut an unlocked memory to ``cap`` characters and drop its vector (the text changed).

    Returns False when the row is locked/gone, or when the cut text would
    duplicate another memory in its scope (the unique index refuses it).
    """
    try:
        n = conn.execute(
            "UPDATE memories SET content = substr(content, 1, ?), embedding = NULL, embedding_model = NULL, "
            "embedding_dim = NULL WHERE id = ? AND locked = 0",
            (cap, rid),
        ).rowcount
    except sqlite3.IntegrityError:
        return False
    return bool(n)


def cut_profile(conn: sqlite3.Connection, agent: str, project: str, user: str, cap: int) -> bool:
    """Cut a profile to ``cap`` characters."""
    n = conn.execute(
        "UPDATE profiles SET content = substr(content, 1, ?) WHERE agent_id = ? AND project_id = ? AND user_id = ?",
        (cap, agent, project, user),
    ).rowcount
    return bool(n)


def wrap_invalid_json(conn: sqlite3.Connection, rid: int, column: str, raw: str) -> bool:
    """Replace a non-object source/metadata with ``{"invalid_json": <the original text>}`` (nothing lost)."""
    if column not in ("source", "metadata"):
        raise ValueError(column)
    wrapped = json.dumps({"invalid_json": raw}, ensure_ascii=False)
    n = conn.execute(
        f"UPDATE memories SET {column} = ? WHERE id = ? AND locked = 0 AND {column} = ?", (wrapped, rid, raw)
    ).rowcount
    return bool(n)


def set_timestamp(conn: sqlite3.Connection, table: str, key: Any, column: str, old: str, new: str) -> bool:
    """Rewrite one timestamp in the stored form (only if it still holds ``old``)."""
    if table == "profiles":
        agent, project, user = key
        sql = (
            f"UPDATE profiles SET {column} = ? WHERE agent_id = ? AND project_id = ? AND user_id = ? "
            f"AND {column} = ?"
        )
        return bool(conn.execute(sql, (new, agent, project, user, old)).rowcount)
    lock = " AND locked = 0" if table == "memories" else ""
    sql = f"UPDATE {table} SET {column} = ? WHERE id = ? AND {column} = ?{lock}"
    return bool(conn.execute(sql, (new, key, old)).rowcount)


def delete_tasks(conn: sqlite3.Connection, ids: Iterable[int]) -> int:
    """Remove queued tasks by id."""
    return sum(conn.execute("DELETE FROM pending_memory_tasks WHERE id = ?", (i,)).rowcount for i in ids)


#: The text columns whose vector was computed from them (a rewrite drops it; the queue re-embeds).
_EMBEDDED_TEXT = {("memories", "content"), ("episodes", "summary")}


def replace_text(conn: sqlite3.Connection, table: str, key: Any, column: str, old: str, new: str) -> bool:
    """Rewrite one text column if it still holds ``old`` (locked rows too); False on a change or a clash."""
    drop = (
        ", embedding = NULL, embedding_model = NULL, embedding_dim = NULL"
        if (table, column) in _EMBEDDED_TEXT
        else ""
    )
    if table == "profiles":
        agent, project, user = key
        where, params = "agent_id = ? AND project_id = ? AND user_id = ?", [agent, project, user]
    else:
        where, params = "id = ?", [key]
    try:
        cur = conn.execute(
            f"UPDATE {table} SET {column} = ?{drop} WHERE {where} AND {column} = ?", (new, *params, old)
        )
    except sqlite3.IntegrityError:
        return False  # another memory of the scope already holds the redacted text
    return bool(cur.rowcount)
