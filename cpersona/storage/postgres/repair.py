"""``HealthRepairs`` on PostgreSQL: the write statements of ``check_health(fix=true)``.

Each runs inside the caller's ``PgStore.write()`` transaction, like the SQLite engine's
(``cpersona.storage.sqlite.repair``). Every statement on ``memories`` carries ``AND NOT locked``:
a repair never touches a locked row, even if the caller's list was stale. A statement the
unique indexes refuse runs under a savepoint, so the rest of the transaction survives it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import psycopg
from psycopg import sql

from cpersona.storage.maintenance_interface import SchemaObject
from cpersona.storage.postgres.sql import Executor
from cpersona.storage.values import EMBED


class PgRepairs:
    """``HealthRepairs`` over the ``Executor`` of an open write transaction."""

    __slots__ = ("ex",)

    def __init__(self, ex: Executor) -> None:
        self.ex = ex

    def recreate(self, obj: SchemaObject) -> None:
        """Run the migration statement that creates a missing index (or extension)."""
        self.ex.run(obj.ddl)

    def rebuild_keyword_index(self, index_name: str) -> None:
        """REINDEX one keyword index (PostgreSQL keeps them in step itself; this rebuilds a damaged one)."""
        self.ex.run(sql.SQL("REINDEX INDEX {}").format(sql.Identifier(index_name)))

    def queue_embeddings(self, table: str, ids: Iterable[int], when: str) -> int:
        """Queue embedding tasks for ``ids`` (existing tasks are kept); returns how many were new."""
        chosen = list(ids)
        if not chosen:
            return 0
        return self.ex.run(
            "INSERT INTO pending_memory_tasks(kind, target_table, target_id, not_before, created_at) "
            "SELECT %s, %s, t, %s, %s FROM unnest(%s::bigint[]) AS t ON CONFLICT DO NOTHING",
            (EMBED, table, when, when, chosen),
        )

    def delete_unlocked_memories(self, ids: Iterable[int]) -> int:
        """Delete memories (and their queued tasks) unless locked; returns rows deleted."""
        gone = [
            int(r["id"])
            for r in self.ex.all(
                "DELETE FROM memories WHERE id = ANY(%s) AND NOT locked RETURNING id", (list(ids),)
            )
        ]
        if gone:
            self.ex.run(
                "DELETE FROM pending_memory_tasks WHERE target_table = 'memories' AND target_id = ANY(%s)",
                (gone,),
            )
        return len(gone)

    def cut_memory(self, rid: int, cap: int) -> bool:
        """Cut an unlocked memory to ``cap`` characters and drop its vector; False when locked, gone or a
        duplicate of another memory in its scope once cut."""
        try:
            with self.ex.savepoint():
                n = self.ex.run(
                    "UPDATE memories SET content = substr(content, 1, %s), embedding = NULL, embedding_model = NULL, "
                    "embedding_dim = NULL WHERE id = %s AND NOT locked",
                    (cap, rid),
                )
        except psycopg.errors.UniqueViolation:
            return False
        return bool(n)

    def cut_profile(self, agent: str, project: str, user: str, cap: int) -> bool:
        """Cut a profile to ``cap`` characters."""
        return bool(
            self.ex.run(
                "UPDATE profiles SET content = substr(content, 1, %s) WHERE agent_id = %s AND project_id = %s "
                "AND user_id = %s",
                (cap, agent, project, user),
            )
        )

    def wrap_invalid_json(self, rid: int, column: str, raw: str) -> bool:
        """Replace a non-object source/metadata with ``{"invalid_json": <the original text>}`` (nothing lost)."""
        if column not in ("source", "metadata"):
            raise ValueError(column)
        wrapped = json.dumps({"invalid_json": raw}, ensure_ascii=False)
        return bool(
            self.ex.run(
                f"UPDATE memories SET {column} = %s WHERE id = %s AND NOT locked AND {column} = %s",
                (wrapped, rid, raw),
            )
        )

    def set_timestamp(self, table: str, key: Any, column: str, old: str, new: str) -> bool:
        """Rewrite one timestamp in the stored form (only if it still holds ``old``)."""
        if table == "profiles":
            agent, project, user = key
            return bool(
                self.ex.run(
                    f"UPDATE profiles SET {column} = %s WHERE agent_id = %s AND project_id = %s AND user_id = %s "
                    f"AND {column} = %s",
                    (new, agent, project, user, old),
                )
            )
        lock = " AND NOT locked" if table == "memories" else ""
        return bool(
            self.ex.run(
                f"UPDATE {table} SET {column} = %s WHERE id = %s AND {column} = %s{lock}", (new, key, old)
            )
        )

    def replace_text(self, table: str, key: Any, column: str, old: str, new: str) -> bool:
        """Rewrite one text column if it still holds ``old`` (locked rows too: a secret is worse than an
        edit of a locked row); a memory's content or an episode's summary drops its vector. False on a
        change meanwhile or a clash with another memory (under a savepoint, the transaction goes on)."""
        drop = (
            ", embedding = NULL, embedding_model = NULL, embedding_dim = NULL"
            if (table, column) in {("memories", "content"), ("episodes", "summary")}
            else ""
        )
        if table == "profiles":
            agent, project, user = key
            where, params = "agent_id = %s AND project_id = %s AND user_id = %s", [agent, project, user]
        else:
            where, params = "id = %s", [key]
        try:
            with self.ex.savepoint():
                return bool(
                    self.ex.run(
                        f"UPDATE {table} SET {column} = %s{drop} WHERE {where} AND {column} = %s",
                        (new, *params, old),
                    )
                )
        except psycopg.errors.UniqueViolation:
            return False

    def delete_tasks(self, ids: Iterable[int]) -> int:
        """Remove queued tasks by id."""
        return self.ex.run("DELETE FROM pending_memory_tasks WHERE id = ANY(%s)", (list(ids),))
