"""SQLite's ``BrowseQueries`` (the ``cpersona ui`` pages): the shared statements over one connection.

The statements and the shaping are engine-neutral (``cpersona.storage.browse_queries``); this
engine supplies how they run and its parameter mark.
"""

from __future__ import annotations

import sqlite3

from cpersona.storage.browse_queries import SharedBrowse
from cpersona.storage.sqlite.sql import SQLITE


class SqliteBrowse(SharedBrowse):
    """``BrowseQueries`` over one SQLite connection."""

    __slots__ = ()

    def __init__(self, conn: sqlite3.Connection) -> None:
        super().__init__(conn.execute, SQLITE)
