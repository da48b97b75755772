"""Page bodies that explain: search results with their match_reason, and the health page."""

from __future__ import annotations

from typing import Any

from cpersona.retrieval.explain import describe_factors, describe_gate, describe_search
from cpersona.shapes import EpisodeRow, MemoryRow, ProfileRow
from cpersona.ui.breakdown import channel_shares, gate_scale_svg, shares_svg
from cpersona.ui.chart import timeline_svg
from cpersona.ui.html import badge, esc, snippet, table, url
from cpersona.ui.pages import ANY, View, axis_label, memory_actions

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


def facts(values: dict[str, Any], *, testid: str = "") -> str:
    """A definition list of whatever keys ``values`` has (generic: new fields show up unasked), in words."""
    items = "".join(f"<dt>{esc(k.replace('_', ' '))}</dt><dd>{esc(words(v))}</dd>" for k, v in values.items())
    attr = f' data-testid="{esc(testid)}"' if testid else ""
    return f'<dl class="facts"{attr}>{items}</dl>'


def search_form(
    agents: list[dict[str, Any]],
    agent: str | None,
    query: str,
    project: str | None,
    channel: str | None,
    limit: int,
) -> str:
    """The search box: the same arguments recall takes."""
    opts = "".join(
        f'<option value="{esc(v)}"{" selected" if v == (agent or ANY) else ""}>{esc(t)}</option>'
        for v, t in [(ANY, "all agents")] + [(a["agent_id"], a["agent_id"]) for a in agents]
    )
    return (
        '<form method="get" action="/search" class="search" data-testid="search-form">'
        f'<input type="search" name="q" value="{esc(query)}" placeholder="what would the agent ask?" '
        'data-testid="query" id="q">'
        f'<label>agent <select name="agent">{opts}</select></label>'
        f'<label>project <input name="project" value="{esc(project or "")}" size="10"></label>'
        f'<label>channel <input name="channel" value="{esc(channel or "")}" size="10"></label>'
        f'<label>limit <input name="limit" type="number" min="1" max="{SEARCH_LIMIT_MAX}" value="{limit}"></label>'
        '<button type="submit" data-testid="search-submit">Recall</button></form>'
        '<p class="muted">Runs the real recall (same pipeline and gate as the MCP tool) without counting as a recall. '
        "Results are shown <strong>best first</strong> (the tool returns them best last).</p>"
    )


def search_results(result: dict[str, Any], view: View) -> str:
    """Recall's rows best first: compact cards, the score drawn one click away, the gate in words."""
    trace = result.get("trace")
    found_gate = result.get("gate")
    gate: dict[str, Any] = found_gate if isinstance(found_gate, dict) else {}
    said = "".join(
        f'<p class="{key}" data-testid="{key}">{esc(result[key])}</p>'
        for key in ("explanation", "notice")
        if isinstance(result.get(key), str)
    )
    head = f"<h2>{result.get('count', 0)} result(s)</h2>" + said + _about(result)
    rows = list(reversed(result.get("results") or []))
    cards = "".join(_card(rank, row, gate, trace, view) for rank, row in enumerate(rows, start=1))
    return head + f'<ol class="results" data-testid="results">{cards}</ol>'


def _about(result: dict[str, Any]) -> str:
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
    body = "".join(f'<p class="{esc(k)}">{esc(text)}</p>' for k, text in lines)
    return f'<div class="about" data-testid="recall-facts">{body}</div>'


def _ref_link(row: dict[str, Any]) -> str:
    """The row's ref as a link to its own page (memories and episodes; profiles have none)."""
    kind = row.get("type")
    title = esc(row.get("ref") or f"profile {row.get('project_id', '')}/{row.get('user_id', '')}")
    if kind == "memory":
        return f'<a href="{url("/memory", agent=row["agent_id"], id=row["id"])}">{title}</a>'
    if kind == "episode":
        return f'<a href="{url("/episode", agent=row["agent_id"], id=row["id"])}">{title}</a>'
    if kind == "profile":
        return f'<a href="{url("/profile", agent=row.get("agent_id", ""))}">{title}</a>'
    return title


