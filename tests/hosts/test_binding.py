"""One agent_id: the server entry's CPERSONA_AGENT_ID is what the server tells the agent too."""

from __future__ import annotations

from pathlib import Path

import pytest

from cpersona.config import Settings
from cpersona.server.app import instructions


def test_the_server_names_the_bound_agent(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    settings = Settings(db_path=tmp_path / "m.db", operating_context=False)
    monkeypatch.delenv("CPERSONA_AGENT_ID", raising=False)
    assert "bound to agent_id" not in instructions(settings)
    monkeypatch.setenv("CPERSONA_AGENT_ID", "ada")
    assert 'This host is bound to agent_id "ada": pass it on every call.' in instructions(settings)
