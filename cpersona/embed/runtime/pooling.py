"""Pooling token states into one vector per text, and Matryoshka truncation.

Pure numpy so it can be tested without a model.
"""

from __future__ import annotations

import numpy as np

from cpersona.embed.runtime.base import l2_normalise


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Average of the token states where ``mask`` is 1 (padding ignored)."""
    weights = mask.astype(np.float32)[..., None]
    summed = (hidden * weights).sum(axis=1)
    # A row with no real token (cannot happen with special tokens) must not divide by zero.
    counts = np.clip(weights.sum(axis=1), 1e-9, None)
    return summed / counts


def cls_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """State of the first real token of each row (the [CLS] token under right padding)."""
    first = np.argmax(mask != 0, axis=1)
    return hidden[np.arange(hidden.shape[0]), first]


def last_token_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """State of the last real (non-padding) token of each row.

    Looks for the last position whose mask is 1, which is right for right
    padding (``[t t t 0 0]``) and for left padding (``[0 0 t t t]``) alike.
    """
    seq_len = mask.shape[1]
    reversed_first = np.argmax(mask[:, ::-1] != 0, axis=1)
    last = seq_len - 1 - reversed_first
    return hidden[np.arange(hidden.shape[0]), last]


_POOLERS = {"mean": mean_pool, "cls": cls_pool, "last_token": last_token_pool}


def pool(mode: str, hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Pool ``hidden`` [batch, seq, dim] with ``mask`` [batch, seq] by ``mode``; returns [batch, dim]."""
    try:
        pooler = _POOLERS[mode]
    except KeyError:
        raise ValueError(f"unknown pooling {mode!r}") from None
    return pooler(np.asarray(hidden, dtype=np.float32), np.asarray(mask))


def truncate_and_normalise(vectors: np.ndarray, dim: int | None) -> np.ndarray:
    """Keep the first ``dim`` components (Matryoshka) when set, then L2-normalise; float32."""
    if dim is not None and dim < vectors.shape[-1]:
        vectors = vectors[..., :dim]
    return l2_normalise(vectors)
