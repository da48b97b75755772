"""Fusing ranked channels into one score per candidate (``rrf``, ``rsf``, ``cascade``).

Input: for each channel, a best-first list of (candidate key, raw score) where higher
raw scores are better (cosine; negated bm25; LIKE hit counts). Output: one
``Fused`` per candidate. Channels are always visited in the registry's order
(retrieval/channels.py), so floating-point sums are reproducible.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cpersona.retrieval.candidates import Fused, Hit, Key
from cpersona.retrieval.channels import CHANNEL_ORDER, FTS_EPISODES, FTS_MEMORIES, FTS_WORDS, VECTOR

__all__ = [
    "CHANNEL_ORDER",
    "FTS_EPISODES",
    "FTS_MEMORIES",
    "FTS_WORDS",
    "VECTOR",
    "Fused",
    "cascade",
    "channel_depth",
    "fuse",
    "rrf",
    "rsf",
]

#: rsf reads each channel this deep at least (measured: docs/retrieval.md, docs/decisions.md).
RSF_MIN_DEPTH = 30


def channel_depth(mode: str, limit: int) -> int:
    """How many candidates each retriever returns before fusion.

    rsf min-max normalises each channel, so a longer list puts the floor at a
    genuinely irrelevant row and the magnitudes mean more; rrf only gains
    vector-only tail rows from depth, so it keeps ``limit`` (docs/retrieval.md#why-rsf-four-channels-depth-30-measured).
    """
    if mode == "rsf":
        return max(limit, RSF_MIN_DEPTH)
    return limit


def _cosines(channels: Mapping[str, Sequence[Hit]]) -> dict[Key, float]:
    return {key: score for key, score in channels.get(VECTOR, ())}


def rrf(
    channels: Mapping[str, Sequence[Hit]],
    k: int = 60,
    weights: Mapping[str, float] | None = None,
    order: Sequence[str] = CHANNEL_ORDER,
) -> dict[Key, Fused]:
    """Reciprocal rank fusion: sum over channels of weight / (k + rank), rank starting at 1 (weight 1
    unless ``weights`` says otherwise: the vector channel's for a query the model cannot read)."""
    cosines = _cosines(channels)
    fused: dict[Key, Fused] = {}
    for name in order:
        weight = 1.0 if weights is None else weights.get(name, 1.0)
        for rank, (key, raw) in enumerate(channels.get(name, ()), start=1):
            entry = fused.setdefault(key, Fused(key, 0.0, "rrf", cosine=cosines.get(key)))
            entry.score += weight / (k + rank)
            entry.channels[name] = raw
    for entry in fused.values():
        entry.rrf = entry.score
    return fused


def rsf(
    channels: Mapping[str, Sequence[Hit]],
    weights: Mapping[str, float] | None = None,
    order: Sequence[str] = CHANNEL_ORDER,
) -> dict[Key, Fused]:
    """Relative score fusion: min-max normalise each channel's raw scores per query, then sum
    (each channel × its weight in ``weights``, 1 by default).

    A channel whose scores are all equal contributes 1.0 to each of its rows
    (they are all its best).
    """
    cosines = _cosines(channels)
    fused: dict[Key, Fused] = {}
    for name in order:
        hits = channels.get(name, ())
        if not hits:
            continue
        weight = 1.0 if weights is None else weights.get(name, 1.0)
        values = [raw for _, raw in hits]
        low, high = min(values), max(values)
        span = high - low
        for key, raw in hits:
            entry = fused.setdefault(key, Fused(key, 0.0, "rsf", cosine=cosines.get(key)))
            entry.score += weight * ((raw - low) / span if span > 0 else 1.0)
            entry.channels[name] = raw
    for entry in fused.values():
        entry.rsf = entry.score
    return fused


def cascade(channels: Mapping[str, Sequence[Hit]], order: Sequence[str] = CHANNEL_ORDER) -> dict[Key, Fused]:
    """Legacy sequential fill: all vector hits, then FTS memories (trigram, then words), then FTS episodes.

    The score only encodes that order (1 / (1 + position)); its signal is "cascade".
    """
    cosines = _cosines(channels)
    fused: dict[Key, Fused] = {}
    position = 0
    for name in order:
        for key, raw in channels.get(name, ()):
            if key in fused:
                fused[key].channels[name] = raw
                continue
            fused[key] = Fused(
                key, 1.0 / (1 + position), "cascade", cosine=cosines.get(key), channels={name: raw}
            )
            position += 1
    return fused


def fuse(
    mode: str,
    channels: Mapping[str, Sequence[Hit]],
    *,
    rrf_k: int = 60,
    weights: Mapping[str, float] | None = None,
    order: Sequence[str] = CHANNEL_ORDER,
) -> dict[Key, Fused]:
    """Dispatch on CPERSONA_RECALL_MODE (``weights``: per-channel weights for rrf and rsf; cascade
    only orders channels; ``order``: the channels visited, in the order summed: the registry's)."""
    if mode == "rrf":
        return rrf(channels, rrf_k, weights, order)
    if mode == "rsf":
        return rsf(channels, weights, order)
    if mode == "cascade":
        return cascade(channels, order)
    raise ValueError(f"unknown recall mode {mode!r}")
