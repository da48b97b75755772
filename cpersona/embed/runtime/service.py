"""The embedding service: one backend, loaded in the background, watched for faults.

Callers never wait for the model and never see an exception from it:
``embed_documents`` / ``embed_query`` return ``None`` while the model is
loading or broken, and the caller stores rows with ``embedded: false`` (the
queue back-fills them) or recalls keyword-only. Every failure moves the
``HealthState``; two consecutive inference errors make a fault; a periodic
re-load attempt while faulted lets a fixed model return to healthy.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cpersona.embed.runtime.base import EmbeddingBackend, EmbeddingFault, FaultKind
from cpersona.embed.runtime.selftest import load_check
from cpersona.runtime.health_state import FAULT, HEALTHY, HINT, Condition, HealthState

log = logging.getLogger(__name__)

INFERENCE_ERRORS_FOR_FAULT = 2


class EmbeddingService:
    """Owns the backend and reports its health."""

    def __init__(
        self,
        backend: EmbeddingBackend,
        health: HealthState,
        *,
        retry_seconds: float = 30.0,
        corpus_check: Callable[[EmbeddingBackend], EmbeddingFault | None] | None = None,
        prepare: Callable[[], str | None] | None = None,
    ) -> None:
        self.backend = backend
        self.health = health
        self.retry_seconds = retry_seconds
        self._corpus_check = corpus_check
        # Runs once in the background before the first load (e.g. fetching a missing model),
        # so neither a download nor a load ever delays the MCP handshake.
        self._prepare = prepare
        self._prepare_error: str | None = None
        self._ready = threading.Event()
        self._settled = threading.Event()  # first load attempt finished (either way)
        self._stop = threading.Event()
        self._load_lock = threading.Lock()
        self._consecutive_errors = 0
        self._last_fault: str | None = None
        self._fault_repeats = 0
        self._listeners: list[Callable[[], None]] = []
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------
    def on_ready(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (from a background thread) each time the model becomes usable."""
        self._listeners.append(callback)

    def start(self) -> None:
        """Load in a daemon thread; keep retrying every ``retry_seconds`` while faulted."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="cpersona-embed-load", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        if self._prepare is not None:
            try:
                self._prepare_error = self._prepare()
            except Exception as exc:  # the load below reports the consequence
                self._prepare_error = f"{type(exc).__name__}: {exc}"
        self.try_load()
        while not self._stop.wait(self.retry_seconds):
            # A failed self-test is deterministic for the same files: re-running it (a full reload
            # for a 1 GB model) every few seconds would only burn CPU. Restart or check_health(fix).
            condition = self.health.condition
            if condition.state == FAULT and condition.kind != FaultKind.SELF_TEST_FAILED:
                self.try_load()

    def try_load(self) -> bool:
        """Attempt to (re)load now; returns True when the model is usable afterwards."""
        with self._load_lock:
            if self.backend.mode == "none":
                self.health.set(
                    Condition(
                        HINT,
                        kind="embeddings_off",
                        reason="embeddings are off (CPERSONA_EMBEDDING_MODE=none): recall is keyword-only",
                        evidence="CPERSONA_EMBEDDING_MODE=none",
                        runbook="set CPERSONA_EMBEDDING_MODE=onnx (and `cpersona fetch-model`) for vector recall",
                    )
                )
                self._settled.set()
                return False
            started = time.perf_counter()
            try:
                self.backend.load()
                fault = self._self_test()
                if fault is None and self._corpus_check:
                    fault = self._corpus_check(self.backend)
                if fault is not None:
                    raise fault
            except EmbeddingFault as fault:
                self._fault(fault)
                self._settled.set()
                return False
            except Exception as exc:  # a backend bug must not kill the server
                log.exception("embedding backend failed to load")
                self._fault(
                    EmbeddingFault(
                        FaultKind.SESSION_ERROR,
                        "the embedding backend failed to load",
                        f"{type(exc).__name__}: {exc}",
                        "check the model files (`cpersona models`) and the server log",
                    )
                )
                self._settled.set()
                return False
            self._consecutive_errors = 0
            log.info(
                "embedding model %s ready (%d-d, %s) in %.2f s",
                self.backend.model_id,
                self.backend.dimension,
                self.backend.mode,
                time.perf_counter() - started,
            )
            self._mark_healthy()
            self._settled.set()
            return True

    def _self_test(self) -> EmbeddingFault | None:
        # docs/models.md#self-test: a model that loads but ranks known pairs wrongly must not hand out vectors.
        fault = load_check(self.backend)
        if fault is not None:
            # Drop the session so the next explicit load reads the (possibly reinstalled) files again.
            self.backend.close()
        return fault

    def stop(self) -> None:
        """Stop the retry loop and release the backend."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.backend.close()

    def wait_settled(self, timeout: float) -> bool:
        """Wait for the first load attempt; True when the model is usable."""
        self._settled.wait(timeout)
        return self._ready.is_set()

    # -- state -----------------------------------------------------------------------
    @property
    def loading(self) -> bool:
        """True while the first load attempt runs (a background load was started and has not settled):
        what a caller may wait for. Mode none, or a service never started, is not loading."""
        return (
            self.backend.mode != "none"
            and self._thread is not None
            and self._thread.is_alive()
            and not self._settled.is_set()
        )

    @property
    def ready(self) -> bool:
        """True when embeddings can be computed now."""
        return self._ready.is_set()

    @property
    def model_id(self) -> str:
        """Active model id ('' until loaded)."""
        return self.backend.model_id if self.ready else ""

    @property
    def dimension(self) -> int:
        """Active dimension (0 until loaded)."""
        return self.backend.dimension if self.ready else 0

    @property
    def languages(self) -> tuple[str, ...] | None:
        """The languages the model reads, from its manifest (None: not known, e.g. an http endpoint)."""
        manifest = getattr(self.backend, "manifest", None)
        return getattr(manifest, "languages", None)

    def settle_query_kernel(self) -> dict[str, Any] | None:
        """Run the backend's query-kernel check now if one is still to come (it otherwise starts in
        the background shortly after the first query), so what follows uses one kernel throughout;
        returns ``stats.embedding.query_kernel`` (None: no kernel to choose in this process)."""
        choose = getattr(self.backend, "choose_query_kernel", None)
        if self.ready and callable(choose):
            choose()
        status = getattr(self.backend, "query_kernel_status", None)
        return status() if callable(status) else None

    def _fault(self, fault: EmbeddingFault) -> None:
        if self._prepare_error and fault.kind == FaultKind.MODEL_MISSING:
            fault = EmbeddingFault(
                fault.kind,
                fault.reason,
                f"{fault.evidence}; automatic fetch failed: {self._prepare_error}",
                fault.runbook,
            )
        self._ready.clear()
        # The loader retries every retry_seconds: a fault that persists (offline, model missing) is
        # said once at WARNING; the repeats go to DEBUG with a counter instead of flooding the log.
        text = str(fault)
        if text == self._last_fault:
            self._fault_repeats += 1
            log.debug("embedding fault persists (attempt %d): %s", self._fault_repeats + 1, text)
        elif self._thread is None:
            # One load attempt and no retry loop (doctor, checkup, reembed): the command reports the
            # fault itself, so a warning here would say it twice, and promise retries that never come.
            self._last_fault, self._fault_repeats = text, 0
            log.info("embedding fault: %s", text)
        else:
            self._last_fault, self._fault_repeats = text, 0
            # After the automatic fetch failed, serve has printed the steps already: say them once.
            shown = fault.reason if self._prepare_error else text
            log.warning(
                "embedding fault: %s (retrying every %d s; repeats logged at debug)",
                shown,
                int(self.retry_seconds),
            )
        self.health.set(Condition(FAULT, fault.kind, fault.reason, fault.evidence, fault.runbook))

    def _mark_healthy(self) -> None:
        self._last_fault, self._fault_repeats = None, 0
        self._ready.set()
        self.health.set(Condition(HEALTHY))
        for callback in list(self._listeners):
            try:
                callback()
            except Exception:  # a listener failure must not block the others
                log.exception("embedding ready listener failed")

    # -- embedding -------------------------------------------------------------------
    @property
    def window_tokens(self) -> int | None:
        """Tokens the model reads of one text (None: unknown; long texts then get no blocks)."""
        return self.backend.window_tokens

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray | None:
        """Vectors for stored content, or None when the model is not usable right now."""
        if not self.ready or not texts:
            return None
        return self._guarded(lambda: self.backend.embed_documents(list(texts)))

    def embed_query(self, text: str) -> np.ndarray | None:
        """Vector for a recall query, or None (recall then runs keyword-only)."""
        if not self.ready:
            return None
        return self._guarded(lambda: self.backend.embed_query(text))

    def _guarded(self, call: Callable[[], np.ndarray]) -> np.ndarray | None:
        try:
            vectors = call()
        except Exception as exc:
            fault = exc if isinstance(exc, EmbeddingFault) else None
            with self._load_lock:
                self._consecutive_errors += 1
                count = self._consecutive_errors
            log.warning("embedding inference failed (%d in a row): %s", count, exc)
            if count >= INFERENCE_ERRORS_FOR_FAULT:
                self._fault(
                    EmbeddingFault(
                        FaultKind.INFERENCE_ERROR,
                        f"embedding inference failed {count} times in a row",
                        fault.evidence if fault else f"{type(exc).__name__}: {exc}",
                        "check the model files (`cpersona models`); the server retries loading every "
                        f"{int(self.retry_seconds)} s",
                    )
                )
            return None
        self._consecutive_errors = 0
        return vectors
