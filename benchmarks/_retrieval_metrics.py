"""Per-question retrieval metrics shared by the LoCoMo benchmark and the research harness."""

from __future__ import annotations

import math
from collections.abc import Sequence

#: Results asked for per question (recall's ``limit``).
LIMIT = 10


def score_question(ranked: Sequence[str], evidence: Sequence[str], limit: int = LIMIT) -> dict[str, float]:
    """Metrics for one question; ``ranked`` is best-first evidence ids (LoCoMo dia_ids)."""
    relevant = set(evidence)
    found = [d in relevant for d in ranked]
    first = next((i for i, hit in enumerate(found) if hit), None)
    dcg = sum(1 / math.log2(i + 2) for i, hit in enumerate(found[:limit]) if hit)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), limit)))
    return {
        "recall@1": len(relevant & set(ranked[:1])) / len(relevant),
        "recall@5": len(relevant & set(ranked[:5])) / len(relevant),
        "recall@10": len(relevant & set(ranked[:10])) / len(relevant),
        "hit@1": 1.0 if found[:1] == [True] else 0.0,
        "ndcg@10": dcg / ideal if ideal else 0.0,
        "mrr": 1 / (first + 1) if first is not None else 0.0,
        "short": 1.0 if len(ranked) < limit else 0.0,
        "empty": 1.0 if not ranked else 0.0,
    }
