"""``cpersona embed-server``: serve the in-process model over the /embed contract.

``POST /embed {"texts": [...]}`` (1..32 strings) answers
``{"embeddings": [[...]], "model": ..., "dimension": ...}``; ``GET /health``
answers ``{"status": "ok", ...}``. Bad requests get HTTP 400 with
``{"error": ...}``. Binds to loopback unless told otherwise: there is no
authentication, so exposing it is the operator's explicit choice.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cpersona.embed.base import EmbeddingBackend, EmbeddingFault

log = logging.getLogger(__name__)

DEFAULT_PORT = 8403
MAX_TEXTS = 32
# Generous for 32 long memories, small enough that one request cannot exhaust memory.
MAX_BODY_BYTES = 8 * 1024 * 1024


class _Handler(BaseHTTPRequestHandler):
    server: EmbedHTTPServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        # Route access logs through logging instead of raw stderr lines.
        log.debug("%s " + format, self.address_string(), *args)

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        if self.path.split("?")[0] in ("/health", "/"):
            backend = self.server.backend
            self._send(200, {"status": "ok", "model": backend.model_id, "dimension": backend.dimension})
        else:
            self._send(404, {"error": f"no route {self.path}; use POST /embed or GET /health"})

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        if self.path.split("?")[0] != "/embed":
            self._send(404, {"error": f"no route {self.path}; use POST /embed"})
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY_BYTES:
            self.close_connection = True
            self._send(400, {"error": f"Content-Length must be 0..{MAX_BODY_BYTES}"})
            return
        try:
            payload = json.loads(self.rfile.read(length) or b"null")
        except (ValueError, UnicodeDecodeError):
            self._send(400, {"error": "body is not valid JSON"})
            return
        texts = payload.get("texts") if isinstance(payload, dict) else None
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            self._send(400, {"error": 'expected {"texts": [string, ...]} with at least one text'})
            return
        if len(texts) > MAX_TEXTS:
            self._send(400, {"error": f"at most {MAX_TEXTS} texts per request, got {len(texts)}"})
            return
        backend = self.server.backend
        try:
            vectors = backend.embed_documents(texts)
        except EmbeddingFault as fault:
            self._send(503, {"error": str(fault), "kind": fault.kind})
            return
        except Exception as exc:  # keep serving other requests
            log.exception("embedding failed")
            self._send(500, {"error": f"{type(exc).__name__}: {exc}"})
            return
        self._send(
            200, {"embeddings": vectors.tolist(), "model": backend.model_id, "dimension": backend.dimension}
        )


class EmbedHTTPServer(ThreadingHTTPServer):
    """A threading HTTP server holding the backend it serves."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], backend: EmbeddingBackend) -> None:
        """Bind to ``address`` and serve ``backend`` (already loaded, or loaded on first use)."""
        self.backend = backend
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)

    @property
    def url(self) -> str:
        """Base URL of the bound server, e.g. ``http://127.0.0.1:8403``."""
        host, port = self.server_address[:2]
        text = host.decode() if isinstance(host, bytes) else str(host)
        shown = f"[{text}]" if ":" in text else text
        return f"http://{shown}:{port}"


def make_embed_server(
    backend: EmbeddingBackend, host: str = "127.0.0.1", port: int = DEFAULT_PORT
) -> EmbedHTTPServer:
    """Create (bind) the server without serving yet; port 0 picks a free port."""
    return EmbedHTTPServer((host, port), backend)


def start_embed_server(
    backend: EmbeddingBackend, host: str = "127.0.0.1", port: int = 0
) -> tuple[EmbedHTTPServer, threading.Thread]:
    """Serve in a daemon thread (tests, embedding in other programs); stop with ``server.shutdown()``."""
    server = make_embed_server(backend, host, port)
    thread = threading.Thread(target=server.serve_forever, name="cpersona-embed-server", daemon=True)
    thread.start()
    return server, thread


def serve_embed(backend: EmbeddingBackend, host: str = "127.0.0.1", port: int = DEFAULT_PORT) -> None:
    """Serve ``backend`` over /embed until interrupted (blocking)."""
    server = make_embed_server(backend, host, port)
    try:
        server.serve_forever()
    finally:
        server.server_close()
