"""The ``http`` backend: an external embedding server speaking the /embed contract.

Contract: ``POST {"texts": [...]}`` (at most 32 texts) answers
``{"embeddings": [[...], ...]}``, optionally with ``"model"`` and
``"dimension"``. Queries add ``"role": "query"`` so a server whose model has
a query prompt (``cpersona embed-server``) applies it, and ``"asker"`` (this
process) so a server that keeps recent query vectors keeps them per client;
documents send neither (the contract's default). Vectors are L2-normalised here whether or not the
server did.

Recent query vectors are kept (``query_cache.py``) for ``CPERSONA_EMBEDDING_CACHE_TTL`` seconds: the
server may be restarted with another model, which a reply's ``"model"`` shows only when the server
names it, so a kept vector also expires. The cache is cleared at ``load()`` and whenever a reply names
another model than the one before.

Uses the standard library's urllib: the backend needs one JSON POST with a
timeout, and mcp's HTTP client package (``httpx2`` at the time of writing) is
a transitive dependency whose name has already changed once.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from cpersona.config import DEFAULT_QUERY_CACHE_SIZE, DEFAULT_QUERY_CACHE_TTL
from cpersona.embed.runtime.base import (
    EmbeddingBackend,
    EmbeddingFault,
    FaultKind,
    l2_normalise,
    this_process_asker,
)
from cpersona.embed.runtime.query_cache import QueryCache
from cpersona.http.addresses import is_loopback

if TYPE_CHECKING:
    from cpersona.config import Settings

MAX_TEXTS_PER_REQUEST = 32
_PROBE_TEXT = "cpersona dimension probe"


def normalise_url(url: str) -> str:
    """The URL to POST to: a bare ``http://host:port`` (or ``.../``) gets ``/embed`` appended."""
    parsed = urllib.parse.urlsplit(url.strip())
    if parsed.path in ("", "/"):
        parsed = parsed._replace(path="/embed")
    return urllib.parse.urlunsplit(parsed)


