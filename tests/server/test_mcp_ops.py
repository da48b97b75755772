"""Session controls, operating context and the update check through a real MCP client over stdio."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from index_standin import IndexStandIn, closed_port_url, index_standin, release
from mcp_helpers import full_env, mcp_session, server_env, stdio_target

pytestmark = pytest.mark.slow

CONTEXT = """\
[rules]
language = "English"
review = "every change gets a second pair of eyes"

[team]
owner = "Ana"
"""


def test_pause_store_resume_and_operating_context(tmp_path: Path) -> None:
    ctx = tmp_path / "operating-context.toml"
    ctx.write_text(CONTEXT, encoding="utf-8")
    env = full_env(
        server_env(tmp_path, CPERSONA_OPERATING_CONTEXT="on", CPERSONA_OPERATING_CONTEXT_PATH=str(ctx))
    )
    with mcp_session(stdio_target(env)) as session:
        instructions = session.client.instructions or ""
        assert "call recall" in instructions  # the fixed guidance is still there
        assert 'review = "every change gets a second pair of eyes"' in instructions

        served = session.call("get_operating_context")
        assert served["ok"] is True and served["sections"] == ["rules", "team"]
        assert served["context"]["team"] == {"owner": "Ana"}
        assert session.call("get_operating_context", {"section": "rules"})["context"]["language"] == "English"
        unknown = session.call("get_operating_context", {"section": "budget"})
        assert unknown["ok"] is False and "rules, team" in unknown["error"]
        ctx.write_text("[rules\n", encoding="utf-8")  # the operator breaks the file while serving
        broken = session.call("get_operating_context")
        assert broken["ok"] is False and broken["line"] == 1 and "invalid TOML" in broken["error"]

        assert session.call("persistence_status")["paused"] is False
        paused = session.call("pause_persistence", {"ttl_seconds": 600})
        assert paused["ok"] is True and paused["paused"] is True and paused["remaining_seconds"] == 600
        skipped = session.call(
            "store", {"agent_id": "ops", "message": {"content": "off the record: the vault code"}}
        )
        assert skipped["ok"] is True and skipped["result"] == "skipped" and skipped["persisted"] is False
        refused = session.call("update_profile", {"agent_id": "ops", "profile": "p"})
        assert refused["ok"] is False and refused["error_code"] == "persistence_paused"
        assert refused["persisted"] is False
        status = session.call("persistence_status")
        assert status["paused"] is True and status["until"] and 0 < status["remaining_seconds"] <= 600
        assert session.call("list_memories", {"agent_id": "ops"})["items"] == []
        bad = session.call("pause_persistence", {"ttl_seconds": 0})
        assert bad["ok"] is False and "ttl_seconds" in bad["error"]

        assert session.call("resume_persistence") == {"ok": True, "paused": False, "was_paused": True}
        stored = session.call(
            "store", {"agent_id": "ops", "message": {"content": "on the record: lunch at noon"}}
        )
        assert stored["result"] == "stored" and "persisted" not in stored
        listed = session.call("list_memories", {"agent_id": "ops"})["items"]
        assert [row["content"] for row in listed] == ["on the record: lunch at noon"]


def _serve_once(tmp_path: Path, index: IndexStandIn, enabled: bool) -> None:
    """Start `cpersona serve`, make one tool call, give the background check time to run, stop."""
    env = full_env(
        server_env(
            tmp_path,
            CPERSONA_UPDATE_CHECK="true" if enabled else "false",
            CPERSONA_UPDATE_INDEX_URL=index.url,
        )
    )
    with mcp_session(stdio_target(env)) as session:
        assert session.call("persistence_status")["ok"] is True
        deadline = time.monotonic() + 10
        cache = tmp_path / "update-check.json"
        while enabled and not cache.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        if not enabled:
            time.sleep(1.0)  # ample time for a (wrongly) started check to reach the stand-in


def test_serve_asks_the_index_at_most_once_per_day_and_never_when_disabled(tmp_path: Path) -> None:
    with index_standin({"0.1.0": release(), "0.9.0": release()}) as index:
        _serve_once(tmp_path, index, enabled=False)
        assert index.seen == []
        assert not (tmp_path / "update-check.json").exists()

        _serve_once(tmp_path, index, enabled=True)
        assert len(index.json_requests()) == 1
        assert json.loads((tmp_path / "update-check.json").read_text())["latest"] == "0.9.0"

        # Within 24 h the cache answers both the start-up check and check_update (one server for both).
        env = full_env(
            server_env(tmp_path, CPERSONA_UPDATE_CHECK="true", CPERSONA_UPDATE_INDEX_URL=index.url)
        )
        with mcp_session(stdio_target(env)) as session:
            assert session.call("persistence_status")["ok"] is True
            report = session.call("check_update")
            assert report["ok"] is True and report["cached"] is True
            assert report["latest"] == "0.9.0" and report["newer_available"] is True
        assert len(index.json_requests()) == 1
        assert index.simple_requests() == []  # apply=false installed nothing


def test_broken_context_and_offline_index_never_stop_start_up(tmp_path: Path) -> None:
    ctx = tmp_path / "operating-context.toml"
    ctx.write_text("house = [\n", encoding="utf-8")
    env = full_env(
        server_env(
            tmp_path,
            CPERSONA_OPERATING_CONTEXT="on",
            CPERSONA_OPERATING_CONTEXT_PATH=str(ctx),
            CPERSONA_UPDATE_CHECK="true",
            CPERSONA_UPDATE_INDEX_URL=closed_port_url(),
        )
    )
    with mcp_session(stdio_target(env)) as session:
        assert "house" not in (session.client.instructions or "")
        answer = session.call("get_operating_context")
        assert answer["ok"] is False and answer["error_code"] == "operating_context_invalid"
        report = session.call("check_update")
        assert report["ok"] is False and report["error_code"] == "update_check_failed"
        assert session.call("persistence_status")["ok"] is True
