"""The tool-argument properties of test_tool_properties.py, through real server processes on the wire.

Hypothesis-generated arguments for every tool are sent as raw JSON-RPC over stdio and over
streamable HTTP (lone surrogates and all, as ``\\udXXX`` escapes a real client would never send):
every request is answered with its id, and no answer is an ``internal`` error.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp_helpers import http_server
from raw_wire import RawHttp, stdio_caller, tool_call
from test_mcp_http import TOKEN
from test_tool_properties import arguments_for, check_response

from cpersona.server.tools import TOOLS

pytestmark = pytest.mark.slow

_ids = itertools.count(1000)
INTERNAL_ERROR = -32603

Caller = Callable[[dict[str, Any]], dict[str, Any]]


def seed(call: Caller) -> None:
    for agent in ("a", "b"):
        for i in range(3):
            call(
                tool_call(
                    next(_ids), "store", {"agent_id": agent, "message": {"content": f"seed {agent} {i}"}}
                )
            )


@pytest.fixture(scope="module")
def over_stdio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Caller]:
    with stdio_caller(tmp_path_factory.mktemp("wire-stdio")) as raw:
        seed(raw.call)
        yield raw.call


@pytest.fixture(scope="module")
def over_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Caller]:
    tmp = tmp_path_factory.mktemp("wire-http")
    with http_server(tmp, CPERSONA_AUTH_TOKEN=TOKEN) as (url, _proc):
        raw = RawHttp(url, TOKEN)
        raw.handshake()

        def call(message: dict[str, Any]) -> dict[str, Any]:
            return RawHttp.reply(raw.post(json.dumps(message).encode()))

        seed(call)
        yield call
    log = (tmp / "server.log").read_text(errors="replace")
    assert "Traceback" not in log, log[-3000:]


def answered_cleanly(call: Caller, tool: str, arguments: dict[str, Any]) -> None:
    request_id = next(_ids)
    reply = call(tool_call(request_id, tool, arguments))
    assert reply.get("id") == request_id, reply
    if "error" in reply:  # a JSON-RPC level refusal is an answer too, but never an internal error
        assert reply["error"]["code"] != INTERNAL_ERROR, reply
        return
    payload = json.loads(reply["result"]["content"][0]["text"])
    check_response(payload, tool)
    assert payload.get("error_code") != "internal", (tool, arguments, payload)


WIRE_SETTINGS = settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)


@pytest.mark.parametrize("tool", [spec.name for spec in TOOLS])
@WIRE_SETTINGS
@given(data=st.data())
def test_fuzzed_arguments_over_stdio(over_stdio: Caller, tool: str, data: st.DataObject) -> None:
    answered_cleanly(over_stdio, tool, data.draw(arguments_for(tool)))


@pytest.mark.parametrize("tool", [spec.name for spec in TOOLS])
@WIRE_SETTINGS
@given(data=st.data())
def test_fuzzed_arguments_over_http(over_http: Caller, tool: str, data: st.DataObject) -> None:
    answered_cleanly(over_http, tool, data.draw(arguments_for(tool)))
