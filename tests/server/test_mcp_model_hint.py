"""The recall advisory, through a real MCP client over stdio, names an installed but unselected model."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from mcp_helpers import full_env, mcp_session, server_env, stdio_target
from model_fixtures import MINILM

from cpersona.embed.install.fetch import install_from


@pytest.mark.slow
def test_the_recall_advisory_carries_the_hint(minilm_source_dir: Path, tmp_path: Path) -> None:
    models = tmp_path / "models"
    install_from(minilm_source_dir, MINILM, models, stream=io.StringIO())
    env = full_env(server_env(tmp_path, CPERSONA_EMBEDDING_MODE="onnx", CPERSONA_MODEL_SHARING="off"))
    with mcp_session(stdio_target(env)) as session:
        assert session.call("store", {"agent_id": "a", "message": {"content": "the cat sits on the mat"}})[
            "ok"
        ]
        deadline = time.monotonic() + 60
        while True:  # the model loads in the background: wait for its verdict, not "loading"
            out = session.call("recall", {"agent_id": "a", "query": "cat sits on the mat"})
            if out.get("advisory", {}).get("kind") == "model_missing" or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    advisory = out["advisory"]
    assert advisory["kind"] == "model_missing" and advisory["full"] is True, advisory
    assert f"installed in {models}: {MINILM} (not selected)" in advisory["evidence"]
    assert f"export CPERSONA_EMBEDDING_MODEL={MINILM}" in advisory["runbook"]
    assert f'"CPERSONA_EMBEDDING_MODEL": "{MINILM}"' in advisory["runbook"]
    assert "CC BY-NC 4.0, non-commercial use only" in advisory["runbook"]
    assert out["results"], out
