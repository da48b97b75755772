"""Issue 9 defect 1: every request gets a reply over stdio and HTTP, whatever its line holds (docs/decisions.md#trust-boundary-issue-9).

Raw JSON-RPC against real server processes: the SDK's parser used to drop a line with a lone
surrogate escape, nesting past ~200 levels, or no JSON at all, leaving the client waiting forever.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import http_server
from raw_wire import RawHttp, RawStdio, tool_call
from test_mcp_http import TOKEN

from cpersona.core.limits import MAX_MESSAGE_DEPTH
from cpersona.server.wire import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, recover_id

pytestmark = pytest.mark.slow

SURROGATE_RECALL = (
    '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"recall",'
    '"arguments":{"agent_id":"wire","query":"x\\ud800"}}}'
)
SURROGATE_STORE = (
    '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"store",'
    '"arguments":{"agent_id":"wire","message":{"content":"half \\udfff pair","id":"m\\ud800"}}}}'
)


def deep_line(request_id: int, depth: int) -> str:
    return json.dumps(tool_call(request_id, "recall", {"agent_id": "wire", "query": "q"}))[:-2] + (
        ',"deep":' + "[" * depth + "]" * depth + "}}"
    )


def tool_payload(reply: dict[str, Any]) -> dict[str, Any]:
    assert "result" in reply, reply
    return dict(json.loads(reply["result"]["content"][0]["text"]))


def test_issue_repro_every_stdio_request_answered(tmp_path: Path) -> None:
    """The exact sequence from the issue: initialize, initialized, the surrogate call, then id 3."""
    raw = RawStdio(tmp_path)
    try:
        raw.handshake()
        raw.send_line(SURROGATE_RECALL)
        raw.send({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
        raw.wait_for([2, 3])
        assert tool_payload(raw.replies[2])["ok"] is True  # the surrogate became U+FFFD, as in-process
        assert "tools" in raw.replies[3]["result"]
    finally:
        raw.close()


def test_unreadable_stdio_lines_are_answered(tmp_path: Path) -> None:
    raw = RawStdio(tmp_path)
    try:
        raw.handshake()
        raw.send_line(deep_line(10, 300))  # past the SDK's parser limit
        raw.send_line(deep_line(11, 5000))  # past Python's decoder too
        raw.send_line(deep_line(12, MAX_MESSAGE_DEPTH))  # past ours, under the SDK's
        raw.send_line("not json at all")
        raw.send_line('{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"recall"')  # cut short
        raw.send_line(
            b'{"jsonrpc":"2.0","id":14,"method":"tools/list","params":{"x":"\xff\xfe"}}'
        )  # bad UTF-8
        raw.send_line('{"jsonrpc":"2.0","id":15}')  # JSON, not a JSON-RPC message
        raw.send_line("[]")
        raw.send_line("")  # a blank line is no message: no reply
        raw.send_line(SURROGATE_STORE)
        raw.send({"jsonrpc": "2.0", "id": 16, "method": "tools/list"})
        raw.wait_for([4, 10, 11, 12, 13, 14, 15, 16], nulls=2)
        for request_id in (10, 11, 12):
            assert raw.replies[request_id]["error"]["code"] == INVALID_REQUEST
            assert f"deeper than {MAX_MESSAGE_DEPTH}" in raw.replies[request_id]["error"]["message"]
        assert raw.replies[13]["error"]["code"] == PARSE_ERROR
        assert "tools" in raw.replies[14]["result"]  # undecodable bytes are replaced, the request served
        assert raw.replies[15]["error"]["code"] == INVALID_REQUEST
        assert sorted(r["error"]["code"] for r in raw.null_replies) == sorted([PARSE_ERROR, INVALID_REQUEST])
        stored = tool_payload(raw.replies[4])
        assert stored["result"] == "stored", stored
        raw.send(tool_call(17, "get_contents", {"agent_id": "wire", "refs": [stored["ref"]]}))
        raw.wait_for([17])
        assert tool_payload(raw.replies[17])["items"][0]["content"] == "half \ufffd pair"
        assert raw.garbage == []
    finally:
        stderr = raw.close()
    assert "Traceback" not in stderr


def test_unreadable_http_bodies_are_answered(tmp_path: Path) -> None:
    with http_server(tmp_path, CPERSONA_AUTH_TOKEN=TOKEN) as (url, _proc):
        raw = RawHttp(url, TOKEN)
        raw.handshake()
        cases: list[tuple[bytes, Any, int]] = [
            (deep_line(10, 300).encode(), 10, INVALID_REQUEST),
            (deep_line(11, 5000).encode(), 11, INVALID_REQUEST),
            (b"not json at all", None, PARSE_ERROR),
            (b'{"jsonrpc":"2.0","id":"s-13","method":"tools/call","params":{"name":', "s-13", PARSE_ERROR),
            (b'{"jsonrpc":"2.0","id":15}', 15, INVALID_REQUEST),
        ]
        for body, request_id, code in cases:
            response = raw.post(body)
            assert response.status_code == 400, (body[:60], response.status_code, response.text[:200])
            reply = response.json()
            assert reply["id"] == request_id and reply["error"]["code"] == code, reply
        good = raw.post(SURROGATE_STORE.encode())
        assert good.status_code == 200, good.text[:300]
        stored = tool_payload(RawHttp.reply(good))
        assert stored["result"] == "stored", stored
        fetched = RawHttp.reply(
            raw.post(
                json.dumps(
                    tool_call(5, "get_contents", {"agent_id": "wire", "refs": [stored["ref"]]})
                ).encode()
            )
        )
        assert tool_payload(fetched)["items"][0]["content"] == "half \ufffd pair"
        recalled = RawHttp.reply(raw.post(SURROGATE_RECALL.encode()))
        assert recalled["id"] == 2 and tool_payload(recalled)["ok"] is True


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"jsonrpc":"2.0","params":{"id":5,"x":[{"id":6}]},"id":7,"method":"m", broken', 7),
        ('{"params":{"message":{"id":"inner"}},"id":"outer","x":', "outer"),
        ('{"id": -3 , "x": [', -3),
        ('{"a":{"id":1}}', None),
        ('{"id":true,', None),
        ("garbage", None),
        ('{"id":"\\ud800x",', "\ufffdx"),
    ],
)
def test_recover_id(text: str, expected: Any) -> None:
    assert recover_id(text) == expected


BAD_TOOL_CALLS: list[tuple[int, Any, str]] = [
    (30, {"name": "recall", "arguments": [1, 2]}, "params.arguments must be a JSON object"),
    (31, {"name": "recall", "arguments": "agent_id=x"}, "got a string"),
    (32, {"name": 5, "arguments": {}}, "params.name must be the tool's name"),
    (33, [1, 2], "needs params as a JSON object"),
    (34, {"arguments": {"agent_id": "x"}}, "got null or nothing"),
]


def test_malformed_tool_call_params_get_a_clear_error_over_stdio(tmp_path: Path) -> None:
    """A tools/call whose params cannot name a call is refused with -32602 saying which part is wrong."""
    raw = RawStdio(tmp_path)
    try:
        raw.handshake()
        for request_id, params, _ in BAD_TOOL_CALLS:
            raw.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})
        raw.send(tool_call(35, "recall", {"agent_id": "wire", "query": "still serving"}))
        raw.wait_for([request_id for request_id, _, _ in BAD_TOOL_CALLS] + [35])
        for request_id, _, wanted in BAD_TOOL_CALLS:
            error = raw.replies[request_id]["error"]
            assert error["code"] == INVALID_PARAMS and wanted in error["message"], error
        assert tool_payload(raw.replies[35])["ok"] is True
    finally:
        raw.close()


def test_malformed_tool_call_params_get_a_clear_error_over_http(tmp_path: Path) -> None:
    with http_server(tmp_path, CPERSONA_AUTH_TOKEN=TOKEN) as (url, _proc):
        raw = RawHttp(url, TOKEN)
        raw.handshake()
        for request_id, params, wanted in BAD_TOOL_CALLS:
            body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})
            response = raw.post(body.encode())
            reply = response.json() if response.status_code == 400 else RawHttp.reply(response)
            assert reply["id"] == request_id, reply
            assert reply["error"]["code"] == INVALID_PARAMS and wanted in reply["error"]["message"], reply
