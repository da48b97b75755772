"""The secret guard through a real MCP client over stdio and streamable HTTP (issue 39): redact says
kind and count in a schema-valid answer, refuse answers ``secret_detected`` and stores nothing, and the
new ``include_secrets`` argument of export_memories is held to its type."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from mcp_helpers import McpSession, transport_session, unique

pytestmark = pytest.mark.slow

KEY = "AKIAQ7ZX4TYHGF2LMN8P"
next_agent = unique("sec")


@pytest.fixture(scope="module", params=["stdio", "http"])
def session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpSession]:
    with transport_session(request.param, tmp_path_factory.mktemp(request.param)) as opened:
        yield opened


@pytest.fixture(scope="module", params=["stdio", "http"])
def refusing(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[McpSession]:
    tmp = tmp_path_factory.mktemp(f"refuse-{request.param}")
    with transport_session(request.param, tmp, CPERSONA_SECRETS="refuse") as opened:
        yield opened


def test_store_redacts_and_says_kind_and_count(session: McpSession) -> None:
    agent = next_agent()
    stored = session.call("store", {"agent_id": agent, "message": {"content": f"the CI signs in with {KEY}"}})
    assert stored["ok"] is True and stored["redacted"] == [{"kind": "aws-access-key", "count": 1}]
    recalled = session.call("recall", {"agent_id": agent, "query": "CI signs in"})
    assert recalled["count"] == 1 and KEY not in json.dumps(recalled)
    assert "[redacted: aws-access-key]" in json.dumps(recalled)
    profile = session.call("update_profile", {"agent_id": agent, "profile": "password=Hunter22!"})
    assert profile["redacted"] == [{"kind": "password-assignment", "count": 1}]


def test_refuse_answers_secret_detected_and_stores_nothing(refusing: McpSession) -> None:
    agent = next_agent()
    refused = refusing.call(
        "store", {"agent_id": agent, "message": {"content": f"the CI signs in with {KEY}"}}
    )
    assert refused["ok"] is False and refused["error_code"] == "secret_detected", refused
    assert refused["secrets"] == [{"kind": "aws-access-key", "count": 1}] and KEY not in json.dumps(refused)
    listed = refusing.call("list_memories", {"agent_id": agent})
    assert listed["total"] == 0
    episode = refusing.call("archive_episode", {"agent_id": agent, "summary": f"rotated {KEY}"})
    assert episode["error_code"] == "secret_detected"


@pytest.mark.parametrize("bad", ["yes", 1, [], {"a": 1}])
def test_include_secrets_must_be_a_boolean(session: McpSession, bad: object) -> None:
    answer = session.call(
        "export_memories", {"agent_id": next_agent(), "output_path": "x.jsonl", "include_secrets": bad}
    )
    assert answer["ok"] is False and "include_secrets" in answer["error"], answer
    assert answer["error_code"] != "internal"
