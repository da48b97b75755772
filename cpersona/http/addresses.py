"""Which addresses keep a server on this machine, and which Host names a server answers to.

Plain ``ipaddress`` code (no HTTP library): the embedding client imports it to keep loopback
endpoints off any proxy.
"""

from __future__ import annotations

import ipaddress

#: The names of this machine as they appear in Host / Origin headers (IPv6 bracketed).
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
#: Bind addresses meaning "every interface": they name no host a client would send.
ANY_ADDRESS = ("0.0.0.0", "::", "")


def is_loopback(host: str | None) -> bool:
    """True for 127.0.0.0/8, ::1 (bracketed or not) and 'localhost'; False for anything else or None."""
    if not host:
        return False
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_form(host: str) -> str:
    """``host`` as a Host header writes it: an IPv6 literal in brackets."""
    bare = host.strip().strip("[]")
    return f"[{bare}]" if ":" in bare else bare


def server_names(bound: str) -> list[str]:
    """The host names (no port) requests to a server bound on ``bound`` may carry: loopback and the bound host."""
    names = list(LOOPBACK_NAMES)
    bare = bound.strip().strip("[]")
    if bare not in ANY_ADDRESS and host_form(bare) not in names:
        names.append(host_form(bare))
    return names
