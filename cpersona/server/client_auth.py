"""HTTP authentication by ACL (docs/architecture.md#access-control-http-with-an-acl-file): which client sent this request.

``AclMiddleware`` resolves the bearer token of every HTTP request to a named
client of the ACL file and records it in the ASGI scope; requests without a
known token get 401. The MCP SDK hands the same Starlette request to the tool
handler (``ctx.request``), where ``request_client`` reads it back, so identity
is per HTTP request, not per MCP session: a session id borrowed by another
client carries that other client's grants, not the first one's.
Authorisation (what the client may call) is ``cpersona.server.access``.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from cpersona.acl import AccessList, Client
from cpersona.http.asgi import ASGIApp, Receive, Scope, Send
from cpersona.http.refusals import send_refusal
from cpersona.http.tokens import bearer_token

#: ASGI scope key holding the authenticated ``Client``.
SCOPE_KEY = "cpersona.client"


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
                await send_refusal(
                    send,
                    401,
                    "unauthorized: send 'Authorization: Bearer <token>' with a token of the ACL file",
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
