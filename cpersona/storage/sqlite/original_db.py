"""The original CPersona's SQLite file, read without writing to it (portability/original.py maps its rows).

Also the two file operations moving it in needs: a consistent copy through SQLite's backup API (never a
file copy of a live WAL database) and folding its WAL in before the new file takes its path.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

from cpersona.errors import DatabaseUnavailable
from cpersona.storage.sqlite.file_kind import open_read_only

#: The files SQLite keeps beside a database.
COMPANIONS = ("-wal", "-shm", "-journal")
#: Its predicates that say the object row replaces the subject row (this edition's supersede link).
SUPERSEDING = "('supersedes', 'corrects')"
#: The original's tables whose rows this edition carries, in the order they are read.
ROW_TABLES = ("memories", "episodes", "profiles")


class OriginalFile:
    """An original database opened read-only, its rows read in one snapshot (``with`` it)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn = open_read_only(path)
        self._conn.row_factory = sqlite3.Row

    def __enter__(self) -> OriginalFile:
        self._conn.execute("BEGIN")  # one read transaction: every count and row of one moment
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the snapshot and close the connection."""
        with suppress(sqlite3.Error):
            if self._conn.in_transaction:
                self._conn.execute("COMMIT")
        self._conn.close()

    def schema_version(self) -> int:
        """The original's recorded schema version."""
        return int(self._conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] or 0)

    def table_counts(self) -> dict[str, int]:
        """Rows per table (FTS5's virtual and index tables left out: this edition rebuilds its own)."""
        names = [
            str(r[0])
            for r in self._conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'"
            )
        ]
        return {
            n: int(self._conn.execute(f'SELECT COUNT(*) FROM "{n}"').fetchone()[0])
            for n in sorted(names)
            if "_fts" not in n
        }

    def fingerprint(self) -> tuple[Any, ...]:
        """What any write of the original's changes: rows, newest ids, locks, recall counts, profile times."""
        parts: list[Any] = []
        for table in ROW_TABLES:
            parts.extend(self._conn.execute(f"SELECT COUNT(*), MAX(id) FROM {table}").fetchone())
        parts.extend(
            self._conn.execute(
                "SELECT TOTAL(locked), TOTAL(recall_count), MAX(last_recalled_at) FROM memories"
            ).fetchone()
        )
        parts.append(self._conn.execute("SELECT MAX(updated_at) FROM profiles").fetchone()[0])
        return tuple(parts)

    def agent_ids(self) -> list[str]:
        """Every agent id its memories, episodes and profiles name."""
        union = " UNION ".join(f"SELECT agent_id FROM {t}" for t in ROW_TABLES)
        return [str(r[0]) for r in self._conn.execute(f"SELECT DISTINCT agent_id FROM ({union}) ORDER BY 1")]

    def rows(self, table: str) -> Iterator[dict[str, Any]]:
        """Every row of one of ``ROW_TABLES``, by id, as a dict of its columns."""
        if table not in ROW_TABLES:
            raise ValueError(f"not a table this edition carries: {table}")
        for row in self._conn.execute(f"SELECT * FROM {table} ORDER BY id"):
            yield dict(row)

    def superseded(self) -> list[dict[str, Any]]:
        """2.6's declared corrections between memories (``older`` supersedes-by ``newer``, ``at``): its
        relation from a claim to the row that supersedes or corrects it. Empty for a 2.5 file."""
        tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "relations" not in tables:
            return []
        return [
            dict(r)
            for r in self._conn.execute(
                "SELECT subject_id AS older, object_id AS newer, declared_at AS at FROM relations"
                f" WHERE subject_kind = 'mem' AND object_kind = 'mem' AND predicate IN {SUPERSEDING} ORDER BY id"
            )
        ]

    def declared_links(self) -> Iterator[dict[str, Any]]:
        """2.6's declarations that start at a memory: its relations (to a memory or an entity, by name)
        and its entity mentions by a memory (``relation`` "mentions"). Empty for a 2.5 file."""
        tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if {"relations", "entities"} <= tables:
            yield from map(
                dict,
                self._conn.execute(
                    "SELECT 'relations' AS source_table, r.subject_id AS from_id, r.predicate AS relation,"
                    " CASE WHEN r.object_kind = 'mem' THEN r.object_id END AS to_id,"
                    " CASE WHEN r.object_kind = 'entity' THEN e.name END AS entity"
                    " FROM relations r LEFT JOIN entities e ON r.object_kind = 'entity' AND e.id = r.object_id"
                    " WHERE r.subject_kind = 'mem' AND r.object_kind IN ('mem', 'entity')"
                    f" AND NOT (r.object_kind = 'mem' AND r.predicate IN {SUPERSEDING}) ORDER BY r.id"
                ),
            )
        if {"entity_mentions", "entities"} <= tables:
            yield from map(
                dict,
                self._conn.execute(
                    "SELECT 'entity_mentions' AS source_table, CAST(substr(m.ref, 5) AS INTEGER) AS from_id,"
                    " 'mentions' AS relation,"
                    " NULL AS to_id, e.name AS entity"
                    " FROM entity_mentions m JOIN entities e ON e.id = m.entity_id"
                    " WHERE m.ref LIKE 'mem:%' ORDER BY m.entity_id, m.ref"
                ),
            )


def write_backup(source: Path, target: Path) -> None:
    """A consistent copy of ``source`` at ``target`` through SQLite's backup API (its WAL's commits in)."""
    partial = target.with_name(target.name + ".partial")
    try:
        with suppress(FileNotFoundError):
            partial.unlink()
        src = open_read_only(source)
        try:
            dst = sqlite3.connect(str(partial))
            try:
                src.backup(dst)
            finally:
                dst.close()
        finally:
            src.close()
        os.replace(partial, target)
    except (sqlite3.Error, OSError) as exc:
        with suppress(OSError):
            partial.unlink()
        raise DatabaseUnavailable(
            f"cannot write a backup of {source} at {target} ({exc}); nothing was moved and the file was left "
            "as it was: check that folder's permissions and free space"
        ) from exc


def remove_with_companions(path: Path) -> None:
    """Delete a database file and whatever SQLite kept beside it."""
    for name in (path, *(path.with_name(path.name + c) for c in COMPANIONS)):
        with suppress(FileNotFoundError):
            name.unlink()


def settle(path: Path) -> None:
    """Fold the file's WAL into it and remove its companions, so none is left to be replayed onto
    another file that takes this path."""
    if path.with_name(path.name + "-wal").exists():
        try:
            conn = sqlite3.connect(str(path))
            try:
                busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            finally:
                conn.close()
            if busy:
                raise sqlite3.OperationalError("another process is writing to it")
        except sqlite3.Error as exc:
            raise DatabaseUnavailable(
                f"{path}: could not fold its write-ahead log in ({exc}); stop the original CPersona server "
                "that uses it, then start this one again. The file was left as it was."
            ) from exc
    for companion in COMPANIONS:
        with suppress(FileNotFoundError):
            path.with_name(path.name + companion).unlink()
