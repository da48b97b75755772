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

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(location: Path | str) -> bool:
    """True when ``location`` is a PostgreSQL URL rather than a file path."""
    return isinstance(location, str) and location.startswith(POSTGRES_SCHEMES)


def open_store(location: Path | str, *, pg_vector_index: str = "hnsw") -> Store:
    """Open (and migrate) the store at ``location``: a ``postgresql://`` URL or a SQLite file path.

    ``pg_vector_index`` ("hnsw" | "exact") is how PostgreSQL searches vectors (see storage.postgres.vectors).
    """
    if is_postgres_url(location):
        try:
            from cpersona.storage.postgres.store import PgStore
        except ModuleNotFoundError as exc:
            raise DatabaseUnavailable(
                f"CPERSONA_DB_URL names PostgreSQL but its driver is missing ({exc.name}): "
                'pip install "cpersona-embedded[postgres]"'
            ) from exc
        return PgStore(str(location), vector_index=pg_vector_index)
    from cpersona.storage.sqlite import SqliteStore

    return SqliteStore(location)
