"""Protocol errors as each MCP revision says: an unknown tool, a resource that is not found.

An unknown tool name is a JSON-RPC error ``-32602`` on every revision (2024-11-05 to 2026-07-28),
never a tool result. A ``resources/read`` of a URI that names no resource carries ``data.uri``;
its code is ``-32002`` before 2026-07-28 and ``-32602`` from it (SEP-2164). Checked through the
SDK's own client (it negotiates 2026-07-28) and by hand on an older revision.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError
from mcp_helpers import McpSession
from raw_wire import PROTOCOL, stdio_caller, tool_call

from cpersona.server.tools import TOOLS_BY_NAME

pytestmark = pytest.mark.slow

INVALID_PARAMS = -32602
RESOURCE_NOT_FOUND_BEFORE_2026 = -32002


def _error(session: McpSession, call: Any) -> Any:
    with pytest.raises(MCPError) as raised:
        session.portal.call(call)
    return raised.value.error


def test_unknown_tool_is_invalid_params_on_the_newest_revision(stdio_session: McpSession) -> None:
    error = _error(stdio_session, lambda: stdio_session.client.call_tool("no_such_tool", {"x": 1}))
    assert error.code == INVALID_PARAMS and "no_such_tool" in error.message
    assert error.data["error_code"] == "unknown_tool"
    assert set(error.data["tools"]) == set(TOOLS_BY_NAME)
    # The server keeps answering after it.
    assert stdio_session.call("get_queue_status")["ok"] is True


def test_missing_resource_carries_its_uri_on_the_newest_revision(stdio_session: McpSession) -> None:
    for uri, code in [
        ("cpersona://agents/nobody-at-all/profile", "not_found"),
        ("test://static-text", "invalid_input"),
    ]:
        error = _error(stdio_session, lambda uri=uri: stdio_session.client.read_resource(uri))
        assert error.code == INVALID_PARAMS, error
        assert error.data == {"error_code": code, "uri": uri}


def test_older_revision_codes(tmp_path: Path) -> None:
    assert PROTOCOL < "2026-07-28"
    with stdio_caller(tmp_path) as raw:
        unknown = raw.call(tool_call(2, "no_such_tool", {}))
        assert "result" not in unknown and unknown["error"]["code"] == INVALID_PARAMS
        assert unknown["error"]["data"]["error_code"] == "unknown_tool"
        uri = "cpersona://agents/nobody-at-all/memories"
        read = raw.call({"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": uri}})
        assert read["error"]["code"] == RESOURCE_NOT_FOUND_BEFORE_2026
        assert read["error"]["data"] == {"error_code": "not_found", "uri": uri}
        # A known tool still answers as a tool result.
        known = raw.call(tool_call(4, "get_queue_status", {}))
        assert known["result"]["structuredContent"]["ok"] is True
