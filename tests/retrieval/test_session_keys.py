"""``session_keys`` (the row-pair calibration's sessions) vectorised: the same sessions as the row-by-row
rule it replaced, on random timelines with gaps at the one-hour edge, scope changes and bad timestamps."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta

import numpy as np

from cpersona.core.text import format_ts, parse_ts
from cpersona.retrieval.calibration import SESSION_GAP_SECONDS, session_keys


def row_by_row(timeline: list[tuple[int, str, str, str]]) -> np.ndarray:
    keys = np.zeros(len(timeline), dtype=np.int64)
    session, previous = 0, None
    for i, (_, when, project, channel) in enumerate(timeline):
        try:
            seconds = parse_ts(when).timestamp() if when else math.nan
        except ValueError:
            seconds = math.nan
        if previous is not None:
            same = previous[0] == project and previous[1] == channel
            gap = abs(seconds - previous[2])
            close = gap <= SESSION_GAP_SECONDS if math.isfinite(seconds + previous[2]) else False
            session += 0 if same and close else 1
        keys[i] = session
        previous = (project, channel, seconds)
    return keys


def test_vectorised_sessions_equal_the_row_by_row_rule() -> None:
    rng = random.Random(19)
    for _ in range(400):
        moment, timeline = datetime(2024, 1, 1, tzinfo=UTC), []
        for i in range(rng.randint(0, 40)):
            moment += timedelta(seconds=rng.choice([1, 60, 3599, 3600, 3601, 7200]))
            bad = rng.random() < 0.05
            when = rng.choice(["", "garbage", "2024-01-01"]) if bad else format_ts(moment)
            timeline.append((i, when, rng.choice(["", "p"]), rng.choice(["", "c"])))
        assert session_keys(timeline).tolist() == row_by_row(timeline).tolist(), timeline
