"""How embeddings are stored: float32 bytes plus the model id and dimension."""

from __future__ import annotations

import numpy as np


def to_blob(vector: np.ndarray) -> bytes:
    """Serialise one vector as little-endian float32."""
    return np.asarray(vector, dtype="<f4").tobytes()


def from_blob(blob: bytes) -> np.ndarray:
    """The float32 vector stored in ``blob``."""
    return np.frombuffer(blob, dtype="<f4")
