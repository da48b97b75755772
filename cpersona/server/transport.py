"""Transports: stdio (default) and streamable HTTP behind a bearer token or an ACL file (docs/cli.md#cpersona-serve).

In stdio mode stdout carries MCP JSON-RPC and nothing else; logs go to stderr.
HTTP refuses to start unless it is authenticated or the operator explicitly
allowed unauthenticated access, whatever the bind address.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio
import uvicorn

from cpersona.acl import AccessList, AclError, load_acl
from cpersona.config import Settings
from cpersona.http.asgi import ASGIApp, Receive, Scope, Send
from cpersona.http.listen import EXIT_BIND, BindFailed, bind_listeners
from cpersona.http.refusals import send_refusal
from cpersona.http.tokens import bearer_token, tokens_match, weak_token
from cpersona.server.app import PendingMemory, build_server
from cpersona.server.client_auth import AclMiddleware
from cpersona.server.http_guard import bind_warning, transport_security
from cpersona.server.oauth import JwtVerifier, OAuthConfig, loopback_url
from cpersona.server.oauth_http import OAuthMiddleware
from cpersona.server.single_reply import SingleReplyMiddleware
from cpersona.server.stdio import guarded_stdio
from cpersona.server.wire_http import WireScreenMiddleware

if TYPE_CHECKING:  # Memory (numpy, the model runtime) is imported after the handshake
    from cpersona.memory import Memory

log = logging.getLogger("cpersona.server")

#: Path the MCP endpoint is served on.
HTTP_PATH = "/mcp"
#: Process exit code when the configuration forbids starting (same as a ConfigError).
EXIT_REFUSED = 2


class TransportRefused(RuntimeError):
    """The transport must not start with this configuration; the message says why and what to set."""


def oauth_refusal(settings: Settings) -> str | None:
    """Why the OAuth settings cannot serve, or None (also when OAuth is off)."""
    if settings.oauth_issuer is None:
        return None
    missing = [
        name
        for name, value in (
            ("CPERSONA_OAUTH_JWKS_URL", settings.oauth_jwks_url),
            ("CPERSONA_OAUTH_RESOURCE", settings.oauth_resource),
        )
        if not value
    ]
    if missing:
        return f"refusing to serve streamable HTTP: CPERSONA_OAUTH_ISSUER needs {' and '.join(missing)}"
    for name, url in (("CPERSONA_OAUTH_JWKS_URL", settings.oauth_jwks_url or ""),):
        if not url.startswith("https://") and not (url.startswith("http://") and loopback_url(url)):
            return f"refusing to serve streamable HTTP: {name} must be an https:// URL (http:// only on loopback)"
    return None


def oauth_config(settings: Settings) -> OAuthConfig | None:
    """The verifier's settings, or None when OAuth is off (``oauth_refusal`` has passed)."""
    if settings.oauth_issuer is None or settings.oauth_jwks_url is None or settings.oauth_resource is None:
        return None
    return OAuthConfig(
        issuer=settings.oauth_issuer,
        jwks_url=settings.oauth_jwks_url,
        resource=settings.oauth_resource,
        leeway_seconds=settings.oauth_leeway_seconds,
        jwks_min_refresh_seconds=settings.oauth_jwks_min_refresh_seconds,
    )


def http_refusal(settings: Settings) -> str | None:
    """Why streamable HTTP must not start with ``settings``, or None when it may."""
    oauth = oauth_refusal(settings)
    if oauth is not None or settings.oauth_issuer is not None:
        if oauth is None and settings.auth_token is not None:
            return weak_token(settings.auth_token)
        return oauth
    if settings.acl_file is not None:
        try:
            load_acl(settings.acl_file)
        except AclError as exc:
            return f"refusing to serve streamable HTTP: {exc}"
        return None
    weak = weak_token(settings.auth_token)
    if weak is not None:
        return weak
    if settings.auth_token is None and not settings.allow_unauthenticated_http:
        return (
            "refusing to serve streamable HTTP without authentication: set CPERSONA_AUTH_TOKEN to a secret "
            "bearer token (clients send 'Authorization: Bearer <token>'), or set "
            "CPERSONA_ALLOW_UNAUTHENTICATED_HTTP=true to accept anyone who can reach "
            f"{settings.http_host}:{settings.http_port}."
        )
    return None


class BearerTokenMiddleware:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``.

    The comparison is constant-time (``cpersona.http.tokens.tokens_match``) so the
    response time does not reveal how much of a guessed token was right.
    Lifespan and other non-HTTP scopes pass through untouched.
    """

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") == "http" and not tokens_match(bearer_token(scope), self._expected):
            await send_refusal(send, 401, "unauthorized: send 'Authorization: Bearer <CPERSONA_AUTH_TOKEN>'")
            return
        await self.app(scope, receive, send)


async def serve_stdio_async(memory: Memory | PendingMemory, settings: Settings) -> None:
    """Serve MCP over this process's stdin/stdout until the client closes stdin."""
    server = build_server(memory, settings)
    async with guarded_stdio() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def run_stdio(memory: Memory | PendingMemory, settings: Settings | None = None) -> None:
    """Blocking stdio server (the default transport); says so when an ACL file is set (it does not apply)."""
    settings = settings or Settings()
    notice = stdio_acl_notice(settings)
    if notice is not None:
        log.warning("%s", notice)
    anyio.run(serve_stdio_async, memory, settings)


