"""``recall(trace=true)``: each stage's candidates and scores, for a person debugging a ranking.

Shape (docs/retrieval.md "Trace"; every list best first and cut at ``TRACE_ROWS``, ``total`` says how
many there were)::

    {"depth": 30,
     "channels": {"vector": {"method": "vector", "total": 30, "hits": [{"ref", "score"}, ...]}, ...},
     "fusion": {"mode": "rsf", "rrf_k"?: 60, "total": 41,
                "candidates": [{"ref", "score", "channels": {"vector": 0.61, ...}}, ...]},
     "filtered_out": {"total": 2, "refs": [...]},        # fused but gone, out of scope or excluded
     "scored": {"total": 39, "rows": [{"ref", "score", "factors": {...}, "signal"}, ...]},
     "gate": {... the response's gate ..., "kept": 39, "cut_refs": [...]},
     "returned": ["mem:12", ...]}

Scores are rounded to 6 places. A channel's ``score`` is its raw value (cosine; bm25 as the engine
reports it; a CJK query's trigram channel, its pair re-ranking: retrieval/pair_rescore.py); ``factors``
multiply to ``score`` exactly as in ``match_reason``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cpersona.retrieval.candidates import Fused, Hit, Key, ScoredRow
from cpersona.retrieval.vector_channel import VECTOR

#: Rows kept per stage list: enough to see why the top 10 are the top 10, bounded for the wire.
TRACE_ROWS = 30


@dataclass(frozen=True)
class Stages:
    """What the pipeline saw, stage by stage (handed over as is; ``build`` shapes it)."""

    mode: str
    rrf_k: int
    depth: int
    channels: dict[str, list[Hit]]
    methods: dict[str, str]
    fused: dict[Key, Fused]
    scored: Sequence[ScoredRow]
    gate: dict[str, Any]
    kept: list[int]  # id() of the rows the gate kept
    returned: list[Key]
    time_cue: dict[str, Any] | None = None  # the cue that acted (recall's response echoes it too)
    vector_content: str | None = None  # the content blended into the query vector (query_form.py)


def _r(value: float | None) -> float | None:
    return None if value is None else round(float(value), 6)


def build(stages: Stages) -> dict[str, Any]:
    """The trace object (bounded: at most ``TRACE_ROWS`` entries per list)."""
    channels = {
        name: {
            "method": stages.methods.get(name, "vector" if name == VECTOR else "none"),
            "total": len(hits),
            "hits": [{"ref": key.ref, "score": _r(score)} for key, score in hits[:TRACE_ROWS]],
        }
        for name, hits in stages.channels.items()
    }
    if stages.vector_content is not None and VECTOR in channels:
        channels[VECTOR]["content"] = stages.vector_content
    candidates = sorted(stages.fused.values(), key=lambda f: (-f.score, f.ref))
    fusion_out: dict[str, Any] = {
        "mode": stages.mode,
        "total": len(candidates),
        "candidates": [
            {"ref": f.ref, "score": _r(f.score), "channels": {k: _r(v) for k, v in f.channels.items()}}
            for f in candidates[:TRACE_ROWS]
        ],
    }
    if stages.mode == "rrf":
        fusion_out["rrf_k"] = stages.rrf_k
    scored_keys = {r.key for r in stages.scored}
    filtered = [f.ref for f in candidates if f.key not in scored_keys]
    kept = set(stages.kept)
    cut = [r.key.ref for r in stages.scored if id(r) not in kept]
    gate = {**stages.gate, "kept": len(kept), "cut_refs": cut[:TRACE_ROWS]}
    out: dict[str, Any] = {
        "depth": stages.depth,
        "channels": channels,
        "fusion": fusion_out,
        "filtered_out": {"total": len(filtered), "refs": filtered[:TRACE_ROWS]},
        "scored": {
            "total": len(stages.scored),
            "rows": [
                {
                    "ref": r.key.ref,
                    "signal": r.signal(),
                    "score": _r(r.score),
                    "factors": r.match_reason()["factors"],
                }
                for r in stages.scored[:TRACE_ROWS]
            ],
        },
        "gate": gate,
        "returned": [key.ref for key in stages.returned],
    }
    if stages.time_cue is not None:
        out["time_cue"] = stages.time_cue
    return out
