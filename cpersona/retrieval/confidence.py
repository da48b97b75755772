"""Confidence scoring (SPEC §3 step 4, ``CPERSONA_CONFIDENCE_ENABLED``, off by default; docs/retrieval.md).

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

from cpersona.storage.interface import EPISODES, MEMORIES, VectorQuery, VectorSearch
from cpersona.text import parse_ts

if TYPE_CHECKING:
    from cpersona.retrieval.pipeline import ScoredRow

TIME_FLOOR = 0.8
RESOLVED_FACTOR = 0.9  # a resolved episode is settled history, slightly behind open matters
RECALL_BOOST = 0.1
RECALL_CAP = 3.0
MIN_HALF_LIFE_HOURS = 24.0


def blend(
    cosine: float, age_hours: float, half_life_hours: float | None, resolved: bool, recall_count: int
) -> float:
    """The confidence of one row (``half_life_hours`` None: no time decay)."""
    decay = 1.0 if half_life_hours is None else 0.5 ** (max(age_hours, 0.0) / half_life_hours)
    value = max(cosine, 0.0) * (TIME_FLOOR + (1.0 - TIME_FLOOR) * decay)
    if resolved:
        value *= RESOLVED_FACTOR
    value *= 1.0 + RECALL_BOOST * min(math.log1p(max(recall_count, 0)), RECALL_CAP) / RECALL_CAP
    return min(value, 1.0)


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
        penalty = r.score / r.fused.score if r.fused.score > 0 else 1.0
        r.confidence = blend(cosine, ages[id(r)], half_life, resolved, recalls)
        r.score = r.confidence * penalty


def key_on_cosine(rows: list[ScoredRow]) -> None:
    """Mark a list ranked by cosine alone (every row found only by the vector channel) and put its
    scores on the cosine scale, so autocut may act on it; rrf/rsf lists are left alone."""
    if not rows or any(set(r.fused.channels) != {"vector"} or r.fused.cosine is None for r in rows):
        return
    if any(r.fused.signal != "rrf" for r in rows):
        return
    for r in rows:
        penalty = r.score / r.fused.score if r.fused.score > 0 else 1.0
        r.cosine_keyed = True
        r.score = float(r.fused.cosine or 0.0) * penalty
