"""Page bodies that explain: search results with their match_reason, and the health page."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from cpersona.result_types import EpisodeRow, MemoryRow, ProfileRow
from cpersona.retrieval.explain import describe_factors, describe_gate, describe_search
from cpersona.ui.breakdown import channel_shares, gate_scale_svg, shares_svg
from cpersona.ui.chart import timeline_svg
from cpersona.ui.html import NOTHING, render
from cpersona.ui.pages import ANY, View

#: Row keys every page already shows; anything else a recall row carries (a gate verdict, say) is listed too.
_KNOWN_ROW_KEYS = (
    set(MemoryRow.__annotations__) | set(EpisodeRow.__annotations__) | set(ProfileRow.__annotations__)
)
#: The search form's largest ``limit``; the server clamps any larger value to it.
SEARCH_LIMIT_MAX = 100
_SHOWN_RESPONSE_KEYS = {
    "ok",
    "results",
    "count",
    "explanation",
    "notice",
    "gate",
    "search",
    "mode",
    "advisory",
    "trace",
}


def words(value: Any) -> str:
    """A value as it reads in a sentence: numbers to 4 places, objects as 'key value, ...', lists joined."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4f}"
    if isinstance(value, dict):
        return "; ".join(f"{k.replace('_', ' ')} {words(v)}" for k, v in value.items()) or "-"
    if isinstance(value, list | tuple):
        return ", ".join(words(v) for v in value) or "-"
    return "-" if value is None else str(value)


def facts(values: dict[str, Any]) -> list[tuple[str, str]]:
    """Whatever keys ``values`` has (generic: new fields show up unasked) as (name, words) pairs."""
    return [(k.replace("_", " "), words(v)) for k, v in values.items()]


def search_form(
    agents: list[dict[str, Any]],
    agent: str | None,
    query: str,
    project: str | None,
    channel: str | None,
    limit: int,
) -> Markup:
    """The search box: the same arguments recall takes."""
    options = [(ANY, "all agents")] + [(a["agent_id"], a["agent_id"]) for a in agents]
    return render(
        "search.html",
        options=options,
        chosen=agent or ANY,
        query=query,
        project=project or "",
        channel=channel or "",
        limit=limit,
        limit_max=SEARCH_LIMIT_MAX,
    )


@dataclass(frozen=True)
class Card:
    """One recall row as its card shows it: the row, its rank, and the score drawn and in words."""

    rank: int
    kind: str
    row: dict[str, Any]
    reason: dict[str, Any]
    score_line: str
    reason_words: list[tuple[str, str]]
    shares: Markup
    scale: Markup
    extra: list[tuple[str, str]]


def search_results(result: dict[str, Any], view: View) -> Markup:
    """Recall's rows best first: compact cards, the score drawn one click away, the gate in words."""
    trace = result.get("trace")
    found_gate = result.get("gate")
    gate: dict[str, Any] = found_gate if isinstance(found_gate, dict) else {}
    said = [(key, result[key]) for key in ("explanation", "notice") if isinstance(result.get(key), str)]
    rows = list(reversed(result.get("results") or []))
    cards = [_card(rank, row, gate, trace) for rank, row in enumerate(rows, start=1)]
    return render(
        "results.html", count=result.get("count", 0), said=said, about=_about(result), cards=cards, view=view
    )


def _about(result: dict[str, Any]) -> list[tuple[str, str]]:
    """The gate, the search and the advisory as sentences; any other response field as 'name: words'."""
    lines = []
    if isinstance(result.get("gate"), dict):
        lines.append(("gate", describe_gate(result["gate"])))
    if isinstance(result.get("search"), dict):
        lines.append(("search", describe_search(result["search"], result.get("mode"))))
    advisory = result.get("advisory")
    if isinstance(advisory, dict):
        fix = f" Fix: {advisory['runbook']}" if advisory.get("runbook") else ""
        lines.append(("advisory", f"{advisory.get('reason') or 'search is degraded'}.{fix}"))
    for key, value in result.items():
        if key not in _SHOWN_RESPONSE_KEYS:
            lines.append((key, f"{key.replace('_', ' ')}: {words(value)}"))
    return lines


