"""OAuth 2.1 over streamable HTTP: the protected-resource metadata and the bearer check (docs/oauth.md).

``OAuthMiddleware`` answers ``/.well-known/oauth-protected-resource[/mcp]`` (RFC 9728) without a
token, and resolves every other request's bearer token to an ``acl.Client``: a JWT through
``cpersona.server.oauth.JwtVerifier`` (in a worker thread: the key fetch blocks), any other token through
the ACL file or the shared ``CPERSONA_AUTH_TOKEN`` as before. A refusal is 401 (no token, or a bad
one: ``error="invalid_token"``) or 403 (a good token that grants nothing: ``insufficient_scope``),
and its ``WWW-Authenticate`` names the metadata URL, so a client can find the authorization server.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import anyio.to_thread

from cpersona.acl import WILDCARD, AccessList, Client, Level
from cpersona.http.asgi import ASGIApp, Receive, Scope, Send, send_response
from cpersona.http.refusals import send_refusal
from cpersona.http.tokens import bearer_token, tokens_match
from cpersona.server.client_auth import SCOPE_KEY
from cpersona.server.oauth import JwtVerifier, TokenRefused, looks_like_jwt, metadata_url, resource_metadata

#: What the shared CPERSONA_AUTH_TOKEN may do beside OAuth: everything, as it does alone.
SHARED_TOKEN_CLIENT = Client(name="shared-token", token_sha256="", grants={WILDCARD: Level.ADMIN})
WELL_KNOWN = "/.well-known/oauth-protected-resource"


class OAuthMiddleware:
    """ASGI middleware: the resource metadata, then a client for every request or a refusal."""

    def __init__(
        self, app: ASGIApp, verifier: JwtVerifier, acl: AccessList | None, shared_token: str | None
    ) -> None:
        self.app = app
        self.verifier = verifier
        self.acl = acl
        self.shared_token = shared_token
        self.metadata_url = metadata_url(verifier.config.resource)
        self.metadata_paths = {WELL_KNOWN, urlsplit(self.metadata_url).path}
        self.metadata = json.dumps(resource_metadata(verifier.config)).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        if scope.get("path") in self.metadata_paths:
            await send_response(
                send,
                200,
                self.metadata,
                [(b"content-type", b"application/json"), (b"cache-control", b"max-age=3600")],
            )
            return
        token = bearer_token(scope)
        if token is None:
            await self._refuse(send, TokenRefused("send 'Authorization: Bearer <access token>'"), bare=True)
            return
        try:
            client = await self._client(token)
        except TokenRefused as refused:
            await self._refuse(send, refused)
            return
        scope[SCOPE_KEY] = client
        await self.app(scope, receive, send)

    async def _client(self, token: str) -> Client:
        if looks_like_jwt(token):
            return await anyio.to_thread.run_sync(self.verifier.verify, token)
        client = self.acl.authenticate(token) if self.acl is not None else None
        if client is None and self.shared_token is not None and tokens_match(token, self.shared_token):
            client = SHARED_TOKEN_CLIENT
        if client is None:
            raise TokenRefused("unknown token: not a JWT access token, nor a token of this server")
        return client

    async def _refuse(self, send: Send, refused: TokenRefused, *, bare: bool = False) -> None:
        # RFC 6750 §3: a request without credentials gets the challenge without an error code.
        challenge = f'Bearer resource_metadata="{self.metadata_url}"'
        if not bare:
            description = refused.description.replace('"', "'")[:300]
            challenge += f', error="{refused.error}", error_description="{description}"'
        message = f"{'unauthorized' if refused.status == 401 else 'forbidden'}: {refused.description}"
        await send_refusal(send, refused.status, message, challenge=challenge.encode("ascii", "replace"))
