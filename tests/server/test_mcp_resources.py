"""MCP resources, prompts and completions through real MCP clients, over stdio and HTTP (docs/resources.md).

Over HTTP the server runs behind an ACL file: a client granted only agent-a never sees agent-b
in resources/list or completions, and reading agent-b's resources or getting a prompt for it is
a JSON-RPC error (``-32602``, ``error_code: forbidden``), as the tools refuse.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError
from mcp.types import PromptReference, ResourceTemplateReference
from mcp_helpers import McpSession, http_server, mcp_session
from test_mcp_acl import transport

from cpersona.acl import WILDCARD, Level, add_client

pytestmark = pytest.mark.slow

INVALID_PARAMS = -32602
PROFILE_TEMPLATE = "cpersona://agents/{agent_id}/profile"


def call(session: McpSession, method: str, *args: Any, **kwargs: Any) -> Any:
    return session.portal.call(lambda: getattr(session.client, method)(*args, **kwargs))


def refusal(session: McpSession, method: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """The JSON-RPC error a request got (it must get one, and never -32603)."""
    with pytest.raises(MCPError) as raised:
        call(session, method, *args, **kwargs)
    error = raised.value.error
    assert error.code == INVALID_PARAMS, error
    return {"message": error.message, **(error.data or {})}


def read_json(session: McpSession, uri: str) -> dict[str, Any]:
    result = call(session, "read_resource", uri, cache_mode="bypass")
    (content,) = result.contents
    assert content.uri == uri and content.mime_type == "application/json"
    return json.loads(content.text)


# -- stdio ------------------------------------------------------------------------------------------


def test_initialize_declares_resources_prompts_and_completions(stdio_session: McpSession) -> None:
    caps = stdio_session.client.server_capabilities
    assert caps.resources is not None and caps.prompts is not None and caps.completions is not None
    assert caps.tools is not None
    assert caps.logging is None  # deliberately not offered: docs/decisions.md


def test_resources_over_stdio(stdio_session: McpSession) -> None:
    agent = "res/stdio agent"
    assert stdio_session.call("store", {"agent_id": agent, "message": {"content": "the stdio kestrel note"}})[
        "ok"
    ]
    assert stdio_session.call("update_profile", {"agent_id": agent, "profile": "Likes kestrels."})["ok"]
    listed = call(stdio_session, "list_resources", cache_mode="bypass")
    uris = {r.uri for r in listed.resources}
    assert {"cpersona://agents", "cpersona://agents/res%2Fstdio%20agent/profile"} <= uris
    assert all(r.name and r.mime_type == "application/json" for r in listed.resources)

    templates = call(stdio_session, "list_resource_templates").resource_templates
    assert [t.uri_template for t in templates] == [
        PROFILE_TEMPLATE,
        "cpersona://agents/{agent_id}/memories",
        "cpersona://agents/{agent_id}/memories/{id}",
        "cpersona://agents/{agent_id}/episodes/{id}",
    ]

    agents = read_json(stdio_session, "cpersona://agents")
    mine = next(a for a in agents["agents"] if a["agent_id"] == agent)
    assert read_json(stdio_session, mine["profile_uri"])["profiles"][0]["content"] == "Likes kestrels."
    memories = read_json(stdio_session, mine["memories_uri"])
    assert [i["content"] for i in memories["items"]] == ["the stdio kestrel note"]

    assert refusal(stdio_session, "read_resource", "test://static-text")["error_code"] == "invalid_input"
    missing = refusal(stdio_session, "read_resource", "cpersona://agents/res%2Fstdio%20agnet/profile")
    assert missing["error_code"] == "not_found" and "did you mean" in missing["message"]


def test_prompts_over_stdio(stdio_session: McpSession) -> None:
    listed = call(stdio_session, "list_prompts").prompts
    assert {p.name for p in listed} == {"archive_session", "recall_before_answering"}
    recall = next(p for p in listed if p.name == "recall_before_answering")
    assert [(a.name, a.required) for a in recall.arguments] == [
        ("agent_id", True),
        ("question", True),
        ("project_id", False),
    ]
    got = call(
        stdio_session, "get_prompt", "recall_before_answering", {"agent_id": "p", "question": "where?"}
    )
    (message,) = got.messages
    assert (
        message.role == "user"
        and message.content.type == "text"
        and '"query": "where?"' in message.content.text
    )

    assert "unknown prompt" in refusal(stdio_session, "get_prompt", "nope")["message"]
    missing = refusal(stdio_session, "get_prompt", "recall_before_answering", {"agent_id": "p"})
    assert "question" in missing["message"] and missing["error_code"] == "invalid_input"
    assert (
        "no argument"
        in refusal(stdio_session, "get_prompt", "archive_session", {"agent_id": "p", "x": "1"})["message"]
    )


def test_completions_over_stdio(stdio_session: McpSession) -> None:
    for agent in ("compl-one", "compl-two"):
        stdio_session.call(
            "store", {"agent_id": agent, "message": {"content": "x"}, "project_id": f"{agent}-proj"}
        )
    by_prompt = call(
        stdio_session,
        "complete",
        PromptReference(name="archive_session"),
        {"name": "agent_id", "value": "compl-"},
    )
    assert by_prompt.completion.values == ["compl-one", "compl-two"]
    by_template = call(
        stdio_session,
        "complete",
        ResourceTemplateReference(uri=PROFILE_TEMPLATE),
        {"name": "agent_id", "value": "compl-t"},
    )
    assert by_template.completion.values == ["compl-two"]
    projects = call(
        stdio_session,
        "complete",
        PromptReference(name="recall_before_answering"),
        {"name": "project_id", "value": ""},
        context_arguments={"agent_id": "compl-one"},
    )
    assert projects.completion.values == ["compl-one-proj"]
    free_text = call(
        stdio_session,
        "complete",
        PromptReference(name="recall_before_answering"),
        {"name": "question", "value": "w"},
    )
    assert free_text.completion.values == []
    assert refusal(
        stdio_session,
        "complete",
        PromptReference(name="test_prompt_with_arguments"),
        {"name": "arg1", "value": "t"},
    )
    assert refusal(
        stdio_session, "complete", ResourceTemplateReference(uri="test://x/{id}"), {"name": "id", "value": ""}
    )


@pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")
def test_logging_is_not_offered(stdio_session: McpSession) -> None:
    with pytest.raises(MCPError) as raised:
        call(stdio_session, "set_logging_level", "info")
    assert raised.value.error.code == -32601


# -- HTTP behind an ACL -------------------------------------------------------------------------------


@dataclass
class AclServer:
    url: str
    tokens: dict[str, str]
    log: Path

    def session(self, client: str) -> Any:
        return mcp_session(transport(self.url, self.tokens[client]))


@pytest.fixture(scope="module")
def acl_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AclServer]:
    tmp = tmp_path_factory.mktemp("resources-acl")
    acl = tmp / "acl.toml"
    tokens = {
        "reader": add_client(acl, "reader", {"agent-a": Level.READ}),
        "admin": add_client(acl, "admin", {WILDCARD: Level.ADMIN}),
    }
    with http_server(tmp, CPERSONA_ACL_FILE=str(acl)) as (url, _proc):
        with mcp_session(transport(url, tokens["admin"])) as admin:
            for agent, text in (("agent-a", "alpha keeps the keys"), ("agent-b", "bravo secret plan")):
                assert admin.call("store", {"agent_id": agent, "message": {"content": text}})["ok"]
                assert admin.call("update_profile", {"agent_id": agent, "profile": f"{agent} profile"})["ok"]
        yield AclServer(url, tokens, tmp / "server.log")
    log = (tmp / "server.log").read_text(errors="replace")
    assert "Traceback" not in log, log[-3000:]


def test_http_reader_sees_only_its_agent(acl_server: AclServer) -> None:
    with acl_server.session("reader") as reader:
        uris = {r.uri for r in call(reader, "list_resources", cache_mode="bypass").resources}
        assert uris == {
            "cpersona://agents",
            "cpersona://agents/agent-a/profile",
            "cpersona://agents/agent-a/memories",
        }
        agents = read_json(reader, "cpersona://agents")
        assert [a["agent_id"] for a in agents["agents"]] == ["agent-a"]
        assert (
            read_json(reader, "cpersona://agents/agent-a/memories")["items"][0]["content"]
            == "alpha keeps the keys"
        )
        for kind in ("profile", "memories"):
            refused = refusal(reader, "read_resource", f"cpersona://agents/agent-b/{kind}")
            assert refused["error_code"] == "forbidden" and "bravo" not in refused["message"]
        completed = call(
            reader,
            "complete",
            ResourceTemplateReference(uri=PROFILE_TEMPLATE),
            {"name": "agent_id", "value": "agent-"},
        )
        assert completed.completion.values == ["agent-a"]


def test_http_prompts_need_the_grant_of_the_tool_they_lead_to(acl_server: AclServer) -> None:
    with acl_server.session("reader") as reader:
        assert call(
            reader, "get_prompt", "recall_before_answering", {"agent_id": "agent-a", "question": "q"}
        ).messages
        refused = refusal(
            reader, "get_prompt", "recall_before_answering", {"agent_id": "agent-b", "question": "q"}
        )
        assert refused["error_code"] == "forbidden"
        # archive_session leads to archive_episode (write): a read grant is not enough
        assert (
            refusal(reader, "get_prompt", "archive_session", {"agent_id": "agent-a"})["error_code"]
            == "forbidden"
        )
        by_prompt = call(
            reader, "complete", PromptReference(name="archive_session"), {"name": "agent_id", "value": ""}
        )
        assert by_prompt.completion.values == []


def test_http_admin_sees_every_agent(acl_server: AclServer) -> None:
    with acl_server.session("admin") as admin:
        agents = read_json(admin, "cpersona://agents")
        assert [a["agent_id"] for a in agents["agents"]] == ["agent-a", "agent-b"]
        assert (
            read_json(admin, "cpersona://agents/agent-b/profile")["profiles"][0]["content"]
            == "agent-b profile"
        )
        assert call(admin, "get_prompt", "archive_session", {"agent_id": "agent-b"}).messages