class HttpBackend(EmbeddingBackend):
    """Embeds by POSTing to an /embed endpoint."""

    mode = "http"

    def __init__(
        self,
        url: str | None,
        timeout: float = 30.0,
        max_batch: int = MAX_TEXTS_PER_REQUEST,
        query_cache_size: int = DEFAULT_QUERY_CACHE_SIZE,
        query_cache_ttl: float = DEFAULT_QUERY_CACHE_TTL,
        asker: str | None = None,
    ) -> None:
        """Record the endpoint only; ``load()`` probes it. ``asker`` names this process's queries to the
        server (default: its pid), which keeps recent query vectors per asker."""
        self.url = normalise_url(url) if url else None
        self.timeout = float(timeout)
        self.max_batch = max(1, min(int(max_batch), MAX_TEXTS_PER_REQUEST))
        self._dimension = 0
        self._server_model = ""
        self._reported_model = ""  # the model named by the newest reply ("" when none was named)
        self.query_cache = QueryCache(query_cache_size, ttl=query_cache_ttl)
        # Two servers sharing one /embed server are not answered from each other's recent queries (as
        # with a shared model host): each server's recall costs what it would cost alone.
        self.asker = asker or this_process_asker()
        self.requests_sent = 0
        host = urllib.parse.urlsplit(self.url).hostname if self.url else None
        # A loopback endpoint must never be routed through HTTP(S)_PROXY.
        handlers = [urllib.request.ProxyHandler({})] if is_loopback(host) else []
        self._opener = urllib.request.build_opener(*handlers)

    @classmethod
    def from_settings(cls, settings: Settings) -> HttpBackend:
        """Build from ``embedding_url``, ``embedding_timeout`` and the query cache's settings."""
        return cls(
            settings.embedding_url,
            timeout=settings.embedding_timeout,
            query_cache_size=settings.embedding_cache_size,
            query_cache_ttl=settings.embedding_cache_ttl,
        )

    @property
    def model_id(self) -> str:
        """``http:`` + the model the server reports, or the URL."""
        return "http:" + (self._server_model or self.url or "")

    @property
    def dimension(self) -> int:
        """Vector length learned by ``load()`` (0 before)."""
        return self._dimension

    def _require_url(self) -> str:
        if not self.url:
            raise EmbeddingFault(
                FaultKind.MISCONFIGURED,
                "HTTP embedding mode has no endpoint",
                "CPERSONA_EMBEDDING_MODE=http but CPERSONA_EMBEDDING_URL is not set",
                "set CPERSONA_EMBEDDING_URL (e.g. http://127.0.0.1:8403/embed) or use CPERSONA_EMBEDDING_MODE=onnx",
            )
        return self.url

    def _post(self, texts: list[str], role: str | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        url = self._require_url()
        request_body: dict[str, Any] = {"texts": texts}
        if role is not None:
            request_body["role"] = role
        if role == "query":
            request_body["asker"] = self.asker
        body = json.dumps(request_body).encode("utf-8")
        request = urllib.request.Request(
            url,
            data=body,
            method="POST",
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        self.requests_sent += 1
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode("utf-8", "replace")
            kind = FaultKind.MISCONFIGURED if exc.code in (404, 405) else FaultKind.INFERENCE_ERROR
            raise EmbeddingFault(
                kind,
                f"embedding server answered HTTP {exc.code}",
                f"POST {url}: {exc.code} {detail}",
                "check that CPERSONA_EMBEDDING_URL points at an /embed endpoint and the server's log",
            ) from exc
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise EmbeddingFault(
                FaultKind.ENDPOINT_UNREACHABLE,
                "embedding server unreachable",
                f"POST {url}: {reason}",
                f"start the embedding server at {url} (e.g. `cpersona embed-server`) or fix CPERSONA_EMBEDDING_URL",
            ) from exc
        try:
            payload = json.loads(raw)
            vectors = np.asarray(payload["embeddings"], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingFault(
                FaultKind.INFERENCE_ERROR,
                "embedding server sent an unusable answer",
                f"POST {url}: {type(exc).__name__}: {raw[:200]!r}",
                'the server must answer {"embeddings": [[...], ...]}',
            ) from exc
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise EmbeddingFault(
                FaultKind.INFERENCE_ERROR,
                "embedding server returned the wrong number of vectors",
                f"POST {url}: sent {len(texts)} texts, got shape {vectors.shape}",
                "check the embedding server",
            )
        return vectors, payload if isinstance(payload, dict) else {}

    def load(self) -> None:
        """Probe the endpoint with one text to learn the dimension and model name."""
        self.query_cache.clear()
        vectors, payload = self._post([_PROBE_TEXT])
        self._dimension = int(vectors.shape[1])
        model = payload.get("model")
        self._server_model = self._reported_model = str(model) if model else ""

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed in requests of at most 32 texts; unit-length float32 rows."""
        return self._embed(list(texts), None)

    def _embed(self, texts: list[str], role: str | None) -> np.ndarray:
        if not self._dimension:
            self.load()
        if not texts:
            return np.zeros((0, self._dimension), dtype=np.float32)
        parts = []
        for start in range(0, len(texts), self.max_batch):
            vectors, payload = self._post(texts[start : start + self.max_batch], role)
            self._note_reported_model(payload)
            if vectors.shape[1] != self._dimension:
                raise EmbeddingFault(
                    FaultKind.DIMENSION_MISMATCH,
                    "embedding server changed its vector dimension",
                    f"{self.url}: {vectors.shape[1]} now, {self._dimension} at load",
                    "restart cpersona after changing the embedding server's model (stored vectors are re-embedded)",
                )
            parts.append(vectors)
        return l2_normalise(np.vstack(parts))

    def _note_reported_model(self, payload: dict[str, Any]) -> None:
        """Forget kept query vectors when a reply names another model than the reply before."""
        model = payload.get("model")
        reported = str(model) if model else ""
        if reported and reported != self._reported_model:
            self._reported_model = reported
            self.query_cache.clear()

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query, sent with ``"role": "query"`` (the server applies the model's query prompt);
        a text asked within the cache's lifetime is answered from ``query_cache``."""
        if not self._dimension:
            self.load()  # first: loading clears the cache, which would drop this query's vector
        return self.query_cache.through(text, lambda: self._embed([text], "query")[0])
