"""Fixtures for the MCP layer tests: real server processes, real MCP clients, real Memory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_helpers import McpSession, mcp_session, server_env, stdio_target

from cpersona.config import Settings
from cpersona.memory import Memory


@pytest.fixture(scope="module")
def stdio_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpSession]:
    """One keyword-only stdio server for the module; tests use distinct agent ids."""
    tmp = tmp_path_factory.mktemp("stdio")
    with mcp_session(stdio_target(server_env(tmp))) as session:
        yield session


@pytest.fixture
def tool_memory(tmp_path: Path) -> Iterator[tuple[Memory, Settings]]:
    """A real keyword-only Memory on a fresh file, for calling the tool layer in-process."""
    settings = Settings(
        db_path=tmp_path / "memory.db",
        models_dir=tmp_path / "models",
        embedding_mode="none",
        update_check=False,
        auto_fetch_model=False,
        operating_context_path=tmp_path / "operating-context.toml",
    )
    with Memory(settings) as memory:
        memory.wait_until_ready(5)
        yield memory, settings
