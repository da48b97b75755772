"""The ``none`` mode: embeddings deliberately off; recall is keyword-only.

``NoModel`` is what every backend without a model shares (no id, no dimension, each embedding
raises the backend's fault): ``NoEmbeddings`` here, and the factory's ``MisconfiguredBackend``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cpersona.embed.runtime.base import EmbeddingBackend, EmbeddingFault, FaultKind


class NoModel(EmbeddingBackend):
    """A backend without a model: empty id, dimension 0; loading and embedding raise ``fault``."""

    @property
    def fault(self) -> EmbeddingFault:
        """Why there are no vectors (with its fix)."""
        raise NotImplementedError

    def load(self) -> None:
        """Raises the fault: there is nothing to load."""
        raise self.fault

    @property
    def model_id(self) -> str:
        """Empty: there is no model."""
        return ""

    @property
    def dimension(self) -> int:
        """Zero: there is no model."""
        return 0

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Always raises the fault."""
        raise self.fault

    def embed_query(self, text: str) -> np.ndarray:
        """Always raises the fault."""
        raise self.fault


class NoEmbeddings(NoModel):
    """A backend that never produces vectors. The health state reads it as ``hint``."""

    mode = "none"

    def load(self) -> None:
        """Nothing to load: embeddings off is a choice, not a fault."""
        return None

    @property
    def fault(self) -> EmbeddingFault:
        """A fresh fault per call (a raised exception keeps its traceback)."""
        return EmbeddingFault(
            FaultKind.MISCONFIGURED,
            "embeddings are off",
            "CPERSONA_EMBEDDING_MODE=none",
            "set CPERSONA_EMBEDDING_MODE=onnx to enable vector recall",
        )
