"""Confidence scoring (``CPERSONA_CONFIDENCE_ENABLED``, off by default;
docs/quality-gate.md#confidence-scoring-cpersona_confidence_enabled-off-by-default).

Each candidate gets a confidence on the cosine scale::

    confidence = max(cosine, 0)
                 × (TIME_FLOOR + (1 − TIME_FLOOR) · 0.5 ^ (age / half_life))   # dynamic time decay
                 × (RESOLVED_FACTOR if a resolved episode else 1)
                 × (1 + RECALL_BOOST · min(ln(1 + recall_count), RECALL_CAP) / RECALL_CAP)

capped at 1. ``half_life`` is dynamic: the median age of this query's candidates (at least one day),
so "recent" means recent for this agent's history rather than a fixed number of days; ``deep=true``
turns the decay off. Rows the vector channel did not rank get their cosine from the index. The
penalties already applied (episode boundary, recent recall) multiply the confidence like they did the
fused score; the list is then re-sorted by the result and the gate keys on it.
"""

from __future__ import annotations

import math
import statistics
from datetime import datetime
from typing import TYPE_CHECKING

from cpersona.core.text import parse_ts
from cpersona.storage.interface import EPISODES, MEMORIES, VectorQuery, VectorSearch

if TYPE_CHECKING:
    from cpersona.retrieval.candidates import ScoredRow

TIME_FLOOR = 0.8
RESOLVED_FACTOR = 0.9  # a resolved episode is settled history, slightly behind open matters
RECALL_BOOST = 0.1
RECALL_CAP = 3.0
MIN_HALF_LIFE_HOURS = 24.0


def parts(
    cosine: float, age_hours: float, half_life_hours: float | None, resolved: bool, recall_count: int
) -> dict[str, float]:
    """The factors of one row's confidence, in order; their product is the confidence.

    ``cosine`` (clamped at 0) first, then each factor that is not 1: ``time_decay``,
    ``resolved_episode``, ``recall_count_boost``, and ``confidence_cap`` when the product passed 1.
    """
    out = {"cosine": max(cosine, 0.0)}
    if half_life_hours is not None:
        decay = 0.5 ** (max(age_hours, 0.0) / half_life_hours)
        out["time_decay"] = TIME_FLOOR + (1.0 - TIME_FLOOR) * decay
    if resolved:
        out["resolved_episode"] = RESOLVED_FACTOR
    boost = 1.0 + RECALL_BOOST * min(math.log1p(max(recall_count, 0)), RECALL_CAP) / RECALL_CAP
    if boost != 1.0:
        out["recall_count_boost"] = boost
    value = math.prod(out.values())
    if value > 1.0:
        out["confidence_cap"] = 1.0 / value
    return {k: v for k, v in out.items() if k == "cosine" or v != 1.0}


def blend(
    cosine: float, age_hours: float, half_life_hours: float | None, resolved: bool, recall_count: int
) -> float:
    """The confidence of one row (``half_life_hours`` None: no time decay), capped at 1."""
    return min(math.prod(parts(cosine, age_hours, half_life_hours, resolved, recall_count).values()), 1.0)


def _when(row: dict[str, object]) -> datetime | None:
    for key in ("timestamp", "end_time", "created_at"):
        value = row.get(key)
        if isinstance(value, str) and value:
            try:
                return parse_ts(value)
            except ValueError:
                continue
    return None


def apply(
    rows: list[ScoredRow],
    query: VectorQuery,
    search: VectorSearch,
    now: datetime,
    *,
    deep: bool,
) -> None:
    """Set ``confidence`` and re-key ``score`` on every row (in place; the caller re-sorts)."""
    missing_mem = [int(r.row["id"]) for r in rows if r.fused.cosine is None and r.row["type"] == "memory"]
    missing_ep = [int(r.row["id"]) for r in rows if r.fused.cosine is None and r.row["type"] == "episode"]
    # Rows found only by keyword have no cosine yet: ask the engine's vector search for theirs.
    looked_up = {("memory", i): c for i, c in search.cosines(MEMORIES, query, missing_mem).items()}
    looked_up.update({("episode", i): c for i, c in search.cosines(EPISODES, query, missing_ep).items()})
    ages = {}
    for r in rows:
        when = _when(r.row)
        ages[id(r)] = (now - when).total_seconds() / 3600.0 if when is not None else 0.0
    half_life = None
    if not deep and rows:
        half_life = max(statistics.median(ages.values()), MIN_HALF_LIFE_HOURS)
    for r in rows:
        cosine = r.fused.cosine
        if cosine is None:
            cosine = looked_up.get((r.row["type"], int(r.row["id"])), 0.0)
        resolved = r.row["type"] == "episode" and bool(r.row.get("resolved"))
        recalls = int(r.row.get("recall_count") or 0)
        found = parts(cosine, ages[id(r)], half_life, resolved, recalls)
        r.confidence = min(math.prod(found.values()), 1.0)
        # The penalties already applied stay; the base becomes the cosine and the confidence factors join.
        penalties = dict(r.factors)
        r.base = ("cosine", found.pop("cosine"))
        r.factors = {**found, **penalties}
        r.score = r.confidence * math.prod(penalties.values())


def key_on_cosine(rows: list[ScoredRow]) -> None:
    """Mark a list ranked by cosine alone (every row found only by the vector channel) and put its
    scores on the cosine scale, so autocut may act on it; rrf/rsf lists are left alone."""
    if not rows or any(set(r.fused.channels) != {"vector"} or r.fused.cosine is None for r in rows):
        return
    if any(r.fused.signal != "rrf" for r in rows):
        return
    for r in rows:
        r.cosine_keyed = True
        r.base = ("cosine", float(r.fused.cosine or 0.0))
        r.score = r.base[1] * math.prod(r.factors.values())
