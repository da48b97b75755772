"""The health page's picture: memories stored per day, embedded share stacked, as inline SVG.

Rendered on the server from ``Memory.memory_timeline`` (no JavaScript library). The axis spans
the data: from the first day with rows to the last, days without rows filled in as zeros (a
young store is a few bars with their dates, not one bar at the edge of a fixed span). A span
longer than ``MAX_BARS`` days is grouped into buckets of several days; a short one keeps its
bars at most ``MAX_SLOT`` wide, so the chart is only as wide as the data needs.
"""

from __future__ import annotations

import math
from datetime import date, timedelta
from typing import Any

from cpersona.ui.html import esc

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


def timeline_svg(days: list[dict[str, Any]]) -> str:
    """An SVG bar chart (or a short note when nothing is stored)."""
    bars = buckets(days)
    if not bars:
        return '<p class="muted" data-testid="chart-empty">No memories stored yet: nothing to draw.</p>'
    top = max(b[2] for b in bars) or 1
    step = min(float(MAX_SLOT), (WIDTH - PAD_LEFT - PAD_RIGHT) / len(bars))
    plot_w, plot_h = step * len(bars), HEIGHT - PAD_BOTTOM - PAD_TOP
    width = round(max(PAD_LEFT + plot_w + PAD_RIGHT, 240))
    bar_w = min(28.0, max(1.0, step * 0.8))
    labelled = len(bars) <= LABEL_EVERY_UP_TO
    parts = [
        f'<svg class="chart" data-testid="timeline" viewBox="0 0 {width} {HEIGHT}" width="{width}" '
        f'height="{HEIGHT}" role="img" aria-label="Memories stored per day; darker part embedded" '
        'xmlns="http://www.w3.org/2000/svg">',
        f'<line x1="{PAD_LEFT}" y1="{PAD_TOP + plot_h}" x2="{PAD_LEFT + plot_w:.1f}" y2="{PAD_TOP + plot_h}" class="axis"/>',
        f'<text x="{PAD_LEFT - 6}" y="{PAD_TOP + 4}" class="tick" text-anchor="end">{top}</text>',
        f'<text x="{PAD_LEFT - 6}" y="{PAD_TOP + plot_h}" class="tick" text-anchor="end">0</text>',
    ]
    for i, (lo, hi, stored, embedded) in enumerate(bars):
        x = PAD_LEFT + i * step + (step - bar_w) / 2
        h_all = plot_h * stored / top
        h_emb = plot_h * embedded / top
        y_base = PAD_TOP + plot_h
        label = lo if lo == hi else f"{lo} – {hi}"
        share = f"{round(100 * embedded / stored)}%" if stored else "-"
        parts.append(
            f'<g class="bar" data-day="{esc(lo)}" data-stored="{stored}" data-embedded="{embedded}">'
            f"<title>{esc(label)}: {stored} stored, {embedded} embedded ({share})</title>"
            f'<rect class="stored" x="{x:.1f}" y="{y_base - h_all:.1f}" width="{bar_w:.1f}" height="{h_all:.1f}"/>'
            f'<rect class="embedded" x="{x:.1f}" y="{y_base - h_emb:.1f}" width="{bar_w:.1f}" height="{h_emb:.1f}"/>'
            "</g>"
        )
    if labelled:  # few bars: each gets its date (month-day; the year is in the tooltip)
        for i, (lo, _, _, _) in enumerate(bars):
            centre = PAD_LEFT + i * step + step / 2
            parts.append(
                f'<text x="{centre:.1f}" y="{HEIGHT - 8}" class="tick day" text-anchor="middle">{esc(lo[5:])}</text>'
            )
    else:
        parts.append(f'<text x="{PAD_LEFT}" y="{HEIGHT - 8}" class="tick">{esc(bars[0][0])}</text>')
        parts.append(
            f'<text x="{PAD_LEFT + plot_w:.1f}" y="{HEIGHT - 8}" class="tick" text-anchor="end">'
            f"{esc(bars[-1][1])}</text>"
        )
    parts.append("</svg>")
    stored_total = sum(b[2] for b in bars)
    embedded_total = sum(b[3] for b in bars)
    percent = round(100 * embedded_total / stored_total) if stored_total else 0
    legend = (
        f'<p class="legend"><span class="key stored"></span> stored <span class="key embedded"></span> embedded · '
        f'<span data-testid="embedded-share">{embedded_total} of {stored_total} memories embedded ({percent}%)</span></p>'
    )
    return "".join(parts) + legend
