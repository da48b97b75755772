"""``PgStore``: the ``Store`` protocol over a PostgreSQL database, through a psycopg connection pool.

Every pooled connection runs in autocommit with dict rows, knows the ``vector``
type, and sets the HNSW search parameters. ``read()`` is a REPEATABLE READ, READ
ONLY transaction (one snapshot, like SQLite's deferred read); ``write()`` a READ
COMMITTED transaction. Nested ``read``/``write`` in the same thread join the open
transaction, as they do on SQLite.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import Any

import psycopg
from psycopg import IsolationLevel
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from cpersona.errors import DatabaseUnavailable
from cpersona.storage.interface import SESSION_REPOSITORIES
from cpersona.storage.locations import redact_url
from cpersona.storage.postgres.admin import PgAdmin
from cpersona.storage.postgres.browse import PgBrowse
from cpersona.storage.postgres.bulk import drain_unposted
from cpersona.storage.postgres.calibration import PgCalibrationStates
from cpersona.storage.postgres.episodes import PgEpisodes
from cpersona.storage.postgres.health import PgHealth
from cpersona.storage.postgres.keyword import PgKeywordSearch
from cpersona.storage.postgres.links import PgLinks
from cpersona.storage.postgres.memories import PgMemories
from cpersona.storage.postgres.merge import PgMaintenanceRows
from cpersona.storage.postgres.migrations import migrate
from cpersona.storage.postgres.portability import PgPortabilityRows
from cpersona.storage.postgres.profiles import PgProfiles
from cpersona.storage.postgres.repair import PgRepairs
from cpersona.storage.postgres.side_reads import SideReads
from cpersona.storage.postgres.sql import Executor, register_vector
from cpersona.storage.postgres.statistics import ensure_statistics
from cpersona.storage.postgres.supersede import PgSupersedeLinks
from cpersona.storage.postgres.tasks import PgTasks
from cpersona.storage.postgres.vector_search import (
    VECTOR_INDEX_KINDS,
    IndexRegistry,
    PgVectorFeed,
    PgVectorSearch,
    build_index,
)

#: HNSW candidate list at query time (pgvector's default is 40). Measured with
#: benchmarks/pg_ef_search.py (docs/benchmarks.md): on 100k MiniLM-like vectors 100 keeps
#: 95.8% of the exact top 10, 200 98.8%, for at most ~10 ms more per query; LoCoMo quality
#: equals the exact scan's. Recall asks up to limit + excluded rows (10-60) per table, and with scope
#: filters the iterative scan keeps going until that many pass.
EF_SEARCH = 200
#: random_page_cost for sessions on a server left at PostgreSQL's default of 4 (docs/decisions.md).
SSD_RANDOM_PAGE_COST = 1.1
#: A recall's snapshot plans its prepared statements once (``PgStore.recall_read``; docs/decisions.md).
GENERIC_PLANS = "SET LOCAL plan_cache_mode = force_generic_plan"
POOL_MAX = 16
CONNECT_TIMEOUT_S = 30.0


redact = redact_url  # the URL without its password (for stats and logs)


def _configure(conn: psycopg.Connection[Any]) -> None:
    register_vector(conn)
    conn.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
    # Keep scanning the graph until enough rows pass the scope filter, in exact distance order.
    conn.execute("SET hnsw.iterative_scan = strict_order")
    # PostgreSQL's default random_page_cost (4, a spinning disk's) prices the trigram GIN index above a
    # sequential scan of ILIKE on 10k rows, which measured 10x slower (19 vs 1.5 ms per term). On the
    # server's default only, use the value usual for SSDs; an operator who tuned it keeps theirs.
    row: Any = conn.execute("SELECT current_setting('random_page_cost')::float8 = 4 AS untuned").fetchone()
    if row and (row["untuned"] if isinstance(row, dict) else row[0]):
        conn.execute(f"SET random_page_cost = {SSD_RANDOM_PAGE_COST}")


def _side_connection(url: str, kwargs: dict[str, Any]) -> psycopg.Connection[Any]:
    conn: psycopg.Connection[Any] = psycopg.connect(url, connect_timeout=int(CONNECT_TIMEOUT_S), **kwargs)
    _configure(conn)  # the pool's session settings (HNSW search list, iterative scan)
    return conn


class PgSession:
    """Every repository of the ``Session`` protocol over one ``Executor``."""

    __slots__ = ("ex", *SESSION_REPOSITORIES)

    def __init__(
        self, ex: Executor, indexes: IndexRegistry, *, exact: bool = False, side: SideReads | None = None
    ) -> None:
        self.ex = ex
        self.memories = PgMemories(ex)
        self.episodes = PgEpisodes(ex)
        self.profiles = PgProfiles(ex)
        self.tasks = PgTasks(ex)
        self.keyword = PgKeywordSearch(ex)
        self.vectors = PgVectorFeed(ex)
        self.vector_search = PgVectorSearch(ex, indexes, exact=exact, side=side)
        self.admin = PgAdmin(ex)
        self.browse = PgBrowse(ex)
        self.health = PgHealth(ex)
        self.links = PgLinks(ex)
        self.repair = PgRepairs(ex)
        self.supersede = PgSupersedeLinks(ex)


class PgStore:
    """The ``Store`` protocol over one PostgreSQL database. Migrates on open (once, across servers).

    ``read_only`` neither migrates nor can write: every pooled session runs with
    ``default_transaction_read_only = on`` (the server refuses writes), for report-only health checks.
    """

    def __init__(
        self, url: str, *, vector_index: str = "hnsw", pool_size: int = POOL_MAX, read_only: bool = False
    ) -> None:
        if vector_index not in VECTOR_INDEX_KINDS:
            raise ValueError(f"vector_index must be one of {VECTOR_INDEX_KINDS} (got {vector_index!r})")
        self.url = url
        self.vector_index = vector_index
        self._exact = vector_index == "exact"
        self._read_only = read_only
        self._local = threading.local()
        # prepare_threshold 0: every statement is prepared on its first run, not its sixth (psycopg's default
        # of 5). A server's statements repeat from the first recall on, and a process is often as young as the
        # session it serves (stdio): the first 150 recalls of a fresh process were 2.2 ms faster each at 10k
        # (docs/history/benchmarks-rounds.md, round 10). Unprepared, each run parses, analyses and plans the statement again.
        kwargs: dict[str, Any] = {"autocommit": True, "row_factory": dict_row, "prepare_threshold": 0}
        if read_only:
            kwargs["options"] = "-c default_transaction_read_only=on"
        try:
            with psycopg.connect(url, connect_timeout=int(CONNECT_TIMEOUT_S), **kwargs) as conn:
                if not read_only:
                    migrate(conn)
                else:
                    register_vector(conn)  # fails early, with the URL, when the schema was never created
        except psycopg.Error as exc:
            raise DatabaseUnavailable(f"cannot open the PostgreSQL database {redact(url)}: {exc}") from exc
        self.pool: ConnectionPool[Any] = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            open=False,
            configure=_configure,
            kwargs=kwargs,
            timeout=CONNECT_TIMEOUT_S,
            name="cpersona",
        )
        self.pool.open(wait=True, timeout=CONNECT_TIMEOUT_S)
        self._side = SideReads(lambda: _side_connection(url, kwargs), self.pool)
        if not read_only:
            # Memories an import queued for keyword postings and never posted (it died before its end).
            drain_unposted(self._transaction)
        self.indexes = IndexRegistry(self._build_index)
        self._statistics_checked = False  # once per process, before the first search (_build_index)
        self._calibration = PgCalibrationStates(self.pool, redact(url))

    def _build_index(self, table: str, model_id: str, dimension: int) -> None:
        # The first search of a model (IndexRegistry: once per process and table), right after a bulk load
        # when there was one: the moment the HNSW index is built and the planner needs statistics.
        if self.vector_index != "exact":  # the exact in-database scan has no approximate index to build
            with self.pool.connection() as conn, conn.transaction():
                build_index(Executor(self.pool, conn), table, model_id, dimension)
        if not self._statistics_checked and not self._read_only:
            self._statistics_checked = True  # under the registry's lock: one check per process
            ensure_statistics(Executor(self.pool))

    @property
    def location(self) -> str:
        """The database URL, password removed."""
        return redact(self.url)

    def session(self) -> PgSession:
        """Autocommit access: each statement borrows a pooled connection (or joins this thread's transaction)."""
        return PgSession(
            Executor(self.pool, getattr(self._local, "conn", None)), self.indexes, exact=self._exact
        )

    @contextmanager
    def _transaction(self, read_only: bool) -> Iterator[Executor]:
        current = getattr(self._local, "conn", None)
        if current is not None:  # nested use: join the outer transaction
            yield Executor(self.pool, current)
            return
        with self.pool.connection() as conn:
            self._local.conn = conn
            try:
                if read_only:
                    # BEGIN carries the snapshot's characteristics: one round trip, not BEGIN + SET TRANSACTION.
                    conn.isolation_level, conn.read_only = IsolationLevel.REPEATABLE_READ, True
                try:
                    with conn.transaction():
                        yield Executor(self.pool, conn)
                finally:
                    # The pooled connection's next user begins plainly (a broken one is discarded anyway).
                    if read_only:
                        with suppress(psycopg.Error):
                            conn.isolation_level, conn.read_only = None, None
            finally:
                self._local.conn = None

    def read(self) -> AbstractContextManager[PgSession]:
        """A consistent snapshot for several reads."""
        return self._snapshot(generic_plans=False)

    def recall_read(self) -> AbstractContextManager[PgSession]:
        """``read`` whose statements run generic plans: each prepared statement is planned once per
        connection, not at every call (PostgreSQL's default re-plans the keyword statements every time,
        ~0.9 ms of a 10k recall). Only a recall's statements, whose generic plans
        tests/storage/postgres/test_pg_plans.py checks; other reads keep the server's choice."""
        return self._snapshot(generic_plans=True)

    @contextmanager
    def _snapshot(self, *, generic_plans: bool) -> Iterator[PgSession]:
        opened = getattr(self._local, "conn", None) is None
        with self._transaction(True) as ex:
            if (
                generic_plans and opened
            ):  # SET LOCAL ends with this transaction; an outer one is left as it is
                ex.run(GENERIC_PLANS)
            yield PgSession(ex, self.indexes, exact=self._exact, side=self._side)

    @contextmanager
    def write(self) -> Iterator[PgSession]:
        """One write transaction: all of it lands or none of it does."""
        with self._transaction(False) as ex:
            yield PgSession(ex, self.indexes, exact=self._exact)

    def portability_rows(self) -> PgPortabilityRows:
        """Export streaming and import batches on this database."""
        return PgPortabilityRows(self._transaction)

    def size_bytes(self) -> int:
        """Bytes CPersona's tables (with their indexes and TOAST) occupy."""
        return int(
            self.session().ex.value(
                "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                "WHERE c.relname IN ('memories', 'episodes', 'profiles', 'pending_memory_tasks', 'schema_version', "
                "'calibration_state') "
                "AND c.relkind = 'r' AND c.relnamespace = current_schema()::regnamespace"
            )
        )

    def read_only(self) -> bool:
        """Whether this process cannot write: a hot standby (``pg_is_in_recovery``) or a read-only default."""
        row = self.session().ex.one(
            "SELECT pg_is_in_recovery() AS standby, current_setting('default_transaction_read_only') AS ro"
        )
        return row is not None and (bool(row["standby"]) or row["ro"] == "on")

    def calibration_states(self) -> PgCalibrationStates:
        """Per-agent calibration state: table calibration_state, shared by every server on this database."""
        return self._calibration

    def maintenance_rows(self) -> PgMaintenanceRows:
        """Agent merges and the channel-axis repair on this database."""
        return PgMaintenanceRows(self._transaction)

    def close(self) -> None:
        """Close every pooled connection (and the side reads' own)."""
        self._side.close()
        self.pool.close()
