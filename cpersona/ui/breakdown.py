"""A search result's score, drawn: each channel's share of the fused score, and the gate on a similarity scale.

The shares come from recall's own trace (``recall(trace=True)``: each channel's hits and each
fused candidate's raw channel values), recomputed with the fusion's formula: rsf adds each
channel's min-max-normalised value, rrf adds ``1 / (k + rank)``, the context channel adds its
bonus as is. The trace lists at most 30 hits per channel, so a channel cut short has an
unknown floor (rsf) or rank (rrf); one such channel is solved as the remainder of the fused
score, two or more are not drawn (the numbers are still listed). The trace rounds raw scores
to 6 places, so a channel whose raw scores are all tiny (bm25 on a handful of rows) cannot be
normalised back either. Nothing is drawn unless the shares add up to the fused score the
pipeline reported. Drawings are inline SVG with
attributes only (the page's CSP forbids inline styles): templates/shares.svg and scale.svg.
"""

from __future__ import annotations

import math
from typing import Any

from markupsafe import Markup

from cpersona.ui.html import NOTHING, render

#: How the channels read on the page.
CHANNEL_WORDS = {
    "vector": "meaning (vector)",
    "fts_memories": "trigram keyword",
    "fts_words": "word keyword",
    "fts_episodes": "episode keyword",
    "context": "context (linked rows)",
}
_TOLERANCE = 1e-3


def _rsf_share(raw: float, hits: list[dict[str, Any]], complete: bool) -> float | None:
    values = [float(h["score"]) for h in hits if h.get("score") is not None]
    if not values or not complete:
        return None
    low, high = min(values), max(values)
    return (raw - low) / (high - low) if high > low else 1.0


def _rrf_share(ref: str, hits: list[dict[str, Any]], k: int) -> float | None:
    rank = next((i for i, h in enumerate(hits, start=1) if h.get("ref") == ref), None)
    return None if rank is None else 1.0 / (k + rank)


def channel_shares(ref: str, trace: dict[str, Any] | None) -> dict[str, float] | None:
    """What each channel added to ``ref``'s fused score (None when the trace cannot say exactly)."""
    if not isinstance(trace, dict):
        return None
    fused = trace.get("fusion") or {}
    mode = fused.get("mode")
    if mode not in ("rsf", "rrf"):
        return None  # cascade's score encodes an order, not a sum of channels
    candidate = next((c for c in fused.get("candidates") or [] if c.get("ref") == ref), None)
    if candidate is None or candidate.get("score") is None:
        return None
    lists = trace.get("channels") or {}
    shares: dict[str, float] = {}
    unknown: list[str] = []
    for name, raw in (candidate.get("channels") or {}).items():
        found = lists.get(name)
        if raw is None:
            continue
        if found is None:  # context: its bonus is what it adds
            shares[name] = float(raw)
            continue
        hits = list(found.get("hits") or [])
        share = (
            _rsf_share(float(raw), hits, int(found.get("total", 0)) <= len(hits))
            if mode == "rsf"
            else _rrf_share(ref, hits, int(fused.get("rrf_k", 60)))
        )
        if share is None:
            unknown.append(name)
        else:
            shares[name] = share
    total = float(candidate["score"])
    if len(unknown) == 1:
        shares[unknown[0]] = max(0.0, total - sum(shares.values()))
    elif unknown:
        return None
    if abs(sum(shares.values()) - total) > _TOLERANCE * max(1.0, total):
        return None
    return shares


def shares_svg(shares: dict[str, float]) -> Markup:
    """One small bar per channel: its part of the fused score (label, bar, value and percent)."""
    total = sum(shares.values()) or 1.0
    ordered = sorted(shares.items(), key=lambda kv: -kv[1])
    row_h, label_w, bar_w = 18, 150, 150
    rows = [
        {
            "name": name,
            "label": CHANNEL_WORDS.get(name, name),
            "y": 2 + i * row_h,
            "part": f"{value / total:.4f}",
            "fill": f"{bar_w * value / total:.1f}",
            "value": f"{value:.3f}",
            "percent": round(100 * value / total),
        }
        for i, (name, value) in enumerate(ordered)
    ]
    return render(
        "shares.svg", rows=rows, width=380, height=row_h * len(rows) + 4, label_w=label_w, bar_w=bar_w
    )


def gate_measure(gate: dict[str, Any], reason: dict[str, Any]) -> tuple[str, float] | None:
    """What the gate compared with its threshold for this row: (what, value), or None (no gate)."""
    if not isinstance(gate, dict) or gate.get("threshold") is None or gate.get("kind") == "off":
        return None
    keyed_on = gate.get("keyed_on")
    if keyed_on == "confidence" and isinstance(reason.get("confidence"), int | float):
        return "confidence", float(reason["confidence"])
    if keyed_on == "evidence" and isinstance(gate.get("evidence"), int | float):
        return "best evidence", float(gate["evidence"])
    if isinstance(reason.get("cosine"), int | float):
        return "similarity", float(reason["cosine"])
    if isinstance(gate.get("top_cosine"), int | float):
        return "best similarity", float(gate["top_cosine"])
    return None


def gate_scale_svg(gate: dict[str, Any], reason: dict[str, Any]) -> Markup:
    """A 0–1 scale with the gate's threshold as a marker and this row's measure as a dot ('' without a gate)."""
    measure = gate_measure(gate, reason)
    if measure is None:
        return NOTHING
    what, value = measure
    threshold = float(gate["threshold"])
    # Similarity and confidence live in 0–1; evidence adds the query's word coverage and can pass 1.
    top = float(max(1, math.ceil(max(value, threshold))))
    width, left, right = 380, 8, 372
    span = right - left

    def x(v: float) -> float:
        return left + span * min(1.0, max(0.0, v / top))

    return render(
        "scale.svg",
        what=what,
        value=value,
        threshold=threshold,
        width=width,
        left=left,
        right=right,
        span=span,
        x_t=f"{x(threshold):.1f}",
        pass_w=f"{right - x(threshold):.1f}",
        x_v=f"{x(value):.1f}",
        anchor_t="end" if threshold > 0.75 * top else "start",
        anchor_v="end" if value > 0.75 * top else "start",
        low_label="" if value < 0.12 * top else "0",
        high_label="" if value > 0.6 * top else f"{top:g}",
    )
