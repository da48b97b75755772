"""What a host is offered: ``CPERSONA_TOOLS`` (every tool, or the everyday set plus names) and
``CPERSONA_OUTPUT_SCHEMAS`` (full shapes, or the answer's top level), in-process and through a real
MCP client over stdio."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError
from mcp_helpers import mcp_session, server_env, stdio_target, unique

from cpersona.config import ConfigError, Settings
from cpersona.server.output_schemas import output_schema
from cpersona.server.tools import EVERYDAY_TOOLS, TOOLS, TOOLS_BY_NAME, offered_tools

next_agent = unique("surface")


def _names(tools: tuple[str, ...]) -> list[str]:
    return [spec.name for spec in offered_tools(Settings(tools=tools))]


def test_unset_or_all_offers_every_tool() -> None:
    every = [spec.name for spec in TOOLS]
    assert _names(()) == every
    assert _names(("all",)) == every
    assert _names(("everyday", "all")) == every


def test_everyday_and_names_in_registry_order() -> None:
    assert set(EVERYDAY_TOOLS) <= set(TOOLS_BY_NAME)
    assert set(_names(("everyday",))) == set(EVERYDAY_TOOLS)
    chosen = _names(("export_memories", "everyday"))
    assert set(chosen) == {*EVERYDAY_TOOLS, "export_memories"}
    assert chosen == [spec.name for spec in TOOLS if spec.name in chosen]
    assert _names(("get_queue_status",)) == ["get_queue_status"]


def test_a_name_that_is_no_tool_stops_the_server() -> None:
    with pytest.raises(ConfigError, match="CPERSONA_TOOLS: 'recal' is no tool"):
        offered_tools(Settings(tools=("everyday", "recal")))


def test_the_setting_reads_from_the_environment() -> None:
    settings = Settings.from_env(
        {"CPERSONA_TOOLS": "everyday, export_memories", "CPERSONA_OUTPUT_SCHEMAS": "Envelope"}
    )
    assert settings.tools == ("everyday", "export_memories") and settings.output_schemas == "envelope"
    with pytest.raises(ConfigError, match="CPERSONA_OUTPUT_SCHEMAS"):
        Settings.from_env({"CPERSONA_OUTPUT_SCHEMAS": "some"})


@pytest.mark.slow
def test_an_everyday_server_with_envelopes(tmp_path: Path) -> None:
    env = server_env(tmp_path, CPERSONA_TOOLS="everyday,list_memories", CPERSONA_OUTPUT_SCHEMAS="envelope")
    with mcp_session(stdio_target(env)) as session:
        listed = {tool.name: tool for tool in session.list_tools().tools}
        assert set(listed) == {*EVERYDAY_TOOLS, "list_memories"}
        assert listed["recall"].output_schema == output_schema("recall", "envelope")
        agent = next_agent()
        stored = session.call("store", {"agent_id": agent, "message": {"content": "the envelope holds"}})
        assert stored["ok"] is True  # session.call checks each answer against the listed (envelope) schema
        recalled = session.call("recall", {"agent_id": agent, "query": "envelope"})
        assert [row["id"] for row in recalled["results"]] == [stored["id"]]
        assert session.call("list_memories", {"agent_id": agent})["items"][0]["id"] == stored["id"]
        with pytest.raises(MCPError) as hidden:  # not offered: an unknown tool, whatever the registry holds
            session.portal.call(lambda: session.client.call_tool("delete_agent_data", {"agent_id": agent}))
        assert hidden.value.error.code == -32602
        assert hidden.value.error.data["tools"] == sorted(listed)
        assert session.call("recall", {"agent_id": agent, "query": "envelope"})["count"] == 1
