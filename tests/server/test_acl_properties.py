"""Property: whatever arguments a client sends, its ACL grants hold (in-process, real Memory, real SQLite).

A client granted ``read`` on agent "a" calls every tool with agent-generated
arguments (the same strategies as test_tool_properties). Agent "b"'s rows never
change and never appear in a response; no write or admin tool succeeds.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_tool_properties import PROPERTY_SETTINGS, arguments_for, check_response

from cpersona.acl import Client, Level
from cpersona.config import Settings
from cpersona.memory import Memory
from cpersona.server.access import TOOL_ACCESS
from cpersona.server.dispatch import dispatch_tool
from cpersona.server.tools import TOOLS

READER = Client("reader", "0" * 64, {"a": Level.READ})


def rows_of_b(db_path: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        return {
            table: conn.execute(f"SELECT * FROM {table} WHERE agent_id = 'b' ORDER BY rowid").fetchall()
            for table in ("memories", "episodes", "profiles")
        }
    finally:
        conn.close()


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("acl-props")
    cfg = Settings(
        db_path=tmp / "memory.db",
        models_dir=tmp / "models",
        embedding_mode="none",
        update_check=False,
        auto_fetch_model=False,
        export_dir=tmp / "exports",
    )
    with Memory(cfg) as memory:
        memory.wait_until_ready(5)
        for agent in ("a", "b"):
            for i in range(3):
                memory.store(agent, f"seed {agent} {i} zebra migration notes", msg_id=f"{agent}-{i}")
            memory.archive_episode(agent, f"seed episode of {agent}", keywords=["seed"])
            memory.update_profile(agent, f"profile of {agent}")
        yield memory, cfg


@pytest.mark.parametrize("tool", [spec.name for spec in TOOLS])
@settings(PROPERTY_SETTINGS, max_examples=20)  # 27 tools x 20; the fuzz benchmark runs thousands more
@given(data=st.data())
def test_a_read_client_never_reaches_another_agent(guarded: Any, tool: str, data: st.DataObject) -> None:
    memory, cfg = guarded
    arguments = data.draw(arguments_for(tool))
    before = rows_of_b(cfg.db_path)
    response = dispatch_tool(memory, cfg, tool, arguments, READER)
    check_response(response, tool)
    assert rows_of_b(cfg.db_path) == before, (tool, arguments, response)
    text = json.dumps(response, ensure_ascii=False)
    assert "seed b" not in text and "profile of b" not in text and "episode of b" not in text, (
        tool,
        response,
    )
    rule = TOOL_ACCESS[tool]
    if rule.level > Level.READ or (
        rule.admin_when and isinstance(arguments, dict) and arguments.get(rule.admin_when)
    ):
        assert response["ok"] is False, (tool, arguments, response)
