"""Fusion formulas and the post-fusion penalties."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from cpersona.retrieval import fusion
from cpersona.retrieval.candidates import Key
from cpersona.retrieval.penalties import episode_boundary_factor, recent_recall_factor


def mem(rid: int) -> Key:
    return Key("memory", rid)


def ep(rid: int) -> Key:
    return Key("episode", rid)


CHANNELS = {
    fusion.VECTOR: [(mem(1), 0.9), (mem(2), 0.5)],
    fusion.FTS_MEMORIES: [(mem(2), 7.0), (mem(3), 3.0), (mem(4), 3.0)],
    fusion.FTS_EPISODES: [(ep(1), 2.0)],
}


def test_rrf_sums_reciprocal_ranks() -> None:
    fused = fusion.rrf(CHANNELS, k=60)
    assert math.isclose(fused[mem(2)].score, 1 / 62 + 1 / 61)
    assert math.isclose(fused[mem(1)].score, 1 / 61)
    assert math.isclose(fused[ep(1)].score, 1 / 61)
    assert fused[mem(1)].cosine == 0.9 and fused[mem(3)].cosine is None
    assert fused[mem(2)].rrf == fused[mem(2)].score and fused[mem(2)].signal == "rrf"


def test_rsf_min_max_normalises_each_channel() -> None:
    fused = fusion.rsf(CHANNELS)
    assert math.isclose(fused[mem(1)].score, 1.0)
    assert math.isclose(fused[mem(2)].score, 0.0 + 1.0)
    assert math.isclose(fused[mem(3)].score, 0.0)
    assert math.isclose(fused[ep(1)].score, 1.0)  # a single-row channel is its own best
    assert fused[mem(2)].signal == "rsf"


def test_cascade_keeps_channel_order() -> None:
    fused = fusion.cascade(CHANNELS)
    order = sorted(fused.values(), key=lambda f: -f.score)
    assert [f.ref for f in order] == ["mem:1", "mem:2", "mem:3", "mem:4", "ep:1"]


def test_episode_boundary_factor_formula_and_floor() -> None:
    boundary = datetime(2026, 1, 2, tzinfo=UTC)
    assert episode_boundary_factor(boundary, boundary, 0.01, 0.5) == 1.0
    assert episode_boundary_factor(boundary + timedelta(hours=1), boundary, 0.01, 0.5) == 1.0
    ten_hours = episode_boundary_factor(boundary - timedelta(hours=10), boundary, 0.01, 0.5)
    assert math.isclose(ten_hours, math.exp(-0.1))
    assert episode_boundary_factor(boundary - timedelta(days=365), boundary, 0.01, 0.5) == 0.5


def test_recent_recall_factor_window() -> None:
    now = datetime(2026, 1, 1, 12, tzinfo=UTC)
    assert recent_recall_factor(None, now, 5, 0.7) == 1.0
    assert recent_recall_factor(now - timedelta(minutes=4), now, 5, 0.7) == 0.7
    assert recent_recall_factor(now - timedelta(minutes=6), now, 5, 0.7) == 1.0


def test_channel_depth_is_deeper_for_rsf_only() -> None:
    assert fusion.channel_depth("rsf", 10) == fusion.RSF_MIN_DEPTH == 30
    assert fusion.channel_depth("rsf", 50) == 50
    assert fusion.channel_depth("rsf", 0) == 30
    assert fusion.channel_depth("rrf", 10) == 10
    assert fusion.channel_depth("cascade", 7) == 7


def test_word_channel_is_fused_like_any_other() -> None:
    channels = {**CHANNELS, fusion.FTS_WORDS: [(mem(3), 9.0), (mem(5), 1.0)]}
    fused = fusion.rsf(channels)
    assert math.isclose(fused[mem(3)].score, 0.0 + 1.0) and fused[mem(3)].channels[fusion.FTS_WORDS] == 9.0
    assert math.isclose(fused[mem(5)].score, 0.0)
    assert fusion.CHANNEL_ORDER.index(fusion.FTS_WORDS) == fusion.CHANNEL_ORDER.index(fusion.FTS_MEMORIES) + 1
    order = sorted(fusion.cascade(channels).values(), key=lambda f: -f.score)
    assert [f.ref for f in order][-2:] == ["mem:5", "ep:1"]  # words after trigram, before episodes
