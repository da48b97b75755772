"""Unknown agents are named, empty answers explained, traces returned: through real MCP clients over stdio
and over HTTP with an ACL (where a notice names only the agents the client may read)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_helpers import McpSession, http_server, mcp_session, server_env, stdio_target
from test_mcp_acl import transport

from cpersona.acl import WILDCARD, Level, add_client

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[McpSession, Path]]:
    tmp = tmp_path_factory.mktemp("notices")
    env = server_env(tmp, CPERSONA_EXPORT_DIR=str(tmp / "exports"))
    with mcp_session(stdio_target(env)) as session:
        for text in ("devops runbook: roll back with helm", "the staging db moved to port 5433"):
            assert session.call("store", {"agent_id": "devops-bot", "message": {"content": text}})["ok"]
        assert session.call("update_profile", {"agent_id": "tea-bot", "profile": "likes tea"})["ok"]
        yield session, tmp


NOTICE = "agent 'devops-bto' has no rows; known agents: 'devops-bot', 'tea-bot' (did you mean 'devops-bot'?)"


def test_every_agent_scoped_read_names_an_unknown_agent(served: tuple[McpSession, Path]) -> None:
    session, _ = served
    calls = {
        "recall": {"agent_id": "devops-bto", "query": "helm"},
        "recall_with_context": {"agent_id": "devops-bto", "query": "helm", "external_context": []},
        "list_memories": {"agent_id": "devops-bto"},
        "list_episodes": {"agent_id": "devops-bto"},
        "check_health": {"agent_id": "devops-bto", "checks": ["calibration"]},
        "export_memories": {"agent_id": "devops-bto", "output_path": "typo.jsonl"},
    }
    for tool, arguments in calls.items():
        out = session.call(tool, arguments)
        assert out["ok"] is True and out["notice"] == NOTICE, (tool, out)
    assert "notice" not in session.call("recall", {"agent_id": "devops-bot", "query": "volcanoes"})
    assert "notice" not in session.call("list_memories", {"agent_id": "tea-bot"})  # a profile is a row
    assert "notice" not in session.call("list_memories", {})  # no agent named: nothing to name


def test_an_empty_keyword_only_answer_says_why_and_a_trace_is_returned(
    served: tuple[McpSession, Path],
) -> None:
    session, _ = served
    empty = session.call("recall", {"agent_id": "devops-bot", "query": "volcanoes of Peru"})
    assert empty["results"] == [] and "keyword-only" in empty["explanation"]
    traced = session.call("recall", {"agent_id": "devops-bot", "query": "helm roll back", "trace": True})
    trace = traced["trace"]
    assert trace["returned"] == [r["ref"] for r in reversed(traced["results"])]
    assert "vector" not in trace["channels"] and trace["fusion"]["total"] >= 1
    for row in traced["results"]:
        factors = row["match_reason"]["factors"]
        assert list(factors)[0] == row["match_reason"]["signal"]
    bad = session.call("recall", {"agent_id": "devops-bot", "query": "helm", "trace": "yes"})
    assert bad["ok"] is False and bad["error_code"] == "invalid_input"


def test_over_http_a_notice_names_only_the_agents_the_client_may_read(tmp_path: Path) -> None:
    acl = tmp_path / "acl.toml"
    tokens = {
        "narrow": add_client(acl, "narrow", {"agent-a": Level.READ, "agent-empty": Level.READ}),
        "admin": add_client(acl, "admin", {WILDCARD: Level.ADMIN}),
    }
    with http_server(tmp_path, CPERSONA_ACL_FILE=str(acl), CPERSONA_AUTH_TOKEN="shared-unused") as (url, _):
        with mcp_session(transport(url, tokens["admin"])) as admin:
            for agent in ("agent-a", "agent-secret"):
                assert admin.call("store", {"agent_id": agent, "message": {"content": f"{agent} row"}})["ok"]
            full = admin.call("recall", {"agent_id": "agent-empty", "query": "row"})
            assert (
                full["notice"] == "agent 'agent-empty' has no rows; known agents: 'agent-a', 'agent-secret'"
            )
        with mcp_session(transport(url, tokens["narrow"])) as narrow:
            for tool, extra in (("recall", {"query": "row"}), ("list_memories", {})):
                out = narrow.call(tool, {"agent_id": "agent-empty", **extra})
                assert out["notice"] == "agent 'agent-empty' has no rows; known agents: 'agent-a'", out
            refused = narrow.call("recall", {"agent_id": "agent-secret", "query": "row"})
            assert refused["ok"] is False and refused["error_code"] == "forbidden"
