"""The running server's hook socket: a hook asks the warm process instead of loading anything itself.

``cpersona serve`` (started by the host) holds the database open and the model loaded; a hook
command is a fresh process on every prompt, and loading NumPy, the storage engine and a model
per prompt would cost seconds. So the server listens on a Unix socket in the per-user runtime
directory (0700, the model-sharing directory: ``rendezvous.ensure_private_dir``) and the hook
sends one JSON line and reads one back. Several servers on one database (one per editor
window) elect one listener with an ``flock``, as model sharing does; the others retry now and
then and take over when the listener exits.

The socket is named by the database (path or URL) and the user, so a hook reaches the server of
its own database only. The client half (``socket_path``, ``ask``) is stdlib only: every hook
call imports it.
"""

from __future__ import annotations

import json
import os
import socket

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hook start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

#: Largest request or answer line (a request carries the user's prompt).
MAX_LINE_BYTES = 2_000_000


def socket_path(runtime_dir: Path, database: str) -> Path:
    """The hook socket for ``database`` (an absolute path or a URL) and this user."""
    import hashlib

    uid = os.getuid() if hasattr(os, "getuid") else 0
    key = hashlib.sha256(f"hooks\0{database}\0{uid}".encode()).hexdigest()[:16]
    return runtime_dir / f"{key}.hooks.sock"


class Unreachable(OSError):
    """No server can be reached at the socket (none listens, a stale file, a path too long to use)."""


def ask(path: str | Path, request: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Send ``request`` to the server at ``path`` and return its answer.

    Raises Unreachable when no server can be reached, TimeoutError (``socket.timeout``) past
    ``timeout`` seconds, ValueError for an answer that is not a JSON object.
    """
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.connect(str(path))
        except TimeoutError:
            raise
        except OSError as exc:
            raise Unreachable(str(exc)) from exc
        sock.sendall(json.dumps(request, ensure_ascii=False).encode("utf-8") + b"\n")
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        size = 0
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_LINE_BYTES:
                raise ValueError("the server's answer is over the size limit")
    answer = json.loads(b"".join(chunks).decode("utf-8"))
    if not isinstance(answer, dict):
        raise ValueError("the server's answer is not a JSON object")
    return answer


class HookEndpoint:
    """The server side: elect a listener per database, then answer each connection on a thread."""

    def __init__(
        self,
        path: Path,
        answerer: Callable[[dict[str, Any]], tuple[dict[str, Any], Callable[[], None] | None]],
        *,
        retry_seconds: float = 5.0,
    ) -> None:
        """Listen at ``path`` (once elected) and answer with ``answerer``: request -> (answer, work
        to do after the answer was sent, or None)."""
        self.path = path
        self.answerer = answerer
        self.retry_seconds = retry_seconds
        self._server: Any = None
        self._lock: Any = None
        self._stop = False

    @property
    def listening(self) -> bool:
        """True while this process holds the socket."""
        return self._server is not None

    def start(self) -> HookEndpoint:
        """Try to become the listener now; otherwise keep trying in a daemon thread."""
        import threading

        from cpersona.embed.runtime.rendezvous import HostLock, ensure_private_dir

        ensure_private_dir(self.path.parent)
        self._lock = HostLock(self.path.with_suffix(".lock"))
        if not self._try_listen():
            threading.Thread(target=self._retry, name="cpersona-hook-endpoint", daemon=True).start()
        return self

    def _retry(self) -> None:
        import time

        while not self._stop and not self._try_listen():
            time.sleep(self.retry_seconds)

    def _try_listen(self) -> bool:
        import socketserver
        import threading

        if not self._lock.acquire():
            return False
        # The lock holder owns the name: a socket file left by a killed listener is stale.
        self.path.unlink(missing_ok=True)
        endpoint = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                endpoint._handle(self.rfile, self.wfile)

        server = socketserver.ThreadingUnixStreamServer(str(self.path), Handler)
        server.daemon_threads = True
        self._server = server
        threading.Thread(target=server.serve_forever, name="cpersona-hook-socket", daemon=True).start()
        return True

    def _handle(self, rfile: Any, wfile: Any) -> None:
        import logging

        log = logging.getLogger(__name__)
        after = None
        try:
            line = rfile.readline(MAX_LINE_BYTES + 1)
            request = json.loads(line.decode("utf-8"))
            if not isinstance(request, dict):
                raise ValueError("the request is not a JSON object")
            answer, after = self.answerer(request)
        except Exception as exc:  # a hook request must never take the server down
            log.warning("hook request failed: %s", exc)
            answer = {"context": None, "note": f"the server could not answer: {exc}"}
        wfile.write(json.dumps(answer, ensure_ascii=False).encode("utf-8") + b"\n")
        wfile.flush()
        if after is not None:
            try:
                after()
            except Exception as exc:
                log.warning("hook follow-up failed: %s", exc)

    def close(self) -> None:
        """Stop listening and give the socket up (another server may take over)."""
        self._stop = True
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
            self.path.unlink(missing_ok=True)
        if self._lock is not None:
            self._lock.release()
