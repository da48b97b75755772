"""The interface every embedding backend implements.

A backend turns text into L2-normalised float32 vectors. It is constructed
cheaply (no I/O) and does its slow work in ``load()``, which the embedding
service runs in a background thread so the MCP handshake never waits for it.
Failures are raised as ``EmbeddingFault`` carrying the evidence and the fix a
person needs; the health state machine turns them into advisories.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported where vectors are made, never before the MCP handshake
    import numpy as np


class FaultKind:
    """Stable identifiers for why an embedding backend is not usable."""

    MODEL_MISSING = "model_missing"
    HASH_MISMATCH = "hash_mismatch"
    CORRUPT_MODEL = "corrupt_model"
    IMPORT_ERROR = "import_error"
    SESSION_ERROR = "session_error"
    INFERENCE_ERROR = "inference_error"
    DIMENSION_MISMATCH = "dimension_mismatch"
    ENDPOINT_UNREACHABLE = "endpoint_unreachable"
    MISCONFIGURED = "misconfigured"
    SELF_TEST_FAILED = "self_test_failed"


@dataclass
class EmbeddingFault(Exception):
    """A backend cannot embed. ``evidence`` is what was observed; ``runbook`` is what to do."""

    kind: str
    reason: str
    evidence: str
    runbook: str

    def __str__(self) -> str:
        return f"{self.reason} ({self.evidence}). Fix: {self.runbook}"


class EmbeddingBackend(ABC):
    """One embedding model behind one of the modes ``onnx``, ``http`` or ``none``."""

    #: Mode name as in CPERSONA_EMBEDDING_MODE.
    mode: str = ""

    @abstractmethod
    def load(self) -> None:
        """Do the slow work (open files, create the session, probe the endpoint).

        Raises EmbeddingFault when the backend cannot work. Safe to call again
        after a failure (that is how recovery is attempted).
        """

    @property
    @abstractmethod
    def model_id(self) -> str:
        """Identifier recorded beside each stored vector, e.g. ``all-minilm-l6-v2``.

        Vectors with a different model id or dimension are never compared.
        """

    @property
    @abstractmethod
    def dimension(self) -> int:
        """Length of the vectors this backend returns (after any Matryoshka cut)."""

    @property
    def window_tokens(self) -> int | None:
        """Tokens the model reads of one text (None: unknown, so long texts get no blocks; ``embed/runtime/blocks.py``)."""
        return None

    @abstractmethod
    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed stored content; returns float32 array (len(texts), dimension), rows unit length."""

    @abstractmethod
    def embed_query(self, text: str) -> np.ndarray:
        """Embed a recall query (query prompt applied when the model has one); shape (dimension,)."""

    def embed_query_as(self, text: str, asker: str) -> np.ndarray:
        """``embed_query`` on behalf of ``asker`` (a process sharing this model). A backend that keeps
        recent query vectors keeps them per asker, so one server's questions are never answered from
        another's: each server's speed is its own, as if it held the model alone."""
        return self.embed_query(text)

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (sessions, connections)."""


def this_process_asker() -> str:
    """How this process names its queries to a model host or an /embed server that keeps recent query
    vectors per asker (``embed_query_as``)."""
    return f"pid {os.getpid()}"


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Scale each row to unit length (zero rows stay zero); returns float32."""
    import numpy as np

    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    return (vectors / norms).astype(np.float32, copy=False)
