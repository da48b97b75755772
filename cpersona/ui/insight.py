"""Page bodies that explain: search results with their match_reason, and the health page."""

from __future__ import annotations

import json
from typing import Any

from cpersona.retrieval.explain import describe_factors, describe_gate, describe_search
from cpersona.shapes import EpisodeRow, MemoryRow, ProfileRow
from cpersona.ui.chart import timeline_svg
from cpersona.ui.html import badge, esc, snippet, table, url
from cpersona.ui.pages import ANY, View, axis_label, memory_actions

#: Row keys every page already shows; anything else a recall row carries (a gate verdict, say) is listed too.
_KNOWN_ROW_KEYS = (
    set(MemoryRow.__annotations__) | set(EpisodeRow.__annotations__) | set(ProfileRow.__annotations__)
)
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
}


def _value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def facts(values: dict[str, Any], *, testid: str = "") -> str:
    """A definition list of whatever keys ``values`` has (generic: new fields show up unasked)."""
    items = "".join(f"<dt>{esc(k)}</dt><dd>{esc(_value(v))}</dd>" for k, v in values.items())
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
        f'<label>limit <input name="limit" type="number" min="1" max="100" value="{limit}"></label>'
        '<button type="submit" data-testid="search-submit">Recall</button></form>'
        '<p class="muted">Runs the real recall (same pipeline and gate as the MCP tool) without counting as a recall. '
        "Results are shown <strong>best first</strong> (the tool returns them best last).</p>"
    )


def search_results(result: dict[str, Any], view: View) -> str:
    """Recall's rows best first, each with its match_reason and any extra verdict fields."""
    # The gate and the search in words (the same sentences the CLI prints); anything else generic.
    about: dict[str, Any] = {}
    if isinstance(result.get("gate"), dict):
        about["gate"] = describe_gate(result["gate"])
    if isinstance(result.get("search"), dict):
        about["search"] = describe_search(result["search"], result.get("mode"))
    advisory = result.get("advisory")
    if isinstance(advisory, dict):
        fix = f" Fix: {advisory['runbook']}" if advisory.get("runbook") else ""
        about["advisory"] = f"{advisory.get('reason') or 'search is degraded'}.{fix}"
    about.update({k: v for k, v in result.items() if k not in _SHOWN_RESPONSE_KEYS})
    said = "".join(
        f'<p class="{key}" data-testid="{key}">{esc(result[key])}</p>'
        for key in ("explanation", "notice")
        if isinstance(result.get(key), str)
    )
    head = f"<h2>{result.get('count', 0)} result(s)</h2>" + said + facts(about, testid="recall-facts")
    rows = list(reversed(result.get("results") or []))
    cards = []
    for rank, row in enumerate(rows, start=1):
        kind = row.get("type", "?")
        reason = row.get("match_reason") or {}
        extra = {k: v for k, v in row.items() if k not in _KNOWN_ROW_KEYS}
        title = esc(row.get("ref") or f"profile {row.get('project_id', '')}/{row.get('user_id', '')}")
        where = (
            (
                f"{esc(row.get('agent_id', ''))} · project {axis_label(row.get('project_id', ''))}"
                f" · channel {axis_label(row.get('channel', ''))}"
            )
            if kind != "profile"
            else esc(row.get("agent_id"))
        )
        link = (
            f'<a href="{url("/memory", agent=row["agent_id"], id=row["id"])}">{title}</a>'
            if kind == "memory"
            else title
        )
        actions = memory_actions(row, view) if kind == "memory" else ""
        cards.append(
            f'<li class="result" data-testid="result" data-ref="{esc(row.get("ref", ""))}" data-rank="{rank}">'
            f'<div class="rank">#{rank}{" · best" if rank == 1 else ""}</div>'
            f'<div class="body"><p>{badge(kind, "kind")} {link} <span class="muted">{where}</span></p>'
            f'<p class="content">{snippet(row.get("content", ""), 600)}</p>'
            + (
                "<details open><summary>why it ranks here</summary>"
                + facts(_reason_words(reason), testid="match-reason")
                + "</details>"
                if reason
                else '<p class="muted">not scored (profile rows are appended, never ranked)</p>'
            )
            + (facts(extra, testid="extra") if extra else "")
            + f"<p>{actions}</p></div></li>"
        )
    return head + f'<ol class="results" data-testid="results">{"".join(cards)}</ol>'


def _reason_words(reason: dict[str, Any]) -> dict[str, Any]:
    """match_reason with its factors as one line (base × each factor = score)."""
    shown = {k: v for k, v in reason.items() if k != "factors"}
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
        )
        if health["findings"]
        else '<p data-testid="no-findings">No findings: every check passed.</p>'
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
        "a vector. Run <code>cpersona checkup --fix</code> to repair what the checks can fix.</p>"
    )
