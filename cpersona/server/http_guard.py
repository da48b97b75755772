"""The MCP transport's front-door rules (docs/decisions.md#trust-boundary-issue-9): Host/Origin allow-lists and the bind warning.

Kept apart from the transport and from authorisation so each rule is small and testable; token
strength and bearer parsing are shared with the browser view (``cpersona.http.tokens``). The
DNS-rebinding guard (Host and Origin checked on every request) stays on for every bind address:
the SDK only enables it for loopback binds, so we always hand it an explicit allow-list.
"""

from __future__ import annotations

from mcp.server.transport_security import TransportSecuritySettings

from cpersona.config import Settings
from cpersona.http.addresses import is_loopback, server_names


def transport_security(settings: Settings) -> TransportSecuritySettings:
    """Host and Origin allow-lists: loopback names, the bound host, plus the operator's additions."""
    names = server_names(settings.http_host)
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
