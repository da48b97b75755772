"""The server's identity in ``initialize`` and the resource links recall and reconstruct carry beside
their rows, read back through a real MCP client (docs/resources.md, "Row resources")."""

from __future__ import annotations

import base64
import json

import pytest
from mcp.shared.exceptions import MCPError
from mcp_helpers import McpSession, unique

from cpersona.errors import InvalidInput
from cpersona.services.resources import _parse_row_uri, resource_links, row_uri

next_agent = unique("links")


def test_links_are_one_per_stored_row_in_order() -> None:
    rows = [
        {"ref": "mem:2", "agent_id": "a/b"},
        {"ref": "ep:7", "agent_id": "a/b"},
        {"ref": "mem:2", "agent_id": "a/b"},  # the same row twice (a reconstruct seed and a link)
        {"type": "profile", "agent_id": "a/b", "content": "no ref"},
        {"ref": "entity:Phoenix", "agent_id": "a/b"},
    ]
    assert resource_links(rows) == [
        {"uri": "cpersona://agents/a%2Fb/memories/2", "name": "mem:2", "mime_type": "application/json"},
        {"uri": "cpersona://agents/a%2Fb/episodes/7", "name": "ep:7", "mime_type": "application/json"},
    ]
    assert resource_links(None) == []


@pytest.mark.parametrize("ref", ["mem:1", "ep:42", "mem:9223372036854775807"])
def test_a_row_uri_reads_back_as_its_row(ref: str) -> None:
    assert _parse_row_uri(row_uri("agent x/ü", ref)) == ("agent x/ü", ref)


@pytest.mark.parametrize(
    "uri",
    ["cpersona://agents/a/memories/0", "cpersona://agents/a/memories/01", "cpersona://agents/a/episodes/x"],
)
def test_a_row_uri_with_a_bad_id_is_refused(uri: str) -> None:
    with pytest.raises(InvalidInput):
        _parse_row_uri(uri)


@pytest.mark.slow
def test_initialize_names_the_server_with_title_website_and_icon(stdio_session: McpSession) -> None:
    info = stdio_session.client.server_info
    assert info.name == "cpersona" and info.title == "CPersona"
    assert info.description and "memory" in info.description
    assert info.website_url == "https://pypi.org/project/cpersona-embedded/"
    (icon,) = info.icons
    assert icon.mime_type == "image/svg+xml" and icon.src.startswith("data:image/svg+xml;base64,")
    svg = base64.b64decode(icon.src.split(",", 1)[1]).decode()
    assert svg.startswith("<svg") and "<script" not in svg and "href" not in svg


@pytest.mark.slow
def test_recall_and_reconstruct_link_each_row_and_the_links_read(stdio_session: McpSession) -> None:
    agent = next_agent() + "/with slash"
    stored = [
        stdio_session.call("store", {"agent_id": agent, "message": {"content": f"heron nest number {n}"}})
        for n in range(3)
    ]
    raw = stdio_session.call_raw("recall", {"agent_id": agent, "query": "heron nest"})
    payload = json.loads(raw.content[0].text)
    links = raw.content[1:]
    assert [link.name for link in links] == [row["ref"] for row in payload["results"]]
    assert {row["ref"] for row in payload["results"]} == {s["ref"] for s in stored}
    for link in links:
        assert link.type == "resource_link" and link.mime_type == "application/json"
        read = stdio_session.portal.call(stdio_session.client.read_resource, link.uri)
        (content,) = read.contents
        row = json.loads(content.text)
        assert content.uri == link.uri and row["ref"] == link.name and row["agent_id"] == agent
        assert row["content"].startswith("heron nest number")
    packed = stdio_session.call_raw("reconstruct", {"agent_id": agent, "query": "heron nest"})
    items = json.loads(packed.content[0].text)["items"]
    assert [link.name for link in packed.content[1:]] == list(dict.fromkeys(i["ref"] for i in items))
    # A failure and a tool without rows carry no links.
    assert len(stdio_session.call_raw("recall", {"agent_id": agent, "limit": 500}).content) == 1
    assert len(stdio_session.call_raw("get_queue_status", {}).content) == 1


@pytest.mark.slow
def test_a_row_that_is_not_there_is_not_found_with_its_uri(stdio_session: McpSession) -> None:
    agent = next_agent()
    stored = stdio_session.call("store", {"agent_id": agent, "message": {"content": "kept"}})
    other = next_agent()
    stdio_session.call("store", {"agent_id": other, "message": {"content": "other's"}})
    for uri in [
        row_uri(agent, "mem:999999"),
        row_uri(other, stored["ref"]),  # another agent's path to this row: not found, never revealed
        row_uri(agent, "ep:1"),
    ]:
        with pytest.raises(MCPError) as missing:
            stdio_session.portal.call(stdio_session.client.read_resource, uri)
        assert missing.value.error.code == -32602
        assert missing.value.error.data == {"error_code": "not_found", "uri": uri}
    templates = stdio_session.portal.call(stdio_session.client.list_resource_templates)
    assert "cpersona://agents/{agent_id}/memories/{id}" in {
        t.uri_template for t in templates.resource_templates
    }
