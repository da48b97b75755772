"""The browser view's guard: Host / Origin checks, the token login, session cookies and CSRF tokens.

Rules (docs/cli.md "cpersona ui", docs/decisions.md):

- The Host header must name the address the view was started on or a loopback name, with
  its port (DNS-rebinding defence). A request carrying an ``Origin`` (or ``Sec-Fetch-Site:
  cross-site``) from anywhere else is refused on every method.
- With ``CPERSONA_AUTH_TOKEN`` set every page needs the token: once through the login form
  (which sets an HttpOnly SameSite=Strict session cookie) or on each request as
  ``Authorization: Bearer <token>``. Binding beyond loopback without a token is refused.
- With ``CPERSONA_ACL_FILE`` set the single token is ignored and every page needs an ACL
  client's token, on every bind (loopback too); the session remembers the client's NAME
  (signed), and access.py answers what that client may see and change.
- Every state-changing request (POST) must carry the session's CSRF token (hidden ``csrf``
  field or ``X-CSRF-Token`` header); the token is an HMAC of the session id, so it cannot be
  forged without the process's secret and differs per session.

The session cookie is ``<sid>.<who>.<signature>`` (who: ``0`` anonymous, ``1`` logged in with the
token, ``@name`` logged in as ACL client ``name``), signed by itsdangerous (HMAC-SHA256, a salt of
its own) with a per-process random secret: restarting the view logs everyone out, and nothing is
stored server-side.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from itsdangerous import BadSignature, Signer

from cpersona.acl import AccessList, Client
from cpersona.http.addresses import is_loopback, server_names
from cpersona.http.asgi import ASGIApp, Message, Receive, Scope, Send, send_response
from cpersona.http.refusals import send_refusal
from cpersona.http.tokens import bearer_token, tokens_match, weak_token

COOKIE = "cpersona_ui"
#: Paths reachable without logging in (the login form itself and its stylesheet).
PUBLIC_PATHS = ("/login", "/static/ui.css")


def ui_refusal(host: str, token: str | None, *, acl: bool = False) -> str | None:
    """Why the view must not start on ``host``, or None when it may (``acl``: an ACL file guards it)."""
    if acl:
        return None  # every bind needs an ACL client's login; the single token is ignored
    weak = weak_token(token)
    if weak is not None:
        return weak
    if not is_loopback(host) and token is None:
        return (
            f"refusing to serve the browser view on {host} (beyond loopback) without a token: set "
            "CPERSONA_AUTH_TOKEN (people log in with it), or bind to 127.0.0.1"
        )
    return None


@dataclass
class Guard:
    """Checks every request; signs and verifies session cookies and CSRF tokens."""

    host: str
    port: int
    token: str | None
    secret: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    #: The ACL file's clients; when set, ``token`` is unused and every session needs a client login.
    acl: AccessList | None = None

    @property
    def login_required(self) -> bool:
        """Pages need a login (a token or an ACL file is configured)."""
        return self.token is not None or self.acl is not None

    # -- hosts and origins -----------------------------------------------------------------
    def allowed_hosts(self) -> set[str]:
        """Host header values accepted: the bind address and loopback names, with the port."""
        return {f"{n}:{self.port}".lower() for n in server_names(self.host)}

    def host_ok(self, host_header: str) -> bool:
        """The Host header names this server."""
        return host_header.strip().lower() in self.allowed_hosts()

    def origin_ok(self, origin: str) -> bool:
        """An Origin header names this server (http only: the view serves no TLS)."""
        parts = urlsplit(origin.strip())
        return parts.scheme == "http" and parts.netloc.lower() in self.allowed_hosts() and not parts.path

    # -- sessions --------------------------------------------------------------------------
    def _signer(self) -> Signer:
        # Its salt keeps a session signature from ever equalling a CSRF token (an HMAC of "csrf:" + sid).
        return Signer(self.secret, salt="cpersona-ui session", sep=".", digest_method=hashlib.sha256)

    def new_cookie(self, authenticated: bool, client: str | None = None) -> tuple[str, str]:
        """A fresh session: (sid, cookie value); ``client`` names the ACL client that logged in."""
        sid = secrets.token_urlsafe(24)
        who = f"@{client}" if client is not None else ("1" if authenticated else "0")
        return sid, self._signer().sign(f"{sid}.{who}").decode()

    def read_session(self, value: str) -> tuple[str, bool, str | None] | None:
        """(sid, authenticated, ACL client name) from a cookie this process signed, else None."""
        try:
            body = self._signer().unsign(value).decode()
        except (BadSignature, UnicodeError):
            return None
        sid, _, who = body.partition(".")
        valid_who = who in ("0", "1") or (who.startswith("@") and len(who) > 1)
        if not sid or not valid_who:
            return None
        client = who[1:] if who.startswith("@") else None
        return sid, who != "0", client

    def read_cookie(self, value: str) -> tuple[str, bool] | None:
        """(sid, authenticated) from a cookie this process signed, else None."""
        session = self.read_session(value)
        return None if session is None else session[:2]

    def client_named(self, name: str | None) -> Client | None:
        """The ACL client ``name`` (None without an ACL file or when the file has no such client)."""
        if self.acl is None or name is None:
            return None
        return next((c for c in self.acl.clients if c.name == name), None)

    def login(self, supplied: str) -> tuple[bool, Client | None]:
        """Check a login token: (accepted, the ACL client it belongs to when an ACL file is set)."""
        if self.acl is not None:
            client = self.acl.authenticate(supplied)  # constant-time hash compare, every client
            return client is not None, client
        return self.token_ok(supplied), None

    def csrf_token(self, sid: str) -> str:
        """The CSRF token of one session."""
        return hmac.new(self.secret, ("csrf:" + sid).encode(), hashlib.sha256).hexdigest()

    def csrf_ok(self, sid: str, supplied: str) -> bool:
        """Constant-time check of a submitted CSRF token."""
        return bool(supplied) and hmac.compare_digest(supplied.encode(), self.csrf_token(sid).encode())

    def token_ok(self, supplied: str) -> bool:
        """Constant-time check of the auth token (False when no token is configured)."""
        return self.token is not None and tokens_match(supplied, self.token)

    @staticmethod
    def cookie_header(value: str, *, clear: bool = False) -> bytes:
        """Set-Cookie for the session (HttpOnly, SameSite=Strict, whole site)."""
        age = "; Max-Age=0" if clear else ""
        return f"{COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict{age}".encode()


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or ()}


def _cookie(headers: dict[str, str]) -> str:
    for part in headers.get("cookie", "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE:
            return value
    return ""


class GuardMiddleware:
    """ASGI middleware applying ``Guard`` to every HTTP request.

    On success the session id, whether the request is authenticated and its CSRF token
    are put in ``scope['state']`` (``request.state.sid`` / ``.csrf`` in handlers); a
    request without a valid cookie gets a fresh unauthenticated session cookie.
    """

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        g = self.guard
        if not g.host_ok(headers.get("host", "")):
            await send_refusal(send, 403, "forbidden: unexpected Host header")
            return
        origin = headers.get("origin")
        if origin is not None and not g.origin_ok(origin):
            await send_refusal(send, 403, "forbidden: cross-origin request")
            return
        if headers.get("sec-fetch-site") == "cross-site":
            await send_refusal(send, 403, "forbidden: cross-site request")
            return
        session = g.read_session(_cookie(headers))
        set_cookie: bytes | None = None
        if session is None:
            sid, value = g.new_cookie(False)
            session = (sid, False, None)
            set_cookie = g.cookie_header(value)
        sid, authenticated, client_name = session
        client = g.client_named(client_name)
        if g.acl is not None:
            authenticated = client is not None  # a token-login cookie means nothing under an ACL
        bearer = bearer_token(scope)
        if bearer is not None:
            accepted, bearer_client = g.login(bearer)
            if accepted:
                authenticated, client = True, bearer_client or client
        if not g.login_required:
            authenticated = True  # loopback without a token: the bind address is the boundary
        state = scope.setdefault("state", {})
        state.update(sid=sid, authenticated=authenticated, csrf=g.csrf_token(sid), guard=g, client=client)
        if not authenticated and scope.get("path") not in PUBLIC_PATHS:
            if scope.get("method") == "GET":
                await _redirect(send, "/login", set_cookie)
            else:
                await send_refusal(
                    send,
                    401,
                    "unauthorized: log in or send 'Authorization: Bearer <token>'",
                    [] if set_cookie is None else [(b"set-cookie", set_cookie)],
                )
            return

        async def send_with_cookie(message: Message) -> None:
            if set_cookie is not None and message.get("type") == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"set-cookie", set_cookie)]
            await send(message)

        await self.app(scope, receive, send_with_cookie)


async def _redirect(send: Send, location: str, cookie: bytes | None) -> None:
    headers = [(b"location", location.encode())]
    if cookie is not None:
        headers.append((b"set-cookie", cookie))
    await send_response(send, 303, b"", headers)