def _card(rank: int, row: dict[str, Any], gate: dict[str, Any], trace: Any) -> Card:
    reason = row.get("match_reason") or {}
    # The gate judges the query on its best candidate (per row only when keyed on confidence):
    # the scale sits by #1, and in each row's breakdown only for a per-row gate.
    per_row = gate.get("keyed_on") == "confidence"
    scale = gate_scale_svg(gate, reason) if reason and (rank == 1 or per_row) else NOTHING
    shares = channel_shares(str(row.get("ref", "")), trace) if reason else None
    return Card(
        rank=rank,
        kind=row.get("type", "?"),
        row=row,
        reason=reason,
        score_line=_score_line(reason) if reason else "",
        reason_words=facts(_reason_words(reason)) if reason else [],
        shares=shares_svg(shares) if shares else NOTHING,
        scale=scale,
        extra=facts({k: v for k, v in row.items() if k not in _KNOWN_ROW_KEYS}),
    )


_SIGNAL_WORDS = {
    "rsf": "relative score fusion (rsf)",
    "rrf": "reciprocal rank fusion (rrf)",
    "cosine": "similarity (cosine)",
    "confidence": "confidence",
    "cascade": "cascade order",
}
_GATE_WORDS = {
    "passed": "passed the gate",
    "exact_match": "below the gate, kept as an exact match",
    "fallback": "below the gate, returned as a keyword match",
}


def _score_line(reason: dict[str, Any]) -> str:
    """'score 1.2345 · similarity 0.612 · passed the gate': the card's one-line summary."""
    parts = []
    if isinstance(reason.get("score"), int | float):
        parts.append(f"score {reason['score']:.4f}")
    if isinstance(reason.get("cosine"), int | float):
        parts.append(f"similarity {reason['cosine']:.3f}")
    if reason.get("gate"):
        parts.append(_GATE_WORDS.get(reason["gate"], str(reason["gate"])))
    return " · ".join(parts)


def _reason_words(reason: dict[str, Any]) -> dict[str, Any]:
    """match_reason in words: what ranking keyed on, each measure, what the score is made of."""
    names = {"signal": "ranked on", "cosine": "similarity (cosine)", "rsf": "rsf sum", "rrf": "rrf sum"}
    shown: dict[str, Any] = {}
    for key, value in reason.items():
        if key == "factors":
            continue
        if key == "signal":
            value = _SIGNAL_WORDS.get(str(value), value)
        if key == "gate":
            value = _GATE_WORDS.get(str(value), value)
        shown[names.get(key, key)] = value
    parts = describe_factors(reason)
    if parts:
        shown["made of"] = parts
    return shown


_VERDICT_KIND = {"healthy": "ok", "degraded": "warn", "unhealthy": "bad"}


def health_page(health: dict[str, Any], stats: dict[str, Any], timeline: dict[str, Any]) -> Markup:
    """The verdict and findings, embedding state with its fix, queue depth, and the store over time."""
    queue = stats["queue"]
    counts = stats["counts"]
    store = {
        "database": stats["db_path"],
        "size": f"{stats['db_bytes'] / 1e6:.2f} MB",
        "memories": counts["memories"],
        "episodes": counts["episodes"],
        "profiles": counts["profiles"],
        "memories with a vector of the active model": stats["memories_with_active_vectors"],
        "queue depth": queue.get("depth", 0),
        "retrying": queue.get("retrying", 0),
        "last queue error": queue.get("last_error") or "-",
    }
    return render(
        "health.html",
        health=health,
        stats=stats,
        verdict_kind=_VERDICT_KIND.get(health["status"], ""),
        counts=", ".join(f"{k}: {v}" for k, v in health["counts"].items()),
        fixable=sum(1 for f in health["findings"] if f.get("fixable")),
        store=facts(store),
        chart=timeline_svg(timeline["days"]),
    )
