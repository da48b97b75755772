"""The ``none`` mode: embeddings deliberately off; recall is keyword-only."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cpersona.embed.runtime.base import EmbeddingBackend, EmbeddingFault, FaultKind


class NoEmbeddings(EmbeddingBackend):
    """A backend that never produces vectors. The health state reads it as ``hint``."""

    mode = "none"

    def load(self) -> None:
        return None

    @property
    def model_id(self) -> str:
        return ""

    @property
    def dimension(self) -> int:
        return 0

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        raise EmbeddingFault(
            FaultKind.MISCONFIGURED,
            "embeddings are off",
            "CPERSONA_EMBEDDING_MODE=none",
            "set CPERSONA_EMBEDDING_MODE=onnx to enable vector recall",
        )

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]
