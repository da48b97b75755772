"""Where a database is: a SQLite file path or a PostgreSQL URL, told apart and shown without a password.

Its own module (not storage/__init__.py, which opens an engine) so that either engine can use it
without importing the other through ``open_store``.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(location: Path | str) -> bool:
    """True when ``location`` is a PostgreSQL URL rather than a file path."""
    return isinstance(location, str) and location.startswith(POSTGRES_SCHEMES)


def redact_url(url: str) -> str:
    """A database URL without its password (for stats, logs and ``cpersona doctor``)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@", 1)))
