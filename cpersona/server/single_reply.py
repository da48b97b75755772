"""A POST whose event stream would hold only its reply is answered as plain JSON instead.

Streamable HTTP lets the server answer a request either with one ``application/json`` body or with
an event stream (the SDK always streams here, because a call may ask the user or report progress on
it first). Most calls do neither: their stream holds one event, the reply, and then ends. A client
reading such a stream stops at the reply, before the end of the body, so its HTTP connection
cannot be reused. The Python SDK 1.x client then opens a new connection for every call, and every
client parses an event stream for one message.

This middleware holds back the stream's headers until its first event. When that event is the reply
to the request (a JSON-RPC response or error, so nothing else will follow on this stream), the client
gets it as a complete JSON body with a content length; otherwise (a question to the user, a progress
or log notification, a resumption id, a client that accepts no JSON) the held bytes are sent as they
came and the rest of the stream passes through untouched. Comment lines (keep-alive pings) before
the reply are dropped with the stream. Measured: docs/benchmarks.md, "Tool surface and the Python SDK
1.x client".
"""

from __future__ import annotations

import json
import re
from typing import Any

from cpersona.http.asgi import ASGIApp, Message, Receive, Scope, Send

_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r|\r\n\n|\n\r\n")
_LINE = re.compile(rb"\r\n|\r|\n")
#: Stream headers that say nothing about a complete JSON body.
_STREAM_HEADERS = {b"content-type", b"content-length", b"cache-control", b"connection", b"x-accel-buffering"}


def _accepts_json(scope: Scope) -> bool:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"accept":
            return b"application/json" in value.lower() or b"*/*" in value
    return False


def _first_event(buffer: bytes) -> list[bytes] | None:
    """The lines of the first complete event with content, comments left out; None until there is one
    (comment-only events, such as keep-alive pings, are skipped)."""
    while True:
        end = _EVENT_END.search(buffer)
        if end is None:
            return None
        lines = [line for line in _LINE.split(buffer[: end.start()]) if line and not line.startswith(b":")]
        if lines:
            return lines
        buffer = buffer[end.end() :]


def _lone_reply(lines: list[bytes]) -> bytes | None:
    """The event's data when the event is a JSON-RPC reply with nothing else to carry (no id to resume
    from); None for anything else."""
    data: list[bytes] = []
    for line in lines:
        field, _, value = line.partition(b":")
        value = value[1:] if value.startswith(b" ") else value
        if field == b"data":
            data.append(value)
        elif field == b"id" and value:
            return None  # a resumable stream: the client may want to resume from this id
        elif field not in (b"event", b"retry"):
            return None
    body = b"\n".join(data)
    try:
        message: Any = json.loads(body)
    except ValueError:
        return None
    if isinstance(message, dict) and "id" in message and ("result" in message or "error" in message):
        return body
    return None


class SingleReplyMiddleware:
    """ASGI middleware: POSTs to ``path`` whose stream would carry only the reply get it as JSON."""

    def __init__(self, app: ASGIApp, path: str) -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope.get("type") != "http"
            or scope.get("method") != "POST"
            or scope.get("path") != self.path
            or not _accepts_json(scope)
        ):
            await self.app(scope, receive, send)
            return
        await self.app(scope, receive, _Relay(send).send)


class _Relay:
    """The ``send`` of one POST: holds an event stream back until its first event decides its form."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._start: Message | None = None  # held stream headers
        self._held: list[Message] = []
        self._buffer = b""
        self._mode = "deciding"  # then "stream" (pass through) or "done" (answered as JSON)

    async def send(self, message: Message) -> None:
        if self._mode == "stream":
            await self._send(message)
            return
        if self._mode == "done":
            return  # the rest of a stream already answered as JSON (its end)
        if message["type"] == "http.response.start":
            if _is_event_stream(message):
                self._start = message
                return
            self._mode = "stream"  # JSON, 202, an error: not ours to change
            await self._send(message)
            return
        if self._start is None or message["type"] != "http.response.body":
            await self._flush(message)
            return
        self._held.append(message)
        self._buffer += message.get("body", b"")
        found = _first_event(self._buffer)
        if found is None:
            if not message.get("more_body", False):
                await self._flush(None)  # the stream ended without an event: send it as it was
            return
        reply = _lone_reply(found)
        if reply is None:
            await self._flush(None)
            return
        self._mode = "done"
        headers = [
            (name, value)
            for name, value in self._start.get("headers", [])
            if name.lower() not in _STREAM_HEADERS
        ]
        headers += [(b"content-type", b"application/json"), (b"content-length", str(len(reply)).encode())]
        await self._send({"type": "http.response.start", "status": self._start["status"], "headers": headers})
        await self._send({"type": "http.response.body", "body": reply})

    async def _flush(self, message: Message | None) -> None:
        """Send what was held, as it came, and pass everything after it through."""
        self._mode = "stream"
        if self._start is not None:
            await self._send(self._start)
        for held in self._held:
            await self._send(held)
        if message is not None:
            await self._send(message)


def _is_event_stream(start: Message) -> bool:
    for name, value in start.get("headers", []):
        if name.lower() == b"content-type":
            return bytes(value).lower().startswith(b"text/event-stream")
    return False
