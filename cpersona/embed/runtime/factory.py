"""Choose and build the embedding backend the settings ask for."""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from cpersona.config import Settings
from cpersona.embed.registry import ManifestError, known_model_names, load_manifest
from cpersona.embed.runtime.base import EmbeddingBackend, EmbeddingFault, FaultKind
from cpersona.embed.runtime.http_backend import HttpBackend
from cpersona.embed.runtime.none_backend import NoEmbeddings, NoModel

if TYPE_CHECKING:
    from cpersona.embed.runtime.onnx_backend import OnnxBackend

log = logging.getLogger(__name__)


class MisconfiguredBackend(NoModel):
    """Stands in for a backend that cannot even be built; ``load()`` reports why.

    Construction never raises, so a bad setting becomes a health fault with a
    runbook instead of a crash at startup.
    """

    def __init__(self, mode: str, fault: EmbeddingFault) -> None:
        """Remember the mode it replaces and the fault to report."""
        self.mode = mode
        self._fault = fault

    @property
    def fault(self) -> EmbeddingFault:
        """The stored fault (why the backend could not be built)."""
        return self._fault


def create_backend(settings: Settings) -> EmbeddingBackend:
    """The backend for ``settings.embedding_mode`` (onnx | http | none); never raises for bad settings."""
    mode = settings.embedding_mode
    if mode == "none":
        return NoEmbeddings()
    if mode == "http":
        return HttpBackend.from_settings(settings)
    if mode != "onnx":
        return MisconfiguredBackend(
            mode,
            EmbeddingFault(
                FaultKind.MISCONFIGURED,
                f"unknown embedding mode {mode!r}",
                f"CPERSONA_EMBEDDING_MODE={mode}",
                "set CPERSONA_EMBEDDING_MODE to onnx, http or none",
            ),
        )
    try:
        manifest = load_manifest(settings.embedding_model)
    except ManifestError as exc:
        known = ", ".join(known_model_names())
        return MisconfiguredBackend(
            "onnx",
            EmbeddingFault(
                FaultKind.MISCONFIGURED,
                f"unknown embedding model {settings.embedding_model!r}",
                str(exc),
                f"set CPERSONA_EMBEDDING_MODEL to one of: {known} (see `cpersona models`)",
            ),
        )
    # Imported here so that merely choosing a backend never pulls numpy-heavy ONNX code paths early.
    from cpersona.embed.runtime.onnx_backend import OnnxBackend

    backend = OnnxBackend.from_settings(manifest, settings)
    if settings.model_sharing == "off":
        return backend
    return _shared(backend, settings)


def _shared(backend: OnnxBackend, settings: Settings) -> EmbeddingBackend:
    """``backend`` shared with the user's other processes, or itself when sharing cannot work here."""
    from cpersona.embed.runtime.rendezvous import Rendezvous, RendezvousError, sharing_key
    from cpersona.embed.runtime.shared_backend import SharedModelBackend

    key = sharing_key(
        backend.model_path,
        backend.manifest.name,
        backend.dimension,
        int(backend.max_tokens),
        os.getuid(),
        query_kernel=backend.query_kernel_mode,
    )
    rendezvous = Rendezvous(settings.runtime_dir, key)
    try:
        rendezvous.check()
    except RendezvousError as exc:
        # Sharing is a memory saving, never a reason not to embed: fall back to a private copy.
        log.warning("model sharing is off for this process (%s); loading a private copy of the model", exc)
        return backend
    return SharedModelBackend(backend, rendezvous, timeout=settings.embedding_timeout)
