"""The entry `cpersona register` writes starts a working server, as a host would launch it.

Registered from a project folder with a relative database path and the MiniLM route selected; the
entry is then started from another working directory with nothing but its own env (the MCP
client adds only HOME/PATH-style defaults, as hosts do): the store lands in the registered file
and recall uses the selected model.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from mcp_helpers import cpersona_executable, mcp_session
from model_fixtures import MINILM

from cpersona.embed.install.fetch import install_from


@pytest.mark.slow
def test_the_registered_entry_runs_the_selected_model_on_the_registered_file(
    minilm_source_dir: Path, tmp_path: Path
) -> None:
    from mcp.client.stdio import StdioServerParameters

    models = tmp_path / "models"
    install_from(minilm_source_dir, MINILM, models, stream=io.StringIO())
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    shell = {k: v for k, v in os.environ.items() if not k.startswith(("CPERSONA_", "EMBEDDING_"))}
    shell.update(
        CPERSONA_DB_PATH="data/memory.db",
        CPERSONA_EMBEDDING_MODEL=MINILM,
        CPERSONA_MODELS_DIR=str(models),
        CPERSONA_UPDATE_CHECK="false",
        CPERSONA_OPERATING_CONTEXT="off",
        CPERSONA_MODEL_SHARING="off",
    )
    done = subprocess.run(
        [cpersona_executable(), "register", "mcp-json"],
        env=shell,
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    entry = json.loads((project / ".mcp.json").read_text())["mcpServers"]["cpersona"]
    assert entry["env"]["CPERSONA_DB_PATH"] == str(project / "data" / "memory.db")

    target = StdioServerParameters(
        command=entry["command"],
        args=entry["args"],
        env={**entry["env"], "HF_HUB_OFFLINE": "1"},
        cwd=elsewhere,
    )
    with mcp_session(target) as session:
        stored = session.call("store", {"agent_id": "a", "message": {"content": "the cat sits on the mat"}})
        assert stored["ok"] is True, stored
        deadline = time.monotonic() + 60
        while True:  # the model loads in the background
            health = session.call("check_health", {"checks": ["embedding"]})
            if health["checks"]["embedding"]["state"] != "unknown" or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert health["checks"]["embedding"]["state"] == "healthy", health["findings"]
        assert health["stats"]["db_path"] == str(project / "data" / "memory.db")
        found = session.call("recall", {"agent_id": "a", "query": "a kitten resting on a rug"})
        assert found["search"]["vector"] is True and "advisory" not in found, found
    assert (project / "data" / "memory.db").is_file() and not (elsewhere / "data").exists()
