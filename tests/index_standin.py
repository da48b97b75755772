"""A real HTTP server on 127.0.0.1 standing in for the package index (PyPI JSON API and simple index).

It counts and records every request it receives, so tests can prove what was
(or was not) asked of the index. Nothing here replaces cpersona code.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Seen:
    """One request as the stand-in received it."""

    method: str
    path: str
    headers: dict[str, str]


@dataclass
class IndexStandIn:
    """Serves ``releases`` for ``/<dist>/json``; every other path is a 404 (so pip finds nothing)."""

    releases: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    status: int = 200
    body: bytes | None = None  # overrides the JSON answer (malformed-answer tests)
    seen: list[Seen] = field(default_factory=list)
    url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def json_requests(self) -> list[Seen]:
        with self.lock:
            return [s for s in self.seen if s.path.endswith("/json")]

    def simple_requests(self) -> list[Seen]:
        with self.lock:
            return [s for s in self.seen if s.path.startswith("/simple")]


def release(*, yanked: bool = False) -> list[dict[str, Any]]:
    """The file list of one release as PyPI's JSON API shows it (one wheel)."""
    return [
        {
            "filename": "cpersona_embedded-x-py3-none-any.whl",
            "yanked": yanked,
            "yanked_reason": "broken" if yanked else None,
        }
    ]


@contextmanager
def index_standin(releases: dict[str, list[dict[str, Any]]] | None = None) -> Iterator[IndexStandIn]:
    """Run an IndexStandIn on a free loopback port for the duration of the block."""
    state = IndexStandIn(releases=dict(releases or {}))

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            with state.lock:
                state.seen.append(Seen("GET", self.path, {k.lower(): v for k, v in self.headers.items()}))
            if self.path.endswith("/json"):
                body = (
                    state.body
                    if state.body is not None
                    else json.dumps({"info": {"version": "ignored"}, "releases": state.releases}).encode()
                )
                self.send_response(state.status)
                self.send_header("Content-Type", "application/json")
            else:
                body = b"not here"
                self.send_response(404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def closed_port_url() -> str:
    """A loopback URL on a port nothing listens on (offline stand-in: connection refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/pypi"