def build_http_app(memory: Memory | PendingMemory, settings: Settings) -> ASGIApp:
    """The streamable-HTTP ASGI app, wrapped in bearer-token auth when a token is configured.

    Raises TransportRefused when ``settings`` forbid serving HTTP.
    """
    refusal = http_refusal(settings)
    if refusal is not None:
        raise TransportRefused(refusal)
    acl = _load_acl_or_refuse(settings)
    oauth = oauth_config(settings)
    server = build_server(memory, settings, acl=acl is not None or oauth is not None)
    app: ASGIApp = server.streamable_http_app(
        streamable_http_path=HTTP_PATH,
        host=settings.http_host,
        transport_security=transport_security(settings),
    )
    app = SingleReplyMiddleware(app, HTTP_PATH)  # a stream holding only the reply goes as JSON
    app = WireScreenMiddleware(app, HTTP_PATH)
    if oauth is not None:
        log.info(
            "HTTP access by OAuth: JWT access tokens of %s for %s%s",
            oauth.issuer,
            oauth.resource,
            "; ACL tokens too"
            if acl is not None
            else "; the shared token too"
            if settings.auth_token
            else "",
        )
        app = OAuthMiddleware(
            app, JwtVerifier(oauth, acl), acl, None if acl is not None else settings.auth_token
        )
    elif acl is not None:
        if settings.auth_token is not None:
            log.warning(
                "CPERSONA_AUTH_TOKEN is ignored: CPERSONA_ACL_FILE is set, so only the ACL's client "
                "tokens are accepted"
            )
        log.info("HTTP access by ACL file %s: %d client(s), deny by default", acl.path, len(acl.clients))
        app = AclMiddleware(app, acl)
    elif settings.auth_token is not None:
        app = BearerTokenMiddleware(app, settings.auth_token)
    else:
        log.warning(
            "serving streamable HTTP WITHOUT authentication (CPERSONA_ALLOW_UNAUTHENTICATED_HTTP=true)"
        )
    return app


def _load_acl_or_refuse(settings: Settings) -> AccessList | None:
    if settings.acl_file is None:
        return None
    try:
        return load_acl(settings.acl_file)
    except AclError as exc:
        raise TransportRefused(f"refusing to serve streamable HTTP: {exc}") from exc


def stdio_acl_notice(settings: Settings) -> str | None:
    """The start-up notice when an ACL file is set but the transport (stdio) does not apply it."""
    if settings.acl_file is None:
        return None
    return (
        f"CPERSONA_ACL_FILE ({settings.acl_file}) does not apply over stdio: the process that launched "
        "this server has full access to its database (ACLs apply to streamable HTTP only)"
    )


def run_http(
    memory: Memory | PendingMemory,
    settings: Settings,
    sockets: list[socket.socket] | None = None,
    on_server: Callable[[uvicorn.Server], None] | None = None,
) -> int:
    """Blocking streamable-HTTP server on ``settings.http_host:http_port``; returns an exit code.

    Returns EXIT_REFUSED (2) without binding anything when the configuration
    forbids HTTP (no token, no ACL and no explicit opt-out; or a malformed ACL file),
    and EXIT_BIND (4) when the port cannot be bound. ``sockets`` are listeners the
    caller bound already (``cmd_serve`` binds before opening anything). ``on_server`` is
    handed the uvicorn server before it starts, so a stop asked for by then (``cmd_serve``'s
    Ctrl-C) reaches it.
    """
    try:
        app = build_http_app(memory, settings)
    except TransportRefused as exc:
        log.error("%s", exc)
        return EXIT_REFUSED
    if sockets is None:
        try:
            sockets = bind_listeners(settings.http_host, settings.http_port, setting="CPERSONA_HTTP_PORT")
        except BindFailed as exc:
            log.error("%s", exc)
            return EXIT_BIND
    warning = bind_warning(settings)
    if warning is not None:
        log.warning("%s", warning)
    log.info(
        "serving MCP over streamable HTTP at http://%s:%d%s",
        settings.http_host,
        settings.http_port,
        HTTP_PATH,
    )
    config = uvicorn.Config(
        app,
        host=settings.http_host,
        port=settings.http_port,
        log_level="warning",
        lifespan="on",
        # uvicorn's own loggers write to stderr; keep its access log off (tokens never appear, but noise does).
        access_log=False,
    )
    server = uvicorn.Server(config)
    if on_server is not None:
        on_server(server)
    server.run(sockets=sockets)
    return 0
