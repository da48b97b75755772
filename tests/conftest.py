"""Shared fixtures. Model fixtures (the real MiniLM, assembled from PyPI packages) live in model_fixtures.py."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# The user settings file (cpersona/config/settings_file.py) lives in the user config dir: point it, for this
# process and every server or CLI it starts, at a folder of the test run's own, so a developer's
# settings never change a test and a test's `fetch-model` never writes the developer's file.
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="cpersona-test-config-")
from hypothesis import settings as hypothesis_settings

from cpersona.config import Settings
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.memory import Memory
from cpersona.runtime import persistence

atexit.register(shutil.rmtree, os.environ["XDG_CONFIG_HOME"], ignore_errors=True)  # one per test process

pytest_plugins = ["model_fixtures", "pg_cluster"]

# CI explores a fixed set of examples so a run is reproducible; developers' runs stay random
# (and have already been run with several seeds) to keep finding new cases.
hypothesis_settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI"):
    hypothesis_settings.load_profile("ci")


@pytest.fixture(autouse=True)
def _own_settings_file(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets an empty user config dir: a `fetch-model` in one test writes its model choice
    into the settings file, and no later test's server may read it."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))


@pytest.fixture(autouse=True)
def _persistence_resumed() -> Iterator[None]:
    """The pause switch is process-wide: no test may leave the next one paused. The class's own method,
    so a test that made the instance's ``resume`` raise (monkeypatch, undone later) cannot break this."""
    resume = type(persistence.PROCESS).resume
    resume(persistence.PROCESS)
    yield
    resume(persistence.PROCESS)


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A fresh private directory (mode 0700) with a short path, for Unix sockets: their paths stop at about
    100 bytes, and under pytest-xdist ``tmp_path`` is one folder deeper (``…/popen-gw1/…``), which pushes a
    socket in it past that limit. Deleted after the test."""
    path = Path(tempfile.mkdtemp(prefix="cpt-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def settings(tmp_path: Path, new_db_url: Callable[[], str | None], pg_vector_index: str) -> Settings:
    """Settings on a fresh database (a file; a PostgreSQL database under BOTH_ENGINES), keyword-only."""
    return Settings(
        db_path=tmp_path / "memory.db",
        db_url=new_db_url(),
        pg_vector_index=pg_vector_index,
        models_dir=tmp_path / "models",
        embedding_mode="none",
        update_check=False,
        auto_fetch_model=False,
        operating_context_path=tmp_path / "operating-context.toml",
    )


@pytest.fixture
def memory(settings: Settings) -> Iterator[Memory]:
    """A keyword-only Memory on a fresh file."""
    with Memory(settings, backend=NoEmbeddings()) as mem:
        mem.wait_until_ready(5)
        yield mem
