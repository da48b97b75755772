"""Fusing ranked channels into one score per candidate (``rrf``, ``rsf``, ``cascade``).

Input: for each channel, a best-first list of (ref, raw score) where higher
raw scores are better (cosine; negated bm25; LIKE hit counts). Output: one
``Fused`` per ref. Channels are always visited in the fixed order given, so
floating-point sums are reproducible.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

VECTOR = "vector"
FTS_MEMORIES = "fts_memories"  # trigram index over memories (+ its LIKE stand-in)
FTS_WORDS = "fts_words"  # word-level (porter) index over memories
FTS_EPISODES = "fts_episodes"
CHANNEL_ORDER = (VECTOR, FTS_MEMORIES, FTS_WORDS, FTS_EPISODES)

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


@dataclass
class Fused:
    """A candidate's fused score and the per-channel evidence behind it."""

    ref: str
    score: float
    signal: str
    cosine: float | None = None
    rrf: float | None = None
    rsf: float | None = None
    channels: dict[str, float] = field(default_factory=dict)


def _cosines(channels: Mapping[str, Sequence[tuple[str, float]]]) -> dict[str, float]:
    return {ref: score for ref, score in channels.get(VECTOR, ())}


def rrf(
    channels: Mapping[str, Sequence[tuple[str, float]]],
    k: int = 60,
    weights: Mapping[str, float] | None = None,
) -> dict[str, Fused]:
    """Reciprocal rank fusion: sum over channels of weight / (k + rank), rank starting at 1 (weight 1
    unless ``weights`` says otherwise: the vector channel's for a query the model cannot read)."""
    cosines = _cosines(channels)
    fused: dict[str, Fused] = {}
    for name in CHANNEL_ORDER:
        weight = 1.0 if weights is None else weights.get(name, 1.0)
        for rank, (ref, raw) in enumerate(channels.get(name, ()), start=1):
            entry = fused.setdefault(ref, Fused(ref, 0.0, "rrf", cosine=cosines.get(ref)))
            entry.score += weight / (k + rank)
            entry.channels[name] = raw
    for entry in fused.values():
        entry.rrf = entry.score
    return fused


def rsf(
    channels: Mapping[str, Sequence[tuple[str, float]]], weights: Mapping[str, float] | None = None
) -> dict[str, Fused]:
    """Relative score fusion: min-max normalise each channel's raw scores per query, then sum
    (each channel × its weight in ``weights``, 1 by default).

    A channel whose scores are all equal contributes 1.0 to each of its rows
    (they are all its best).
    """
    cosines = _cosines(channels)
    fused: dict[str, Fused] = {}
    for name in CHANNEL_ORDER:
        hits = channels.get(name, ())
        if not hits:
            continue
        weight = 1.0 if weights is None else weights.get(name, 1.0)
        values = [raw for _, raw in hits]
        low, high = min(values), max(values)
        span = high - low
        for ref, raw in hits:
            entry = fused.setdefault(ref, Fused(ref, 0.0, "rsf", cosine=cosines.get(ref)))
            entry.score += weight * ((raw - low) / span if span > 0 else 1.0)
            entry.channels[name] = raw
    for entry in fused.values():
        entry.rsf = entry.score
    return fused


def cascade(channels: Mapping[str, Sequence[tuple[str, float]]]) -> dict[str, Fused]:
    """Legacy sequential fill: all vector hits, then FTS memories (trigram, then words), then FTS episodes.

    The score only encodes that order (1 / (1 + position)); its signal is "cascade".
    """
    cosines = _cosines(channels)
    fused: dict[str, Fused] = {}
    position = 0
    for name in CHANNEL_ORDER:
        for ref, raw in channels.get(name, ()):
            if ref in fused:
                fused[ref].channels[name] = raw
                continue
            fused[ref] = Fused(
                ref, 1.0 / (1 + position), "cascade", cosine=cosines.get(ref), channels={name: raw}
            )
            position += 1
    return fused


def fuse(
    mode: str,
    channels: Mapping[str, Sequence[tuple[str, float]]],
    *,
    rrf_k: int = 60,
    weights: Mapping[str, float] | None = None,
) -> dict[str, Fused]:
    """Dispatch on CPERSONA_RECALL_MODE (``weights``: per-channel weights for rrf and rsf; cascade
    only orders channels)."""
    if mode == "rrf":
        return rrf(channels, rrf_k, weights)
    if mode == "rsf":
        return rsf(channels, weights)
    if mode == "cascade":
        return cascade(channels)
    raise ValueError(f"unknown recall mode {mode!r}")
