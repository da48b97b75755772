"""One loaded model per machine and user: the ``onnx`` backend shared between processes.

Each ``cpersona serve`` over stdio (one per editor window) would otherwise load
its own copy of the model. Here the processes that would load the same model
(same files, cut, token cap and query kernel setting; see ``rendezvous``) elect one *host* with an
``flock``: the host loads the ONNX model in-process, embeds its own requests
directly and serves the others (*clients*) the /embed contract on a Unix
socket. Clients never import onnxruntime or tokenizers; that is the saving.

When the host goes away (exit, crash, SIGKILL) the kernel releases its lock and
a client's next request fails to connect; that client tries the lock and, if
it wins, loads the model and becomes the host before answering (the request
waits for the load). A client that loses the race polls for the new host's
socket for a bounded time, then raises ``endpoint_unreachable`` so the
embedding service degrades to keyword-only and retries loading later.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from cpersona.embed.runtime.base import (
    EmbeddingBackend,
    EmbeddingFault,
    FaultKind,
    l2_normalise,
    this_process_asker,
)
from cpersona.embed.runtime.embed_server import MAX_TEXTS, UnixEmbedServer, embed_for_role
from cpersona.embed.runtime.rendezvous import (
    HOST_GONE_ERRORS,
    HostLock,
    Rendezvous,
    RendezvousError,
    UnixHTTPConnection,
)
from cpersona.embed.runtime.selftest import load_check

if TYPE_CHECKING:
    from cpersona.embed.runtime.onnx_backend import OnnxBackend

log = logging.getLogger(__name__)

HOST = "host"
CLIENT = "client"
# How long the background load waits for another process that holds the lock to finish loading
# (a 1 GB model on a laptop takes seconds; a stuck host must not block the loader forever).
LOAD_WAIT_SECONDS = 120.0
# How long a request waits for a new host after the old one vanished (the request is blocked meanwhile).
TAKEOVER_WAIT_SECONDS = 10.0
_POLL_SECONDS = 0.05


class _HostGone(Exception):
    """The socket has no live host behind it (missing, refused, reset mid-answer)."""


class SharedModelBackend(EmbeddingBackend):
    """An ``OnnxBackend`` loaded by one elected process and used over a Unix socket by the others."""

    mode = "onnx"

    def __init__(
        self,
        inner: OnnxBackend,
        rendezvous: Rendezvous,
        *,
        timeout: float = 30.0,
        load_wait: float = LOAD_WAIT_SECONDS,
        takeover_wait: float | None = None,
        asker: str | None = None,
    ) -> None:
        """Wrap ``inner`` (not loaded unless this process is elected) and meet others at ``rendezvous``;
        ``asker`` names this process's queries to the host (default: its pid)."""
        self.inner = inner
        self.rendezvous = rendezvous
        self.timeout = float(timeout)
        self.load_wait = float(load_wait)
        self.takeover_wait = (
            min(self.timeout, TAKEOVER_WAIT_SECONDS) if takeover_wait is None else takeover_wait
        )
        self._role = ""
        self._lock = HostLock(rendezvous.lock_path)
        self._state_lock = threading.RLock()
        self._closing = threading.Event()
        self._server: UnixEmbedServer | None = None
        self._server_thread: threading.Thread | None = None
        self.host_pid: int | None = None
        self.takeovers = 0
        # Named, so the host keeps this process's recent query vectors apart from other processes'.
        self._asker = asker or this_process_asker()

    # -- identity (known without loading: the inner backend computes it from its manifest) ----------
    @property
    def manifest(self) -> Any:
        """The model manifest (the self-test reads its prompts and cuts)."""
        return self.inner.manifest

    @property
    def window_tokens(self) -> int | None:
        """The inner model's token cap (the host runs the same model: the sharing key includes the cap)."""
        return int(self.inner.max_tokens)

    @property
    def model_id(self) -> str:
        """The inner model's id; a host reporting another id is refused."""
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        """The inner model's vector length (after any Matryoshka cut)."""
        return self.inner.dimension

    @property
    def role(self) -> str:
        """``host`` (holds the model), ``client`` (uses a host's) or ``""`` (not loaded)."""
        return self._role

    @property
    def socket_path(self) -> str:
        """The Unix socket the host serves."""
        return str(self.rendezvous.socket_path)

    def sharing_status(self) -> dict[str, Any]:
        """Role, host pid and socket: what ``embedding_status`` shows about sharing."""
        return {
            "role": self._role or "none",
            "host_pid": self.host_pid,
            "socket": self.socket_path,
            "takeovers": self.takeovers,
        }

    def choose_query_kernel(self) -> Any:
        """The inner backend's query-kernel check, when this process holds the model (else None)."""
        return self.inner.choose_query_kernel() if self._role == HOST else None

    def query_kernel_status(self) -> dict[str, Any] | None:
        """The recall queries' kernel when this process holds the model; None for a client (the host
        embeds its queries, and its own ``stats`` says with which kernel)."""
        return self.inner.query_kernel_status() if self._role == HOST else None

    # -- election ------------------------------------------------------------------------------
    def load(self) -> None:
        """Become the host (load the model) or a client of the current host; raise EmbeddingFault if neither."""
        self._closing.clear()
        with self._state_lock:
            if self._role == HOST:
                return
            if self._role == CLIENT:
                try:
                    self._check_host()
                    return
                except _HostGone:
                    self._role = ""
            self._elect(self.load_wait)

    def _elect(self, wait: float) -> None:
        # Caller holds _state_lock. Alternate between the lock and the socket until one answers:
        # the lock wins when the host is gone, the socket when a (new) host serves.
        try:
            # Again at every election: a session manager may have removed the runtime directory.
            self.rendezvous.check()
        except RendezvousError as exc:
            raise EmbeddingFault(
                FaultKind.MISCONFIGURED,
                "the model-sharing directory cannot be used",
                str(exc),
                "fix the directory's owner and mode (0700) or set CPERSONA_MODEL_SHARING=off",
            ) from exc
        deadline = time.monotonic() + wait
        last: BaseException | None = None
        while True:
            if self._lock.acquire():
                self._become_host()
                return
            try:
                self._check_host()
                self._role = CLIENT
                log.info(
                    "using the embedding model %s held by process %s at %s",
                    self.model_id,
                    self.host_pid,
                    self.socket_path,
                )
                return
            except _HostGone as gone:
                last = gone.__cause__ or gone
            if time.monotonic() >= deadline or self._closing.is_set():
                break
            time.sleep(_POLL_SECONDS)
        self._role = ""
        raise EmbeddingFault(
            FaultKind.ENDPOINT_UNREACHABLE,
            "the shared embedding model is unreachable",
            f"another process holds {self.rendezvous.lock_path} but nothing answers on {self.socket_path} "
            f"after {wait:.0f} s ({type(last).__name__ if last else 'no answer'}: {last})",
            "the process that held the model is still loading it or hung; this server retries and takes the "
            "model over when that process exits (restart the hung cpersona process, or set "
            "CPERSONA_MODEL_SHARING=off to load a private copy)",
        )

    def _become_host(self) -> None:
        # Caller holds _state_lock and the flock.
        try:
            self.inner.load()
            # Clients trust the host's vectors: a model failing the self-test must never be served.
            fault = load_check(self.inner)
            if fault is not None:
                raise fault
            path = self.socket_path
            # Only the lock holder touches the socket path, so a file here is a dead host's leftover.
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            server = UnixEmbedServer(path, self.inner)
        except BaseException:
            self.inner.close()
            self._lock.release()
            raise
        thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name="cpersona-model-host",
            daemon=True,
        )
        thread.start()
        # A program that ends without closing its Memory must still stop serving first (see close).
        atexit.register(self.close)
        self._server, self._server_thread = server, thread
        self._role, self.host_pid = HOST, os.getpid()
        log.info("holding the embedding model %s for other cpersona processes at %s", self.model_id, path)

    def _check_host(self) -> None:
        payload = self._request("GET", "/health", None)
        model, dimension = payload.get("model"), payload.get("dimension")
        if model != self.model_id or dimension != self.dimension:
            raise EmbeddingFault(
                FaultKind.MISCONFIGURED,
                "the shared model host serves a different model",
                f"{self.socket_path} serves {model!r} ({dimension}-d); this server expects "
                f"{self.model_id!r} ({self.dimension}-d)",
                "stop the other cpersona process (its version or settings differ) or set "
                "CPERSONA_MODEL_SHARING=off",
            )
        if "query" not in (payload.get("roles") or ()):
            raise EmbeddingFault(
                FaultKind.MISCONFIGURED,
                "the shared model host cannot embed queries",
                f"{self.socket_path}: /health lists roles {payload.get('roles')!r}",
                "restart the older cpersona process that holds the model",
            )
        pid = payload.get("pid")
        self.host_pid = int(pid) if isinstance(pid, int) else None

    # -- transport -----------------------------------------------------------------------------
    def _request(self, method: str, path: str, payload: dict[str, Any] | None) -> dict[str, Any]:
        conn = UnixHTTPConnection(self.socket_path, self.timeout)
        body = json.dumps(payload).encode("utf-8") if payload is not None else None
        headers = {"Content-Type": "application/json"} if body is not None else {}
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            status, raw = response.status, response.read()
        except HOST_GONE_ERRORS as exc:
            raise _HostGone(str(exc)) from exc
        except TimeoutError as exc:
            raise EmbeddingFault(
                FaultKind.INFERENCE_ERROR,
                "the shared model host did not answer in time",
                f"{method} {path} on {self.socket_path}: no answer within {self.timeout:g} s",
                "the process holding the model is overloaded; raise CPERSONA_EMBEDDING_TIMEOUT",
            ) from exc
        except OSError as exc:
            raise EmbeddingFault(
                FaultKind.ENDPOINT_UNREACHABLE,
                "the shared model host is unreachable",
                f"{method} {path} on {self.socket_path}: {type(exc).__name__}: {exc}",
                "this server takes the model over on its next retry; restart it if that persists",
            ) from exc
        finally:
            conn.close()
        try:
            answer = json.loads(raw)
        except ValueError:
            answer = None
        if status != 200 or not isinstance(answer, dict):
            raise EmbeddingFault(
                FaultKind.INFERENCE_ERROR,
                f"the shared model host answered HTTP {status}",
                f"{method} {path} on {self.socket_path}: {raw[:300]!r}",
                "see the log of the process holding the model",
            )
        return answer

    def _remote(self, texts: list[str], role: str) -> np.ndarray:
        answer = self._request("POST", "/embed", {"texts": texts, "role": role, "asker": self._asker})
        try:
            vectors = np.asarray(answer["embeddings"], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbeddingFault(
                FaultKind.INFERENCE_ERROR,
                "the shared model host sent an unusable answer",
                f"{self.socket_path}: {type(exc).__name__}: {exc}",
                "restart the process holding the model",
            ) from exc
        if vectors.ndim != 2 or vectors.shape != (len(texts), self.dimension):
            raise EmbeddingFault(
                FaultKind.DIMENSION_MISMATCH,
                "the shared model host returned vectors of the wrong shape",
                f"{self.socket_path}: sent {len(texts)} texts, got {vectors.shape}, expected dimension "
                f"{self.dimension}",
                "restart the process holding the model",
            )
        return l2_normalise(vectors)

    def _embed(self, texts: list[str], role: str) -> np.ndarray:
        if self._role == "":
            self.load()
        if self._role == HOST:
            return embed_for_role(self.inner, texts, role, self._asker)
        parts = []
        for start in range(0, len(texts), MAX_TEXTS):
            chunk = texts[start : start + MAX_TEXTS]
            try:
                parts.append(self._remote(chunk, role))
            except _HostGone:
                self._take_over()
                # Once more, in-process or through the new host; a second loss is a plain fault.
                if self._role == HOST:
                    parts.append(embed_for_role(self.inner, chunk, role, self._asker))
                    continue
                try:
                    parts.append(self._remote(chunk, role))
                except _HostGone as gone:
                    raise self._unreachable(gone) from gone
        return np.vstack(parts)

    def _take_over(self) -> None:
        with self._state_lock:
            if self._role == HOST:
                return  # another thread of this process already took over
            self._role = ""
            self._elect(self.takeover_wait)
            if self._role == HOST:
                self.takeovers += 1
                log.warning(
                    "the process holding the shared embedding model is gone; this process holds it now"
                )

    def _unreachable(self, gone: _HostGone) -> EmbeddingFault:
        return EmbeddingFault(
            FaultKind.ENDPOINT_UNREACHABLE,
            "the shared embedding model host went away",
            f"{self.socket_path}: {gone}",
            "another cpersona process takes the model over (this one retries loading); restart it if that "
            "persists",
        )

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed stored content, in-process on the host or through it."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return self._embed(texts, "document")

    def embed_query(self, text: str) -> np.ndarray:
        """Embed a recall query (the host applies the model's query prompt)."""
        return self._embed([text], "query")[0]

    # -- shutdown ------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop serving, remove the socket, drop the model and release the lock (host); forget the host."""
        self._closing.set()
        with self._state_lock:
            server, thread = self._server, self._server_thread
            self._server = self._server_thread = None
            if server is not None:
                server.shutdown()
                server.server_close()
                # Unlink before releasing the lock: afterwards the path may belong to a new host.
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.socket_path)
                # Requests accepted before the shutdown finish on the model first: a process that
                # exits while a handler thread is inside ONNX Runtime aborts.
                if not server.drain(self.timeout):
                    log.warning("closing the shared model while another process's request is still running")
            if thread is not None:
                thread.join(timeout=5)
            if self._role == HOST:
                atexit.unregister(self.close)
                self.inner.close()
            self._lock.release()
            self._role = ""
            self.host_pid = None
