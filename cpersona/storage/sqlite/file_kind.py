"""What a file at the database path is, read before anything writes to it.

Opening a file the SQLite way already writes (the switch to WAL rewrites the header; our migrations add
tables), so a file is recognised first, through a read-only connection that creates nothing:

- ``new``: nothing there yet, an empty file, or an SQLite file without a single table;
- ``ours``: this project's schema (its ``schema_version`` has a ``description`` column);
- ``original``: a database of the original CPersona (PyPI ``cpersona``): ``schema_version`` with only
  ``version`` / ``applied_at`` and a ``memories`` table of its shape; its versions 13 (2.5.x) .. 21 (2.6.x)
  can be moved in (portability/move_in.py);
- ``foreign``: an SQLite file of another application, or an original of a version we do not read;
- ``damaged``: not an SQLite file at all, or one SQLite cannot read.

The number alone never decides: both projects name a table ``schema_version``, with other columns.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import quote

SQLITE_MAGIC = b"SQLite format 3\x00"
#: The original's schema versions this edition reads: 13 is what 2.5.x writes, 21 the newest 2.6.x.
ORIGINAL_VERSIONS = range(13, 22)
#: Columns every original ``memories`` table has (v13 on); ours has them too, plus ``embedding_model``.
_ORIGINAL_MEMORY_COLUMNS = {"agent_id", "project_id", "msg_id", "content", "source", "timestamp", "embedding"}

Kind = Literal["new", "ours", "original", "foreign", "damaged"]


@dataclass(frozen=True)
class FileKind:
    """The verdict on one file, with what it was based on."""

    kind: Kind
    path: Path
    #: The original's schema version (``original``, or a ``foreign`` original of another version).
    original_version: int | None = None
    #: Table names found (without FTS5 shadow tables), for the messages.
    tables: tuple[str, ...] = field(default_factory=tuple)
    reason: str = ""

    def refusal(self) -> str:
        """The one-line error for a file we must not open (foreign or damaged), naming the fix."""
        if self.kind == "damaged":
            return (
                f"cannot open the database {self.path}: it is not a readable SQLite database ({self.reason}); "
                "point CPERSONA_DB_PATH at your "
                "memory database (or at a new file), or restore it from a backup. The file was left untouched."
            )
        if self.original_version is not None:
            return (
                f"cannot open the database {self.path}: it was written by the original CPersona with schema "
                f"version {self.original_version}; "
                f"this edition moves in versions {ORIGINAL_VERSIONS.start}..{ORIGINAL_VERSIONS.stop - 1} "
                "(open it once with cpersona 2.5.12 or newer, then start this server again). "
                "The file was left untouched."
            )
        shown = ", ".join(self.tables[:6]) + (", ..." if len(self.tables) > 6 else "")
        return (
            f"cannot open the database {self.path}: it is not a CPersona database (it holds the tables {shown}); "
            "point CPERSONA_DB_PATH at "
            "your memory database, or at a new file to start one. The file was left untouched."
        )


def open_read_only(path: Path, *, immutable: bool | None = None) -> sqlite3.Connection:
    """A connection that cannot write and creates no file: ``immutable`` when no WAL is beside it
    (``immutable=True`` forces it: the main file alone, its WAL not read)."""
    if immutable is None:
        immutable = not path.with_name(path.name + "-wal").exists()
    flags = "mode=ro&immutable=1" if immutable else "mode=ro"
    conn = sqlite3.connect(f"file:{quote(str(path.resolve()))}?{flags}", uri=True, isolation_level=None)
    conn.execute("PRAGMA query_only = 1")
    return conn


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {str(row[1]) for row in conn.execute(f'PRAGMA table_info("{table}")')}


def recognise(path: Path | str) -> FileKind:
    """Read what the file at ``path`` is, without writing to it or creating anything beside it."""
    path = Path(path)
    try:
        with path.open("rb") as handle:
            head = handle.read(len(SQLITE_MAGIC))
    except FileNotFoundError:
        return FileKind("new", path)
    except IsADirectoryError:
        return FileKind("damaged", path, reason="it is a directory")
    except OSError as exc:
        # Unreadable for this process: let the ordinary open report it with its own message.
        return FileKind("new", path, reason=str(exc))
    if not head:
        return FileKind("new", path)
    if head != SQLITE_MAGIC:
        return FileKind("damaged", path, reason="its first bytes are not an SQLite header")
    try:
        return _read(path, immutable=None)
    except sqlite3.Error as exc:
        if not path.with_name(path.name + "-wal").exists():
            return FileKind("damaged", path, reason=str(exc))
    # A WAL beside it that a read-only connection cannot use (no -shm, a folder it may not write to):
    # its main file alone still says what it is (its WAL is replayed when it is opened for real).
    try:
        return _read(path, immutable=True)
    except sqlite3.Error as exc:
        return FileKind("damaged", path, reason=str(exc))


def _read(path: Path, *, immutable: bool | None) -> FileKind:
    conn = open_read_only(path, immutable=immutable)
    try:
        return _classify(conn, path)
    finally:
        conn.close()


def _classify(conn: sqlite3.Connection, path: Path) -> FileKind:
    names = [
        str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
    ]
    # FTS5 keeps its index in shadow tables named after the virtual table: not worth naming in a message.
    tables = tuple(n for n in names if not n.startswith("sqlite_") and "_fts_" not in n)
    if not tables:
        return FileKind("new", path)
    if "schema_version" not in tables:
        return FileKind("foreign", path, tables=tables)
    version_columns = _columns(conn, "schema_version")
    memory_columns = _columns(conn, "memories") if "memories" in tables else set()
    if "description" in version_columns and (not memory_columns or "embedding_model" in memory_columns):
        return FileKind("ours", path, tables=tables)
    if version_columns == {"version", "applied_at"} and memory_columns >= _ORIGINAL_MEMORY_COLUMNS:
        row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
        version = int(row[0] or 0)
        kind: Kind = "original" if version in ORIGINAL_VERSIONS else "foreign"
        return FileKind(kind, path, original_version=version, tables=tables)
    return FileKind("foreign", path, tables=tables)
