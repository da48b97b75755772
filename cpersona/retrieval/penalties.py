"""Score multipliers applied after fusion (docs/retrieval.md#after-fusion)."""

from __future__ import annotations

import math
from datetime import datetime


def episode_boundary_factor(
    created_at: datetime, boundary: datetime, rate_per_hour: float, floor: float
) -> float:
    """``max(exp(-rate * hours_before_boundary), floor)``; 1.0 at or after the boundary."""
    if created_at >= boundary:
        return 1.0
    hours = (boundary - created_at).total_seconds() / 3600.0
    return max(math.exp(-rate_per_hour * hours), floor)


def recent_recall_factor(
    last_recalled_at: datetime | None, now: datetime, window_min: float, penalty: float
) -> float:
    """``penalty`` when the row was returned within the last ``window_min`` minutes, else 1.0."""
    if last_recalled_at is None or window_min <= 0:
        return 1.0
    age_min = (now - last_recalled_at).total_seconds() / 60.0
    return penalty if 0 <= age_min <= window_min else 1.0
