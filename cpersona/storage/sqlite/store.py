"""The SQLite engine behind the storage protocols: ``SqliteStore`` hands out ``SqliteSession``s."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from cpersona.errors import NotOurDatabase, OriginalDatabase
from cpersona.storage.interface import SESSION_REPOSITORIES
from cpersona.storage.sqlite.admin import SqliteAdmin
from cpersona.storage.sqlite.browse import SqliteBrowse
from cpersona.storage.sqlite.calibration import SidecarStates
from cpersona.storage.sqlite.db import Database
from cpersona.storage.sqlite.episodes import SqliteEpisodes
from cpersona.storage.sqlite.file_kind import recognise
from cpersona.storage.sqlite.health_bindings import SqliteHealth, SqliteMaintenanceRows, SqliteRepairs
from cpersona.storage.sqlite.keyword import SqliteKeywordSearch
from cpersona.storage.sqlite.links import SqliteLinks
from cpersona.storage.sqlite.memories import SqliteMemories
from cpersona.storage.sqlite.migrations import migrate
from cpersona.storage.sqlite.portability import SqlitePortabilityRows
from cpersona.storage.sqlite.profiles import SqliteProfiles
from cpersona.storage.sqlite.readonly import ReadOnlyDatabase
from cpersona.storage.sqlite.supersede import SqliteSupersedeLinks
from cpersona.storage.sqlite.tasks import SqliteTasks
from cpersona.storage.sqlite.term_counts import TermCounts
from cpersona.storage.sqlite.term_scores import TermScores
from cpersona.storage.sqlite.vector_feed import SqliteVectorFeed
from cpersona.storage.sqlite.vector_index import VectorIndexes
from cpersona.storage.sqlite.vector_search import SqliteVectorSearch


def refuse_unless_ours(path: Path | str) -> None:
    """Refuse, before the first write (even the switch to WAL), a file that is not ours or new."""
    found = recognise(path)
    if found.kind == "original":
        raise OriginalDatabase(
            f"{found.path} was written by the original CPersona (schema version {found.original_version}); "
            "start `cpersona serve` (or `cpersona stats`) on it to move it in, or `cpersona import` it into "
            "another database. The file was left untouched."
        )
    if found.kind in ("foreign", "damaged"):
        raise NotOurDatabase(found.refusal())


class SqliteSession:
    """Every repository of the ``Session`` protocol, bound to one connection."""

    __slots__ = ("conn", *SESSION_REPOSITORIES)

    def __init__(
        self,
        conn: sqlite3.Connection,
        indexes: VectorIndexes | None = None,
        term_counts: TermCounts | None = None,
        term_scores: TermScores | None = None,
    ) -> None:
        self.conn = conn
        self.memories = SqliteMemories(conn)
        self.episodes = SqliteEpisodes(conn)
        self.profiles = SqliteProfiles(conn)
        self.tasks = SqliteTasks(conn)
        self.keyword = SqliteKeywordSearch(conn, term_counts=term_counts, term_scores=term_scores)
        self.vectors = SqliteVectorFeed(conn)
        self.vector_search = SqliteVectorSearch(conn, indexes if indexes is not None else VectorIndexes())
        self.admin = SqliteAdmin(conn)
        self.browse = SqliteBrowse(conn)
        self.health = SqliteHealth(conn)
        self.links = SqliteLinks(conn)
        self.repair = SqliteRepairs(conn)
        self.supersede = SqliteSupersedeLinks(conn)


class SqliteStore:
    """The ``Store`` protocol over one SQLite file (WAL; see ``Database``). Migrates on open."""

    def __init__(self, path: Path | str, *, keep_vectors: bool = True) -> None:
        refuse_unless_ours(path)
        self.db = Database(path)
        # One set of in-memory vector indexes per store, shared by its sessions (kept in step with the file).
        self.indexes = VectorIndexes(keep_vectors=keep_vectors)
        self.term_counts = TermCounts()  # the keyword channels' term counts, shared by read sessions
        self.term_scores = TermScores()  # and their terms' bm25 shares (storage/sqlite/term_scores.py)
        self._calibration = SidecarStates(self.db.path)
        try:
            migrate(self.db)
        except BaseException:
            self.db.close()
            raise

    @classmethod
    def read_only_view(cls, path: Path | str, *, keep_vectors: bool = True) -> SqliteStore:
        """The file opened ``mode=ro`` + ``query_only``, never migrated: report-only health checks."""
        refuse_unless_ours(path)
        store = cls.__new__(cls)
        store.db = ReadOnlyDatabase(path)
        store.indexes = VectorIndexes(keep_vectors=keep_vectors)
        store.term_counts = TermCounts()
        store.term_scores = TermScores()
        store._calibration = SidecarStates(store.db.path)
        return store

    @property
    def path(self) -> Path:
        """The database file."""
        return self.db.path

    @property
    def location(self) -> str:
        """The database file, as stats shows it."""
        return str(self.db.path)

    def portability_rows(self) -> SqlitePortabilityRows:
        """Export streaming and import batches over this file."""
        return SqlitePortabilityRows(self.db)

    def calibration_states(self) -> SidecarStates:
        """Per-agent calibration state: the sidecar ``<db>.calibration.json`` beside the file."""
        return self._calibration

    def maintenance_rows(self) -> SqliteMaintenanceRows:
        """Agent merges and the channel-axis repair over this file."""
        return SqliteMaintenanceRows(self.db)

    def session(self) -> SqliteSession:
        """This thread's connection in autocommit mode."""
        return SqliteSession(self.db.connection(), self.indexes)

    def recall_read(self) -> AbstractContextManager[SqliteSession]:
        """``read``: SQLite plans every statement when it is prepared, once per cached statement."""
        return self.read()

    @contextmanager
    def read(self) -> Iterator[SqliteSession]:
        """A consistent snapshot for several SELECTs."""
        # Inside another transaction (perhaps a write, whose pending FTS rows its queries see before the
        # index's structure record changes) the kept term counts are neither used nor filled.
        nested = self.db.connection().in_transaction
        with self.db.read() as conn:
            if nested:
                yield SqliteSession(conn, self.indexes)
            else:
                yield SqliteSession(conn, self.indexes, self.term_counts, self.term_scores)

    @contextmanager
    def write(self) -> Iterator[SqliteSession]:
        """One write transaction (serialised in-process, ``BEGIN IMMEDIATE`` across processes)."""
        with self.db.write() as conn:
            yield SqliteSession(conn, self.indexes)

    def read_only(self) -> bool:
        """Whether this process cannot write the file (writes raise ``ReadOnlyStorage``)."""
        return self.db.read_only()

    def size_bytes(self) -> int:
        """The file plus its WAL and shared-memory companions."""
        path = self.db.path
        return sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())

    def close(self) -> None:
        """Close every connection."""
        self.db.close()
