"""The health page's picture: memories stored per day, embedded share stacked, as inline SVG.

Rendered on the server from ``Memory.memory_timeline`` (no JavaScript library; the tags are
templates/timeline.svg). The axis spans
the data: from the first day with rows to the last, days without rows filled in as zeros (a
young store is a few bars with their dates, not one bar at the edge of a fixed span). A span
longer than ``MAX_BARS`` days is grouped into buckets of several days; a short one keeps its
bars at most ``MAX_SLOT`` wide, so the chart is only as wide as the data needs.
"""

from __future__ import annotations

import math
from datetime import date, timedelta
from typing import Any

from markupsafe import Markup

from cpersona.ui.html import render

MAX_BARS = 120
#: The widest a day's slot gets (px in the SVG's own units), and the most bars that each get a date.
MAX_SLOT, LABEL_EVERY_UP_TO = 48, 14
WIDTH, HEIGHT, PAD_LEFT, PAD_RIGHT, PAD_BOTTOM, PAD_TOP = 720, 220, 44, 12, 28, 12


def buckets(days: list[dict[str, Any]]) -> list[tuple[str, str, int, int]]:
    """(first day, last day, stored, embedded) per bar, contiguous up to the newest day with rows."""
    if not days:
        return []
    counts = {d["day"]: (int(d["stored"]), int(d["embedded"])) for d in days}
    last = date.fromisoformat(days[-1]["day"])
    first = date.fromisoformat(days[0]["day"])
    span = (last - first).days + 1
    width = max(1, math.ceil(span / MAX_BARS))
    bars: list[tuple[str, str, int, int]] = []
    for start in range(0, span, width):
        lo = first + timedelta(days=start)
        hi = min(last, lo + timedelta(days=width - 1))
        stored = embedded = 0
        for k in range((hi - lo).days + 1):
            s, e = counts.get((lo + timedelta(days=k)).isoformat(), (0, 0))
            stored, embedded = stored + s, embedded + e
        bars.append((lo.isoformat(), hi.isoformat(), stored, embedded))
    return bars


def timeline_svg(days: list[dict[str, Any]]) -> Markup:
    """An SVG bar chart (or a short note when nothing is stored): geometry here, tags in timeline.svg."""
    bars = buckets(days)
    if not bars:
        return render("timeline.svg", bars=[])
    top = max(b[2] for b in bars) or 1
    step = min(float(MAX_SLOT), (WIDTH - PAD_LEFT - PAD_RIGHT) / len(bars))
    plot_w, plot_h = step * len(bars), HEIGHT - PAD_BOTTOM - PAD_TOP
    bar_w = min(28.0, max(1.0, step * 0.8))
    base = PAD_TOP + plot_h
    drawn = []
    for i, (lo, hi, stored, embedded) in enumerate(bars):
        h_all, h_emb = plot_h * stored / top, plot_h * embedded / top
        drawn.append(
            {
                "day": lo,
                "stored": stored,
                "embedded": embedded,
                "label": lo if lo == hi else f"{lo} – {hi}",
                "share": f"{round(100 * embedded / stored)}%" if stored else "-",
                "x": f"{PAD_LEFT + i * step + (step - bar_w) / 2:.1f}",
                "w": f"{bar_w:.1f}",
                "y_all": f"{base - h_all:.1f}",
                "h_all": f"{h_all:.1f}",
                "y_emb": f"{base - h_emb:.1f}",
                "h_emb": f"{h_emb:.1f}",
            }
        )
    if len(bars) <= LABEL_EVERY_UP_TO:  # few bars: each gets its date (month-day; the year is in the tooltip)
        ticks: list[dict[str, Any]] = [
            {
                "x": f"{PAD_LEFT + i * step + step / 2:.1f}",
                "css": "tick day",
                "anchor": "middle",
                "text": b[0][5:],
            }
            for i, b in enumerate(bars)
        ]
    else:
        ticks = [
            {"x": PAD_LEFT, "css": "tick", "anchor": "", "text": bars[0][0]},
            {"x": f"{PAD_LEFT + plot_w:.1f}", "css": "tick", "anchor": "end", "text": bars[-1][1]},
        ]
    stored_total = sum(b[2] for b in bars)
    embedded_total = sum(b[3] for b in bars)
    return render(
        "timeline.svg",
        bars=drawn,
        ticks=ticks,
        width=round(max(PAD_LEFT + plot_w + PAD_RIGHT, 240)),
        height=HEIGHT,
        left=PAD_LEFT,
        right=f"{PAD_LEFT + plot_w:.1f}",
        base=base,
        top=top,
        top_y=PAD_TOP + 4,
        stored_total=stored_total,
        embedded_total=embedded_total,
        percent=round(100 * embedded_total / stored_total) if stored_total else 0,
    )
