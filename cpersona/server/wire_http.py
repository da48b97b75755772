"""The wire screen for streamable HTTP: each POSTed JSON-RPC body goes through ``wire.screen``.

The SDK answers plain parse errors itself but with ``id: null`` and without the input rules
(a lone surrogate escape is a parse error there, U+FFFD everywhere else). This middleware makes
HTTP behave exactly like stdio: sanitised bodies go on, refusals are answered with the
JSON-RPC error (status 400) carrying the request's id when it can be recovered.
"""

from __future__ import annotations

import logging
from typing import Any

from mcp.shared.inbound import decode_header_value
from mcp_types.jsonrpc import HEADER_MISMATCH

from cpersona.core.limits import MAX_HTTP_BODY_BYTES
from cpersona.http.asgi import ASGIApp, Message, Receive, Scope, Send, send_response
from cpersona.server.tasks import METHODS as TASK_METHODS
from cpersona.server.wire import error_reply, error_text, screen

log = logging.getLogger("cpersona.server")


class WireScreenMiddleware:
    """ASGI middleware screening POST bodies to ``path``; other requests and oversized bodies pass untouched."""

    def __init__(self, app: ASGIApp, path: str) -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST" or scope.get("path") != self.path:
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more and size <= MAX_HTTP_BODY_BYTES:
            message = await receive()
            if message["type"] != "http.request":  # client went away: let the app see it
                await self.app(scope, _replay(chunks, message, receive), send)
                return
            chunk = message.get("body", b"")
            chunks.append(chunk)
            size += len(chunk)
            more = bool(message.get("more_body"))
        if more:  # too large to screen: the SDK's own size limit answers it
            await self.app(scope, _replay(chunks, None, receive, more=True), send)
            return
        body = b"".join(chunks)
        screened = screen(body.decode("utf-8", errors="replace"))
        if screened.reply is not None:
            log.info("answered an unreadable request: %s", error_text(screened.reply))
            await _answer(send, screened.reply.model_dump_json(by_alias=True, exclude_unset=True).encode())
            return
        mismatch = task_name_mismatch(screened.message, scope)
        if mismatch is not None:
            log.info("answered a request whose Mcp-Name is not its task: %s", mismatch)
            reply = error_reply(getattr(screened.message, "id", None), HEADER_MISMATCH, mismatch)
            await _answer(send, reply.model_dump_json(by_alias=True, exclude_unset=True).encode())
            return
        new_body = screened.text.encode("utf-8")
        if new_body != body:
            scope = dict(scope)
            scope["headers"] = [
                (k, str(len(new_body)).encode() if k.lower() == b"content-length" else v)
                for k, v in scope.get("headers") or ()
            ]
        await self.app(scope, _replay([new_body], None, receive), send)


def task_name_mismatch(message: Any, scope: Scope) -> str | None:
    """Why a ``tasks/*`` request's ``Mcp-Name`` header disagrees with its ``taskId``, or None.

    The tasks extension routes these requests by ``Mcp-Name`` (= ``params.taskId``); the SDK checks
    the header only for the methods it knows (tools/call, resources/read, prompts/get), so a proxy
    and this server could otherwise read two different tasks from one request.
    """
    if getattr(message, "method", None) not in TASK_METHODS:
        return None
    sent = [v for k, v in scope.get("headers") or () if k.lower() == b"mcp-name"]
    if not sent:
        return None
    params = getattr(message, "params", None)
    task_id = params.get("taskId") if isinstance(params, dict) else None
    if len(sent) == 1 and decode_header_value(sent[0].decode("latin-1")) == task_id:
        return None
    return "Header mismatch: the Mcp-Name header must be the request's params.taskId"


def _replay(chunks: list[bytes], extra: Message | None, receive: Receive, *, more: bool = False) -> Receive:
    """A ``receive`` that hands back the buffered body first, then defers to the real one."""
    queue: list[Message] = [{"type": "http.request", "body": b"".join(chunks), "more_body": more}]
    if extra is not None:
        queue.append(extra)

    async def replayed() -> Message:
        return queue.pop(0) if queue else await receive()

    return replayed


async def _answer(send: Send, body: bytes) -> None:
    await send_response(send, 400, body, [(b"content-type", b"application/json")])
