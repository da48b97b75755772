"""PostgreSQL's ``BrowseQueries`` (the ``cpersona ui`` pages): the shared statements over one ``Executor``.

The statements and the shaping are engine-neutral (``cpersona.storage.browse_queries``); this
engine supplies how they run and its parameter mark.
"""

from __future__ import annotations

from cpersona.storage.browse_queries import SharedBrowse
from cpersona.storage.postgres.sql import POSTGRES, Executor


class PgBrowse(SharedBrowse):
    """``BrowseQueries`` over one ``Executor``."""

    __slots__ = ()

    def __init__(self, ex: Executor) -> None:
        super().__init__(ex.all, POSTGRES)
