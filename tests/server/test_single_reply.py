"""A POST whose stream would hold only its reply is answered as JSON; anything else still streams.

The middleware is checked twice: on event streams written here (every way a stream can begin), and
through a real server process with a raw HTTP client and a real MCP client that is asked to confirm
(its question must still arrive on the call's stream).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client
from mcp_helpers import http_server
from raw_wire import INITIALIZE, INITIALIZED, PROTOCOL

from cpersona.http.asgi import Message, Receive, Scope, Send
from cpersona.server.single_reply import SingleReplyMiddleware

REPLY = {"jsonrpc": "2.0", "id": 7, "result": {"ok": True}}
SSE_START: Message = {
    "type": "http.response.start",
    "status": 200,
    "headers": [
        (b"content-type", b"text/event-stream"),
        (b"cache-control", b"no-store"),
        (b"mcp-session-id", b"abc"),
    ],
}


def event(data: Any, *, name: str = "message", event_id: str | None = None) -> bytes:
    lines = [f"event: {name}"] + ([f"id: {event_id}"] if event_id is not None else [])
    lines.append(f"data: {json.dumps(data) if not isinstance(data, str) else data}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def body(chunk: bytes, more: bool = True) -> Message:
    return {"type": "http.response.body", "body": chunk, "more_body": more}


def relay(
    messages: list[Message],
    *,
    method: str = "POST",
    path: str = "/mcp",
    accept: bytes = b"application/json, text/event-stream",
) -> list[Message]:
    """What a client receives when the app sends ``messages`` through the middleware."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        for message in messages:
            await send(message)

    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {"type": "http", "method": method, "path": path, "headers": [(b"accept", accept)]}
    anyio.run(SingleReplyMiddleware(app, "/mcp"), scope, receive, send)
    return sent


def as_json(sent: list[Message]) -> tuple[dict[bytes, bytes], Any]:
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"], sent
    headers = dict(sent[0]["headers"])
    assert headers[b"content-type"] == b"application/json"
    assert int(headers[b"content-length"]) == len(sent[1]["body"])
    assert not sent[1].get("more_body", False)
    return headers, json.loads(sent[1]["body"])


def test_a_stream_of_only_the_reply_becomes_json() -> None:
    headers, reply = as_json(relay([SSE_START, body(event(REPLY)), body(b"", more=False)]))
    assert reply == REPLY
    assert headers[b"mcp-session-id"] == b"abc" and b"cache-control" not in headers


def test_the_reply_may_come_in_pieces_after_keep_alive_comments() -> None:
    whole = b": ping\r\n\r\n" + event(REPLY)
    pieces = [body(whole[i : i + 5]) for i in range(0, len(whole), 5)]
    _, reply = as_json(relay([SSE_START, *pieces, body(b"", more=False)]))
    assert reply == REPLY
    # An error reply is a reply too.
    error = {"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "no such tool"}}
    assert as_json(relay([SSE_START, body(event(error), more=False)]))[1] == error


@pytest.mark.parametrize(
    "first",
    [
        {"jsonrpc": "2.0", "id": 1, "method": "elicitation/create", "params": {}},  # the user is asked first
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}},
        {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}},
    ],
)
def test_a_stream_that_carries_more_than_the_reply_passes_as_it_came(first: dict[str, Any]) -> None:
    messages = [SSE_START, body(event(first)), body(event(REPLY)), body(b"", more=False)]
    assert relay(messages) == messages


def test_a_resumable_stream_and_streams_without_a_reply_pass_as_they_came() -> None:
    resumable = [SSE_START, body(event(REPLY, event_id="ev-1"), more=False)]
    assert relay(resumable) == resumable
    priming = [SSE_START, body(event("", event_id="ev-0")), body(event(REPLY)), body(b"", more=False)]
    assert relay(priming) == priming
    empty = [SSE_START, body(b": ping\r\n\r\n"), body(b"", more=False)]
    assert relay(empty) == empty
    not_json = [SSE_START, body(event("{not json")), body(b"", more=False)]
    assert relay(not_json) == not_json


def test_other_responses_requests_and_clients_are_untouched() -> None:
    plain = [
        {"type": "http.response.start", "status": 202, "headers": [(b"content-type", b"application/json")]},
        body(b"", more=False),
    ]
    assert relay(plain) == plain
    stream = [SSE_START, body(event(REPLY)), body(b"", more=False)]
    assert relay(stream, method="GET") == stream  # the standalone stream of server messages
    assert relay(stream, path="/other") == stream
    assert relay(stream, accept=b"text/event-stream") == stream  # a client that takes no JSON


TOKEN = "single-reply-token-0123456789"


@pytest.mark.slow
def test_a_real_server_answers_a_recall_as_json_on_one_connection(tmp_path: Path) -> None:
    with http_server(tmp_path, CPERSONA_AUTH_TOKEN=TOKEN, CPERSONA_EMBEDDING_MODE="none") as (url, _proc):
        headers = {
            "Authorization": f"Bearer {TOKEN}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": PROTOCOL,
        }
        with httpx2.Client(timeout=30) as http:
            opened = http.post(url, json=INITIALIZE, headers=headers)
            headers["mcp-session-id"] = opened.headers["mcp-session-id"]
            assert http.post(url, json=INITIALIZED, headers=headers).status_code == 202
            replies = []
            for n, (name, arguments) in enumerate(
                [
                    (
                        "store",
                        {"agent_id": "json", "message": {"content": "the kettle is in the left cupboard"}},
                    ),
                    ("recall", {"agent_id": "json", "query": "kettle cupboard"}),
                ],
                start=2,
            ):
                call = {
                    "jsonrpc": "2.0",
                    "id": n,
                    "method": "tools/call",
                    "params": {"name": name, "arguments": arguments},
                }
                response = http.post(url, json=call, headers=headers)
                assert response.headers["content-type"] == "application/json", response.text[:300]
                assert int(response.headers["content-length"]) == len(response.content)
                replies.append(response.json())
        assert [r["id"] for r in replies] == [2, 3]
        assert (
            replies[1]["result"]["structuredContent"]["results"][-1]["id"]
            == replies[0]["result"]["structuredContent"]["id"]
        )


@pytest.mark.slow
def test_a_question_to_the_user_still_arrives_on_the_calls_stream(tmp_path: Path) -> None:
    asked: list[str] = []

    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="decline")

    async def session(url: str) -> tuple[dict[str, Any], dict[str, Any]]:
        http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {TOKEN}"}, timeout=httpx2.Timeout(30, read=120)
        )
        async with Client(
            streamable_http_client(url, http_client=http), mode="legacy", elicitation_callback=on_elicit
        ) as client:
            stored = await client.call_tool("store", {"agent_id": "ask", "message": {"content": "keep me"}})
            refused = await client.call_tool("delete_agent_data", {"agent_id": "ask"})
            listed = await client.call_tool("list_memories", {"agent_id": "ask"})
        assert stored.structured_content is not None and refused.structured_content is not None
        assert listed.structured_content is not None
        return refused.structured_content, listed.structured_content

    with http_server(tmp_path, CPERSONA_AUTH_TOKEN=TOKEN, CPERSONA_EMBEDDING_MODE="none") as (url, _proc):
        refused, listed = anyio.run(session, url)
    assert len(asked) == 1 and "'ask' (1 memory, 0 episodes, 0 profiles)" in asked[0], asked
    assert refused["ok"] is False and refused["error_code"] == "declined", refused
    assert listed["total"] == 1  # the refusal deleted nothing
