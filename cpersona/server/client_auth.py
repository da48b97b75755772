"""HTTP authentication by ACL (SPEC §9): which client sent this request.

``AclMiddleware`` resolves the bearer token of every HTTP request to a named
client of the ACL file and records it in the ASGI scope; requests without a
known token get 401. The MCP SDK hands the same Starlette request to the tool
handler (``ctx.request``), where ``request_client`` reads it back, so identity
is per HTTP request, not per MCP session: a session id borrowed by another
client carries that other client's grants, not the first one's.
Authorisation (what the client may call) is ``cpersona.server.access``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from cpersona.acl import AccessList, Client

#: ASGI scope key holding the authenticated ``Client``.
SCOPE_KEY = "cpersona.client"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def bearer_token(scope: Scope) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (scheme case-insensitive), or None."""
    for key, value in scope.get("headers") or ():
        if key.lower() == b"authorization":
            scheme, _, token = value.decode("latin-1").strip().partition(" ")
            token = token.strip()
            return token if scheme.lower() == "bearer" and token else None
    return None


class AclMiddleware:
    """ASGI middleware: every HTTP request must carry the bearer token of a client in the ACL."""

    def __init__(self, app: ASGIApp, acl: AccessList) -> None:
        self.app = app
        self.acl = acl

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") == "http":
            token = bearer_token(scope)
            client = None if token is None else self.acl.authenticate(token)
            if client is None:
                await reject(
                    send, "unauthorized: send 'Authorization: Bearer <token>' with a token of the ACL file"
                )
                return
            scope[SCOPE_KEY] = client
        await self.app(scope, receive, send)


def request_client(ctx: Any) -> Client | None:
    """The ACL client of the HTTP request behind a tool call (None over stdio or without an ACL)."""
    request = getattr(ctx, "request", None)
    scope = getattr(request, "scope", None)
    client = scope.get(SCOPE_KEY) if isinstance(scope, MutableMapping) else None
    return client if isinstance(client, Client) else None


async def reject(send: Send, message: str) -> None:
    """Answer 401 with the uniform failure body."""
    body = json.dumps({"ok": False, "error": message, "error_code": "unauthorized"}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b'Bearer realm="cpersona"'),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
