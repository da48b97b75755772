"""The /embed contract served over TCP (``cpersona embed-server``) or a Unix socket (model sharing).

``POST /embed {"texts": [...], "role": "document" | "query"}`` (1..32 strings;
``role`` optional, default ``document``: a query gets the model's query prompt;
``"asker"`` optional, a string naming the process that asks: recent query vectors
are kept per asker) answers ``{"embeddings": [[...]], "model": ..., "dimension": ...}``;
``GET /health`` answers ``{"status": "ok", "model", "dimension", "roles", "pid"}``.
Bad requests get HTTP 400 with ``{"error": ...}``. The TCP server binds to
loopback unless told otherwise: there is no authentication, so exposing it is
the operator's explicit choice. The Unix-socket server lives in a 0700
per-user directory (see ``shared_backend``).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import socketserver
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Protocol

from cpersona.embed.runtime.base import EmbeddingBackend, EmbeddingFault

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

DEFAULT_PORT = 8403
MAX_TEXTS = 32
#: The longest ``asker`` accepted (a process id, or a name a client chooses).
MAX_ASKER_CHARS = 64
# Generous for 32 long memories, small enough that one request cannot exhaust memory.
MAX_BODY_BYTES = 8 * 1024 * 1024
ROLES = ("document", "query")


class _ServesBackend(Protocol):
    backend: EmbeddingBackend


def embed_for_role(backend: EmbeddingBackend, texts: Sequence[str], role: str, asker: str = "") -> np.ndarray:
    """Vectors for ``texts`` as documents or as queries (the query prompt applied per text; recent query
    vectors kept per ``asker``: base.EmbeddingBackend.embed_query_as)."""
    if role == "query":
        import numpy as np

        return np.vstack([backend.embed_query_as(text, asker) for text in texts])
    return backend.embed_documents(list(texts))


class _Handler(BaseHTTPRequestHandler):
    server: _ServesBackend  # type: ignore[assignment]
    protocol_version = "HTTP/1.1"

    def address_string(self) -> str:
        # A Unix-socket peer has no (host, port): its client_address is an empty str or bytes.
        if isinstance(self.client_address, tuple):
            return str(self.client_address[0])
        return "unix-socket"

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
            self._send(
                200,
                {
                    "status": "ok",
                    "model": backend.model_id,
                    "dimension": backend.dimension,
                    "roles": list(ROLES),
                    "pid": os.getpid(),
                },
            )
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
        role = payload.get("role", "document")
        if role not in ROLES:
            self._send(400, {"error": f"role must be one of {', '.join(ROLES)}, got {role!r}"})
            return
        asker = payload.get("asker", "")
        if not isinstance(asker, str) or len(asker) > MAX_ASKER_CHARS:
            self._send(400, {"error": f"asker must be a string of at most {MAX_ASKER_CHARS} characters"})
            return
        backend = self.server.backend
        try:
            vectors = embed_for_role(backend, texts, role, asker)
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


#: How long closing waits for requests already being answered (a batch of 32 long texts on a slow CPU).
DRAIN_SECONDS = 30.0


class _Draining:
    """Counts the requests being answered, so a closing server can wait for them (``drain``).

    Handler threads are daemons, so a process would otherwise exit while one of them is inside
    ONNX Runtime: the runtime's threads are torn down under it and the process aborts
    ("terminate called without an active exception"), which a shared-model host did whenever it
    closed while serving another process.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._answering = 0
        self._settled = threading.Condition()
        super().__init__(*args, **kwargs)

    def process_request(self, request: Any, client_address: Any) -> None:
        # Counted here, in the serving thread, so a request accepted before shutdown() is never missed.
        with self._settled:
            self._answering += 1
        try:
            super().process_request(request, client_address)  # type: ignore[misc]
        except BaseException:
            self._settle()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)  # type: ignore[misc]
        finally:
            self._settle()

    def _settle(self) -> None:
        with self._settled:
            self._answering -= 1
            self._settled.notify_all()

    def drain(self, timeout: float = DRAIN_SECONDS) -> bool:
        """Wait (after ``shutdown``) until no request is being answered; False if ``timeout`` passed first."""
        with self._settled:
            return self._settled.wait_for(lambda: self._answering == 0, timeout)


class EmbedHTTPServer(_Draining, ThreadingHTTPServer):
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
        raw_host, port = self.server_address[:2]
        host = raw_host.decode() if isinstance(raw_host, bytes | bytearray) else str(raw_host)
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}"


class UnixEmbedServer(_Draining, socketserver.ThreadingUnixStreamServer):
    """The same /embed handler on a Unix stream socket (one model shared by the processes of one user)."""

    daemon_threads = True
    # Handler threads must not keep a closing host alive.
    block_on_close = False

    def __init__(self, path: str, backend: EmbeddingBackend) -> None:
        """Bind ``path`` (which must not exist) and serve ``backend``."""
        self.backend = backend
        super().__init__(path, _Handler)


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


def serve_embed(server: EmbedHTTPServer) -> None:
    """Serve a bound server (``make_embed_server``) until Ctrl-C, then close its socket.

    Binding is a separate step so the caller can report a busy port before announcing
    the URL. Ctrl-C ends serving normally rather than as an exception.
    """
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        if not server.drain():
            log.warning("stopping while a request is still being embedded (waited %.0f s)", DRAIN_SECONDS)
