"""Storage: the only package that speaks SQL.

``interface`` states what the layers above may ask (protocols, value types).
Two engines implement it: SQLite (``sqlite``, ``db``, ``migrations`` and one
module per repository) and PostgreSQL (``storage.postgres``). ``open_store``
picks the engine. See docs/architecture.md.
"""

from __future__ import annotations

from pathlib import Path

from cpersona.errors import DatabaseUnavailable
from cpersona.storage.interface import Store

# Re-exported: callers name a location's helpers beside open_store.
from cpersona.storage.locations import POSTGRES_SCHEMES as POSTGRES_SCHEMES
from cpersona.storage.locations import is_postgres_url
from cpersona.storage.locations import redact_url as redact_url
from cpersona.storage.original_interface import OriginalRows


def open_store(
    location: Path | str,
    *,
    pg_vector_index: str = "hnsw",
    read_only: bool = False,
    vector_float32: str = "memory",
) -> Store:
    """Open (and migrate) the store at ``location``: a ``postgresql://`` URL or a SQLite file path.

    ``pg_vector_index`` ("hnsw" | "exact") is how PostgreSQL searches vectors (see storage.postgres.vector_search).
    ``vector_float32`` ("memory" | "file") is where SQLite's vector index reads the float32 rows it rescores
    after its int8 pass (see storage.vector_index).
    ``read_only`` opens it without migrating, and every write is refused by the engine itself (SQLite:
    ``mode=ro`` + ``query_only``; PostgreSQL: ``default_transaction_read_only``): report-only health checks.
    """
    if is_postgres_url(location):
        try:
            from cpersona.storage.postgres.store import PgStore
        except ModuleNotFoundError as exc:
            raise DatabaseUnavailable(
                f"CPERSONA_DB_URL names PostgreSQL but its driver is missing ({exc.name}): "
                'pip install "cpersona-embedded[postgres]"'
            ) from exc
        return PgStore(str(location), vector_index=pg_vector_index, read_only=read_only)
    from cpersona.storage.sqlite.store import SqliteStore

    keep_vectors = vector_float32 == "memory"
    if read_only:
        return SqliteStore.read_only_view(location, keep_vectors=keep_vectors)
    return SqliteStore(location, keep_vectors=keep_vectors)


# -- the original CPersona's files (SQLite only; portability/move_in.py moves them in) ------------


def original_schema_version(path: Path) -> int | None:
    """The original's schema version when the file at ``path`` is its database (one we move in), else None."""
    from cpersona.storage.sqlite.file_kind import recognise

    found = recognise(path)
    return found.original_version if found.kind == "original" else None


def open_original(path: Path) -> OriginalRows:
    """The original's database at ``path``, read-only."""
    from cpersona.storage.sqlite.original_db import OriginalFile

    return OriginalFile(path)


def backup_database(source: Path, target: Path) -> None:
    """A consistent copy of the SQLite file ``source`` at ``target`` (SQLite's backup API)."""
    from cpersona.storage.sqlite.original_db import write_backup

    write_backup(source, target)


def settle_database(path: Path) -> None:
    """Fold the SQLite file's WAL in and remove its companions (before another file takes its path)."""
    from cpersona.storage.sqlite.original_db import settle

    settle(path)


def remove_database(path: Path) -> None:
    """Delete a SQLite file and its companions."""
    from cpersona.storage.sqlite.original_db import remove_with_companions

    remove_with_companions(path)
