"""Binding the listening sockets of ``serve --transport streamable-http`` and ``cpersona ui`` first.

uvicorn binds inside its own start-up, after we have announced the URL; on a taken port
the user was shown a URL that answered with somebody else's server, then uvicorn exited
with 3, the code ``checkup`` uses for "degraded" (issue 17). So the sockets are bound
here before anything is announced or opened, and a refusal is one clear line with its
own exit code, ``EXIT_BIND``.
"""

from __future__ import annotations

import errno
import socket

#: Exit code when the address cannot be bound (port in use, address not on this machine,
#: port not permitted). Distinct from 1 (failed), 2 (configuration), 3 (checkup: degraded).
EXIT_BIND = 4


class BindFailed(Exception):
    """The host/port cannot be listened on; the message says why and what to do."""


def bind_listeners(host: str, port: int, *, setting: str) -> list[socket.socket]:
    """Listening sockets for every address ``host`` resolves to; raises BindFailed.

    ``setting`` names the variable choosing the port (for the message), e.g. ``CPERSONA_HTTP_PORT``.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise BindFailed(f"cannot listen on {host}:{port}: the host name does not resolve ({exc})") from exc
    sockets: list[socket.socket] = []
    seen: set[tuple[int, object]] = set()
    try:
        for family, kind, proto, _name, address in infos:
            if (family, address[0]) in seen:
                continue
            seen.add((family, address[0]))
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(
                socket.SOL_SOCKET, socket.SO_REUSEADDR, 1
            )  # TIME_WAIT only, never a live listener
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            sock.listen(2048)
            sock.set_inheritable(True)
    except OSError as exc:
        for sock in sockets:
            sock.close()
        raise BindFailed(_why(exc, host, port, setting)) from exc
    return sockets


def _why(exc: OSError, host: str, port: int, setting: str) -> str:
    if exc.errno == errno.EADDRINUSE:
        return (
            f"port {port} on {host} is already in use (another server, or another cpersona, listens "
            f"there); choose a free one with --port or {setting}"
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"cannot listen on {host}: the address is not one of this machine's; check --host"
    if exc.errno == errno.EACCES:
        return f"port {port} on {host} is not permitted for this user (ports below 1024 need privileges)"
    return f"cannot listen on {host}:{port}: {exc.strerror or exc}"
