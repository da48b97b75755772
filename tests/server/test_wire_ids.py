"""Issue 17 defect 5: a request whose ``id`` is not a string or an integer is answered, on both transports.

JSON-RPC 2.0: an id is a string, a number without a fraction, or null (discouraged); an error in
detecting the id makes the reply's id null. The SDK read ``{"id": null | true | 1.5 | {} | [], "method"}``
as a notification: stdio never answered (the client hung) and HTTP said 202 with an empty body.
Now each gets ``-32600`` with ``id: null`` and is not executed. Raw JSON-RPC against real servers.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp_helpers import http_server
from raw_wire import RawHttp, RawStdio, tool_call
from test_mcp_http import TOKEN

from cpersona.server.wire import INVALID_REQUEST

pytestmark = pytest.mark.slow

#: Raw JSON for ids the SDK took as notifications (the issue's five, plus their neighbours).
BAD_IDS = ["null", "true", "false", "1.5", "1.0", "1e3", '{"a":1}', "[1]", "[]", "{}"]

_ids = itertools.count(5000)


def line(raw_id: str, method: str = "tools/list", params: dict[str, Any] | None = None) -> str:
    message = '{"jsonrpc":"2.0","id":' + raw_id + f',"method":"{method}"'
    return message + (f',"params":{json.dumps(params)}' if params is not None else "") + "}"


def store_params(content: str) -> dict[str, Any]:
    return {"name": "store", "arguments": {"agent_id": "ids", "message": {"content": content}}}


def assert_id_error(reply: dict[str, Any]) -> None:
    assert reply["id"] is None, reply
    assert reply["error"]["code"] == INVALID_REQUEST, reply
    assert "id must be a string or an integer" in reply["error"]["message"], reply


def stored_contents(reply: dict[str, Any]) -> list[str]:
    payload = json.loads(reply["result"]["content"][0]["text"])
    return [row["content"] for row in payload["items"]]


def test_every_bad_id_is_answered_over_stdio_and_nothing_runs(tmp_path: Path) -> None:
    raw = RawStdio(tmp_path)
    try:
        raw.handshake()
        for raw_id in BAD_IDS:
            raw.send_line(line(raw_id))
            raw.send_line(line(raw_id, "tools/call", store_params(f"stored under id {raw_id}")))
        raw.send(tool_call(2, "list_memories", {"agent_id": "ids"}))
        raw.wait_for([2], nulls=2 * len(BAD_IDS))
        assert len(raw.null_replies) == 2 * len(BAD_IDS)
        for reply in raw.null_replies:
            assert_id_error(reply)
        assert stored_contents(raw.replies[2]) == []  # a refused request is not executed
        assert raw.garbage == []
    finally:
        stderr = raw.close()
    assert "Traceback" not in stderr
    assert stderr.count("answered an unreadable request") == 2 * len(BAD_IDS)  # and it is logged


def test_every_bad_id_is_answered_over_http_and_nothing_runs(tmp_path: Path) -> None:
    with http_server(tmp_path, CPERSONA_AUTH_TOKEN=TOKEN) as (url, _proc):
        raw = RawHttp(url, TOKEN)
        raw.handshake()
        for raw_id in BAD_IDS:
            for body in (line(raw_id), line(raw_id, "tools/call", store_params(f"stored under id {raw_id}"))):
                response = raw.post(body.encode())
                assert response.status_code == 400, (raw_id, response.status_code, response.text[:200])
                assert_id_error(response.json())
        listed = RawHttp.reply(
            raw.post(json.dumps(tool_call(2, "list_memories", {"agent_id": "ids"})).encode())
        )
        assert stored_contents(listed) == []
    log = (tmp_path / "server.log").read_text(errors="replace")
    assert "Traceback" not in log
    assert log.count("answered an unreadable request") == 2 * len(BAD_IDS)


# -- every JSON value as an id, through the real servers ---------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)

#: Send one request line; return its one answer (the test fails on none, or on more than one).
Caller = Callable[[str, Any], dict[str, Any]]


def valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


@pytest.fixture(scope="module")
def over_stdio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Caller]:
    """Each line is followed by a sentinel request: once the sentinel is answered, so is the line
    (the screen answers a refused line before it reads the next one)."""
    raw = RawStdio(tmp_path_factory.mktemp("ids-stdio"))
    raw.handshake()

    def call(text: str, value: Any) -> dict[str, Any]:
        before = len(raw.null_replies)
        sentinel = f"sentinel-{next(_ids)}"
        raw.send_line(text)
        raw.send({"jsonrpc": "2.0", "id": sentinel, "method": "ping"})
        raw.wait_for([sentinel, value] if valid_id(value) else [sentinel])
        raw.replies.pop(sentinel)
        new_nulls = raw.null_replies[before:]
        if valid_id(value):
            assert new_nulls == []
            return raw.replies.pop(value)
        assert len(new_nulls) == 1, new_nulls
        return new_nulls[0]

    try:
        yield call
    finally:
        stderr = raw.close()
        assert "Traceback" not in stderr, stderr[-3000:]


@pytest.fixture(scope="module")
def over_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Caller]:
    tmp = tmp_path_factory.mktemp("ids-http")
    with http_server(tmp, CPERSONA_AUTH_TOKEN=TOKEN) as (url, _proc):
        raw = RawHttp(url, TOKEN)
        raw.handshake()

        def call(text: str, value: Any) -> dict[str, Any]:
            response = raw.post(text.encode())
            assert response.status_code in (200, 400), (response.status_code, response.text[:200])
            return RawHttp.reply(response)

        yield call


def check_answer(call: Caller, value: Any) -> None:
    if isinstance(value, str) and value.startswith("sentinel-"):
        return  # the stdio fixture's own ids
    reply = call(json.dumps({"jsonrpc": "2.0", "id": value, "method": "tools/list"}), value)
    if valid_id(value):
        assert reply["id"] == value and "tools" in reply["result"], reply
    else:
        assert_id_error(reply)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(JSON_VALUES)
def test_any_json_id_gets_exactly_one_answer_over_stdio(over_stdio: Caller, value: Any) -> None:
    check_answer(over_stdio, value)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(JSON_VALUES)
def test_any_json_id_gets_exactly_one_answer_over_http(over_http: Caller, value: Any) -> None:
    check_answer(over_http, value)
