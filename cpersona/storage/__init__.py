"""Storage: the only package that speaks SQL.

``interface`` states what the layers above may ask (protocols, value types);
the SQLite engine implements it (``sqlite``, ``db``, ``migrations`` and one
module per repository). ``open_store`` picks the engine. See docs/architecture.md.
"""

from __future__ import annotations

from pathlib import Path

from cpersona.storage.interface import Store


def open_store(path: Path | str) -> Store:
    """Open (and migrate) the store the settings name; SQLite is the only engine today."""
    from cpersona.storage.sqlite import SqliteStore

    return SqliteStore(path)
