"""The health page's SVG timeline: bucketing and totals."""

from __future__ import annotations

import re

from cpersona.ui.chart import MAX_BARS, MAX_SLOT, buckets, timeline_svg


def test_the_axis_spans_the_data_with_empty_days_filled_in() -> None:
    bars = buckets(
        [{"day": "2026-03-10", "stored": 4, "embedded": 1}, {"day": "2026-03-12", "stored": 2, "embedded": 2}]
    )
    assert bars == [
        ("2026-03-10", "2026-03-10", 4, 1),
        ("2026-03-11", "2026-03-11", 0, 0),
        ("2026-03-12", "2026-03-12", 2, 2),
    ]


def test_a_young_store_is_a_few_dated_bars_not_one_bar_at_the_edge() -> None:
    svg = timeline_svg([{"day": "2026-12-01", "stored": 31, "embedded": 31}])
    assert len(re.findall(r'<g class="bar"', svg)) == 1
    width = int(re.search(r'viewBox="0 0 (\d+) ', svg).group(1))  # type: ignore[union-attr]
    assert width <= 44 + MAX_SLOT + 12 or width == 240  # as wide as one slot needs, not a 14-day axis
    x = float(re.search(r'class="stored" x="([\d.]+)"', svg).group(1))  # type: ignore[union-attr]
    assert x < 44 + MAX_SLOT  # the bar sits in the first slot beside the y axis
    assert ">12-01</text>" in svg  # and carries its date


def test_a_long_span_is_grouped_and_keeps_every_row() -> None:
    days = [
        {"day": f"2025-{m:02d}-{d:02d}", "stored": 1, "embedded": d % 2}
        for m in range(1, 13)
        for d in (1, 15)
    ]
    bars = buckets(days)
    assert len(bars) <= MAX_BARS
    assert sum(b[2] for b in bars) == 24 and sum(b[3] for b in bars) == sum(d["embedded"] for d in days)


def test_svg_totals_and_empty_store() -> None:
    svg = timeline_svg([{"day": "2026-01-01", "stored": 3, "embedded": 2}])
    assert svg.startswith("<svg") and "2 of 3 memories embedded (67%)" in svg
    assert sum(int(n) for n in re.findall(r'data-stored="(\d+)"', svg)) == 3
    assert "nothing to draw" in timeline_svg([])
