"""Shared fixtures. Model fixtures (the real MiniLM, assembled from PyPI packages) live in model_fixtures.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cpersona.config import Settings
from cpersona.embed.none_backend import NoEmbeddings
from cpersona.memory import Memory

pytest_plugins = ["model_fixtures"]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Settings on a fresh database file, keyword-only, no background network use."""
    return Settings(
        db_path=tmp_path / "memory.db",
        models_dir=tmp_path / "models",
        embedding_mode="none",
        update_check=False,
        auto_fetch_model=False,
    )


@pytest.fixture
def memory(settings: Settings) -> Iterator[Memory]:
    """A keyword-only Memory on a fresh file."""
    with Memory(settings, backend=NoEmbeddings()) as mem:
        mem.wait_until_ready(5)
        yield mem