def _card(rank: int, row: dict[str, Any], gate: dict[str, Any], trace: Any, view: View) -> str:
    kind = row.get("type", "?")
    reason = row.get("match_reason") or {}
    extra = {k: v for k, v in row.items() if k not in _KNOWN_ROW_KEYS}
    where = (
        (
            f"{esc(row.get('agent_id', ''))} · project {axis_label(row.get('project_id', ''))}"
            f" · channel {axis_label(row.get('channel', ''))}"
        )
        if kind != "profile"
        else esc(row.get("agent_id"))
    )
    # The gate judges the query on its best candidate (per row only when keyed on confidence):
    # the scale sits by #1, and in each row's breakdown only for a per-row gate.
    per_row = gate.get("keyed_on") == "confidence"
    scale = gate_scale_svg(gate, reason) if reason and (rank == 1 or per_row) else ""
    if reason:
        shares = channel_shares(str(row.get("ref", "")), trace)
        drawn = shares_svg(shares) if shares else ""
        why = (
            f'<details class="why"><summary data-testid="score-line">{esc(_score_line(reason))} '
            f'<span class="more">· why it ranks here</span></summary>{drawn}'
            + (scale if rank > 1 else "")
            + facts(_reason_words(reason), testid="match-reason")
            + "</details>"
        )
    else:
        why = '<p class="muted">not scored (profile rows are appended, never ranked)</p>'
    actions = memory_actions(row, view) if kind == "memory" else ""
    return (
        f'<li class="result" data-testid="result" data-ref="{esc(row.get("ref", ""))}" data-rank="{rank}">'
        f'<div class="head"><span class="rank">#{rank}{" best" if rank == 1 else ""}</span> '
        f'{badge(kind, "kind")} {_ref_link(row)} <span class="muted">{where}</span>'
        + (f'<div class="actions">{actions}</div>' if actions else "")
        + "</div>"
        + f'<p class="content">{snippet(row.get("content", ""), 280)}</p>'
        + (scale if rank == 1 else "")
        + why
        + (facts(extra, testid="extra") if extra else "")
        + "</li>"
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


def health_page(health: dict[str, Any], stats: dict[str, Any], timeline: dict[str, Any]) -> str:
    """The verdict and findings, embedding state with its fix, queue depth, and the store over time."""
    status = health["status"]
    verdict = (
        f'<p class="verdict">Verdict: <span data-testid="verdict" class="badge {_VERDICT_KIND.get(status, "")}">'
        f'{esc(status)}</span> <span class="muted">{esc(", ".join(f"{k}: {v}" for k, v in health["counts"].items()))}'
        f" · checks run: {len(health['checks_run'])}</span></p>"
    )
    findings = (
        table(
            ["severity", "check", "what", "rows", "fix"],
            [
                [
                    badge(f["severity"], {"critical": "bad", "warn": "warn"}.get(f["severity"], "info")),
                    esc(f["check"]),
                    esc(f["message"]),
                    esc(f.get("count", "")),
                    f"<code>{esc(f.get('fix', ''))}</code>" if f.get("fix") else "",
                ]
                for f in health["findings"]
            ],
            css="findings",
            wide=("what", "fix"),
        )
        if health["findings"]
        else '<p data-testid="no-findings">No findings: every check passed.</p>'
    )
    # Offer the repair only when it can do something: a missing model is not repaired by --fix.
    fixable = sum(1 for f in health["findings"] if f.get("fixable"))
    if fixable:
        findings += (
            f'<p data-testid="fix-hint">Run <code>cpersona checkup --fix</code> to repair the {fixable} '
            f"finding(s) it can fix.</p>"
        )
    emb = stats["embedding"]
    fix = emb.get("runbook")
    embedding = (
        f'<p>State: <span data-testid="embedding-state" class="badge '
        f'{"ok" if emb["state"] == "healthy" else "warn"}">{esc(emb["state"])}</span> · mode {esc(emb["mode"])}'
        + (f" · model {esc(emb['model_id'])} ({esc(emb.get('dimension'))}-d)" if emb.get("model_id") else "")
        + "</p>"
        + (f"<p>{esc(emb.get('reason', ''))}</p>" if emb.get("reason") else "")
        + (f'<p>How to fix: <code data-testid="embedding-fix">{esc(fix)}</code></p>' if fix else "")
    )
    queue = stats["queue"]
    counts = stats["counts"]
    store = facts(
        {
            "database": stats["db_path"],
            "size": f"{stats['db_bytes'] / 1e6:.2f} MB",
            "memories": counts["memories"],
            "episodes": counts["episodes"],
            "profiles": counts["profiles"],
            "memories with a vector of the active model": stats["memories_with_active_vectors"],
            "queue depth": queue.get("depth", 0),
            "retrying": queue.get("retrying", 0),
            "last queue error": queue.get("last_error") or "-",
        },
        testid="store-facts",
    )
    return (
        f"{verdict}<h2>Findings</h2>{findings}<h2>Embeddings</h2>{embedding}<h2>Store</h2>{store}"
        f"<h2>Memories stored per day</h2>{timeline_svg(timeline['days'])}"
        '<p class="muted">Counts rows still stored, by the day they were stored (UTC); the darker part holds '
        "a vector.</p>"
    )
