"""HTTP front-door rules (SPEC §9): token strength, bearer parsing, Host/Origin allow-lists, bind warning.

Kept apart from the transport and from authorisation so each rule is small and testable. The
DNS-rebinding guard (Host and Origin checked on every request) stays on for every bind address:
the SDK only enables it for loopback binds, so we always hand it an explicit allow-list.
"""

from __future__ import annotations

import ipaddress
from collections.abc import MutableMapping
from typing import Any

from mcp.server.transport_security import TransportSecuritySettings

from cpersona.config import Settings
from cpersona.limits import MIN_TOKEN_CHARS

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
_ANY_ADDRESS = ("0.0.0.0", "::", "")


def token_refusal(settings: Settings) -> str | None:
    """Why the configured bearer token is too weak to start HTTP with, or None."""
    token = settings.auth_token
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        return (
            f"CPERSONA_AUTH_TOKEN is {len(token)} characters; at least {MIN_TOKEN_CHARS} are required "
            '(generate one with `openssl rand -hex 24` or `python -c "import secrets; print(secrets.token_hex(24))"`)'
        )
    return None


def bearer_token(scope: MutableMapping[str, Any]) -> bytes | None:
    """The token of an ``Authorization: Bearer <token>`` header; the scheme is case-insensitive (RFC 9110)."""
    for key, value in scope.get("headers") or ():
        if key.lower() == b"authorization":
            scheme, _, token = bytes(value).strip().partition(b" ")
            token = token.strip()
            return token if scheme.lower() == b"bearer" and token else None
    return None


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the server reachable from this machine only."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _host_form(host: str) -> str:
    # An IPv6 literal appears bracketed in Host and Origin headers.
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def transport_security(settings: Settings) -> TransportSecuritySettings:
    """Host and Origin allow-lists: loopback names, the bound host, plus the operator's additions."""
    names = list(LOOPBACK_NAMES)
    bound = settings.http_host.strip()
    if bound not in _ANY_ADDRESS:
        names.append(_host_form(bound))
    hosts = [form for name in names for form in (name, f"{name}:*")]
    origins = [
        f"{scheme}://{name}{port}" for name in names for scheme in ("http", "https") for port in ("", ":*")
    ]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*dict.fromkeys([*hosts, *settings.http_allowed_hosts])],
        allowed_origins=[*dict.fromkeys([*origins, *settings.http_allowed_origins])],
    )


def bind_warning(settings: Settings) -> str | None:
    """A start-up warning when HTTP is reachable beyond this machine, or None on loopback."""
    if is_loopback(settings.http_host):
        return None
    extra = ", ".join(settings.http_allowed_hosts) or "none"
    return (
        f"HTTP is bound to {settings.http_host}, reachable beyond this machine. Anyone who can reach it and "
        "holds the token can read and change every agent's memories; prefer 127.0.0.1 behind a tunnel or "
        "reverse proxy. Host/Origin checks stay on: requests must name a loopback host, the bound address "
        f"or one of CPERSONA_HTTP_ALLOWED_HOSTS (now: {extra}); browsers also need "
        "CPERSONA_HTTP_ALLOWED_ORIGINS."
    )
