"""Page bodies of the browser view: agents, memories, episodes, profiles, confirmations.

Each function takes ``Memory`` results (plain dicts) and returns escaped HTML; the handlers
in ``cpersona.ui.app`` call the API and wrap these in ``html.layout``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from cpersona.ui.html import badge, esc, hidden, post_button, snippet, table, url

#: Value of an axis filter meaning "any" (an empty value means the '' axis: global pool / no channel).
ANY = "*"


@dataclass(frozen=True)
class View:
    """What every page needs to know about the request."""

    csrf: str
    read_only: bool


@dataclass(frozen=True)
class Filters:
    """The memory / episode list filters, as given in the query string (None = any)."""

    agent: str | None = None
    project: str | None = None
    channel: str | None = None
    locked: bool | None = None
    embedded: bool | None = None
    offset: int = 0
    size: int = 25

    def params(self, **changes: Any) -> dict[str, Any]:
        """Query parameters that reproduce these filters (with ``changes`` applied)."""
        tri = {True: "yes", False: "no", None: None}
        values: dict[str, Any] = {
            "agent": self.agent,
            "project": self.project,
            "channel": self.channel,
            "locked": tri[self.locked],
            "embedded": tri[self.embedded],
            "offset": self.offset or None,
            "size": self.size if self.size != 25 else None,
        }
        values.update(changes)
        return values


def axis_label(value: str) -> str:
    """How an axis value reads on a page ('' is the global pool / no channel)."""
    return esc(value) if value else '<span class="muted">(none)</span>'


def agents_page(agents: list[dict[str, Any]]) -> str:
    """Every agent with its counts and (project, channel) axes."""
    if not agents:
        return '<p data-testid="no-agents">Nothing is stored yet. Agents appear here after their first store.</p>'
    rows = []
    for a in agents:
        name = a["agent_id"]
        axes = "".join(
            f'<li><a href="{url("/memories", agent=name, project=x["project_id"], channel=x["channel"])}">'
            f"project {axis_label(x['project_id'])} · channel {axis_label(x['channel'])}</a> "
            f'<span class="muted">{x["memories"]} memories, {x["episodes"]} episodes</span></li>'
            for x in a["axes"]
        )
        links = (
            f'<a href="{url("/memories", agent=name)}">memories</a> · <a href="{url("/episodes", agent=name)}">episodes</a>'
            f' · <a href="{url("/profile", agent=name)}">profile</a> · <a href="{url("/search", agent=name)}">search</a>'
        )
        rows.append(
            [
                f'<strong data-testid="agent">{esc(name)}</strong><br>{links}',
                str(a["memories"]),
                str(a["episodes"]),
                f"{a['embedded_memories']} / {a['memories']}",
                str(a["locked_memories"]),
                str(a["profiles"]),
                f'<ul class="axes">{axes}</ul>',
            ]
        )
    return table(
        ["agent", "memories", "episodes", "embedded", "locked", "profiles", "project · channel"],
        rows,
        css="agents",
        wide=("agent", "project · channel"),
    )


def _select(name: str, label: str, options: list[tuple[str, str]], current: str | None) -> str:
    chosen = ANY if current is None else current
    opts = "".join(
        f'<option value="{esc(v)}"{" selected" if v == chosen else ""}>{esc(t)}</option>' for v, t in options
    )
    return f'<label>{esc(label)} <select name="{esc(name)}" class="autosubmit">{opts}</select></label>'


def _tri(value: bool | None) -> str | None:
    return None if value is None else ("yes" if value else "no")


def filter_form(path: str, f: Filters, agents: list[dict[str, Any]], *, memories: bool) -> str:
    """The filter bar above a listing (plain GET form; ui.js submits it when a select changes)."""
    agent_opts = [(ANY, "all agents")] + [(a["agent_id"], a["agent_id"]) for a in agents]
    projects = sorted(
        {x["project_id"] for a in agents for x in a["axes"] if f.agent in (None, a["agent_id"])}
    )
    channels = sorted({x["channel"] for a in agents for x in a["axes"] if f.agent in (None, a["agent_id"])})
    axis = [(ANY, "any")]
    parts = [
        _select("agent", "agent", agent_opts, f.agent),
        _select("project", "project", axis + [(p, p or "(none)") for p in projects], f.project),
        _select("channel", "channel", axis + [(c, c or "(none)") for c in channels], f.channel),
    ]
    yes_no = [(ANY, "any"), ("yes", "yes"), ("no", "no")]
    if memories:
        parts.append(_select("locked", "locked", yes_no, _tri(f.locked)))
    parts.append(_select("embedded", "embedded", yes_no, _tri(f.embedded)))
    return (
        f'<form method="get" action="{esc(path)}" class="filters" data-testid="filters">{"".join(parts)}'
        '<button type="submit">Filter</button></form>'
    )


def pager(path: str, f: Filters, total: int, shown: int, *, testid: str = "pager") -> str:
    """'rows a–b of n' with previous / next links (shown above and below a listing)."""
    if total == 0:
        return f'<p class="muted" data-testid="{esc(testid)}">No rows match.</p>'
    first, last = f.offset + 1, f.offset + shown
    prev_link = (
        f'<a href="{url(path, **f.params(offset=max(0, f.offset - f.size) or None))}" rel="prev">← newer</a>'
        if f.offset > 0
        else ""
    )
    next_link = (
        f'<a href="{url(path, **f.params(offset=f.offset + f.size))}" rel="next">older →</a>'
        if last < total
        else ""
    )
    return f'<p class="pager" data-testid="{esc(testid)}">{prev_link} rows {first}–{last} of {total} {next_link}</p>'


def moment(iso: str | None) -> str:
    """An ISO-8601 UTC time as it reads in a list: '2026-03-04 09:15:00' (no zone, no fraction)."""
    return (iso or "")[:19].replace("T", " ")


def when(row: dict[str, Any]) -> str:
    """When a memory happened, and under it when it was stored if that was another minute (an import,
    a backfill: every row would otherwise read the time of the import)."""
    happened, stored = moment(row.get("timestamp")), moment(row["created_at"])
    rid = esc(row["id"])
    if not happened or happened[:16] == stored[:16]:
        return f'<span data-testid="happened-{rid}">{esc(happened or stored)}</span>'
    return (
        f'<span data-testid="happened-{rid}">{esc(happened)}</span><br>'
        f'<span class="muted" data-testid="stored-{rid}">stored {esc(stored)}</span>'
    )


def _state_badges(row: dict[str, Any]) -> str:
    out = badge("locked", "locked") if row.get("locked") else ""
    return out + (badge("embedded", "ok") if row.get("embedded") else badge("not embedded", "warn"))


def memory_actions(row: dict[str, Any], view: View) -> str:
    """Edit / lock / unlock / delete controls for one memory (nothing when read-only)."""
    if view.read_only:
        return ""
    key = {"agent": row["agent_id"], "id": row["id"]}
    lock = (
        post_button("/memory/unlock", "Unlock", view.csrf, key, name=f"unlock-{row['id']}")
        if row.get("locked")
        else post_button("/memory/lock", "Lock", view.csrf, key, name=f"lock-{row['id']}")
    )
    return (
        f'<a href="{url("/memory", **key)}" data-testid="edit-{row["id"]}">Edit</a> {lock} '
        f'<a href="{url("/memory/delete", **key)}" class="danger" data-testid="delete-{row["id"]}">Delete</a>'
    )


def memories_page(result: dict[str, Any], f: Filters, agents: list[dict[str, Any]], view: View) -> str:
    """A filtered page of memories, newest first."""
    rows = [
        [
            f'<a href="{url("/memory", agent=r["agent_id"], id=r["id"])}">{esc(r["ref"])}</a>',
            when(r),
            esc(r["agent_id"]),
            axis_label(r["project_id"]),
            axis_label(r["channel"]),
            f'<span class="content" data-testid="content-{r["id"]}">{snippet(r["content"])}</span>',
            _state_badges(r),
            memory_actions(r, view),
        ]
        for r in result["items"]
    ]
    listing = (
        table(
            ["ref", "happened (UTC)", "agent", "project", "channel", "content", "state", ""],
            rows,
            css="memories",
            wide=("content",),
            nowrap=("ref", "happened (UTC)", "state", ""),
        )
        if rows
        else ""
    )
    return (
        filter_form("/memories", f, agents, memories=True)
        + pager("/memories", f, result["total"], result["count"])
        + listing
        + (pager("/memories", f, result["total"], result["count"], testid="pager-bottom") if rows else "")
    )


def memory_page(row: dict[str, Any], view: View, error: str | None = None) -> str:
    """One memory in full, with its edit form."""
    fields = [
        ("ref", row["ref"]),
        ("agent", row["agent_id"]),
        ("project", row["project_id"] or "(none)"),
        ("channel", row["channel"] or "(none)"),
        ("msg_id", row["msg_id"] or "-"),
        ("happened (timestamp)", row["timestamp"]),
        ("stored (created_at)", row["created_at"]),
        ("recalled", f"{row['recall_count']} time(s), last {row['last_recalled_at'] or 'never'}"),
        ("embedding", row["embedding_model"] or "none yet"),
        ("source", json.dumps(row["source"], ensure_ascii=False) if row["source"] else "-"),
        ("metadata", json.dumps(row["metadata"], ensure_ascii=False) if row["metadata"] else "-"),
    ]
    dl = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in fields)
    body = (
        f'{message_box(error)}<p>{_state_badges(row)}</p><dl class="fields">{dl}</dl>'
        f'<h2>Content</h2><pre class="content" data-testid="full-content">{esc(row["content"])}</pre>'
    )
    if view.read_only:
        return body
    key = {"agent": row["agent_id"], "id": row["id"]}
    note = (
        '<p class="notice warn">This memory is locked: unlock it before editing.</p>'
        if row.get("locked")
        else ""
    )
    return body + (
        f"<h2>Edit</h2>{note}"
        f'<form method="post" action="/memory/edit" data-testid="edit-form">{hidden({"csrf": view.csrf, **key})}'
        f'<textarea name="content" rows="8" data-testid="edit-content">{esc(row["content"])}</textarea>'
        '<button type="submit" data-testid="edit-submit">Review change</button></form>'
        f'<div class="actions">{memory_actions(row, view)}</div>'
    )


def message_box(error: str | None) -> str:
    """An error notice (empty when there is none)."""
    return f'<p class="notice error" role="alert" data-testid="error">{esc(error)}</p>' if error else ""


def done_box(text: str | None) -> str:
    """A notice saying what the last change did (after a redirect)."""
    return f'<p class="notice ok" role="status" data-testid="done">{esc(text)}</p>' if text else ""


def agent_notice_box(text: str | None) -> str:
    """The notice for an agent id with no rows at all (a typo must not look like an empty memory)."""
    return f'<p class="notice" role="status" data-testid="notice">{esc(text)}</p>' if text else ""


def confirm_page(
    question: str, preview: str, action: str, fields: dict[str, Any], view: View, cancel: str
) -> str:
    """The confirmation step every edit and delete goes through."""
    return (
        f'<p data-testid="question">{esc(question)}</p>{preview}'
        f'<form method="post" action="{esc(action)}" data-testid="confirm-form">'
        f"{hidden({'csrf': view.csrf, **fields, 'confirmed': '1'})}"
        f'<button type="submit" class="danger" data-testid="confirm">Yes, {esc(question.split()[0].lower())}</button> '
        f'<a href="{cancel}" data-testid="cancel">Cancel</a></form>'
    )


def episodes_page(result: dict[str, Any], f: Filters, agents: list[dict[str, Any]], view: View) -> str:
    """A filtered page of episodes, newest first."""
    rows = []
    for r in result["items"]:
        delete = (
            ""
            if view.read_only
            else (
                f'<a href="{url("/episode/delete", agent=r["agent_id"], id=r["id"])}" class="danger" '
                f'data-testid="delete-ep-{r["id"]}">Delete</a>'
            )
        )
        span = (
            f"{r['start_time'] or '?'} → {r['end_time'] or '?'}" if r["start_time"] or r["end_time"] else "-"
        )
        rows.append(
            [
                f'<a href="{url("/episode", agent=r["agent_id"], id=r["id"])}">{esc(r["ref"])}</a>',
                esc(moment(r["created_at"])),
                esc(r["agent_id"]),
                axis_label(r["project_id"]),
                axis_label(r["channel"]),
                f'<span data-testid="summary-{r["id"]}">{snippet(r["summary"])}</span><br>'
                f'<span class="muted">{esc(", ".join(r["keywords"]))}</span>',
                esc(span),
                (badge("resolved", "ok") if r["resolved"] else "")
                + (badge("embedded", "ok") if r["embedded"] else badge("not embedded", "warn")),
                delete,
            ]
        )
    listing = (
        table(
            ["ref", "archived (UTC)", "agent", "project", "channel", "summary", "session", "state", ""],
            rows,
            css="episodes",
            wide=("summary",),
            nowrap=("ref", "archived (UTC)", "state", ""),
        )
        if rows
        else ""
    )
    return (
        filter_form("/episodes", f, agents, memories=False)
        + pager("/episodes", f, result["total"], result["count"])
        + listing
        + (pager("/episodes", f, result["total"], result["count"], testid="pager-bottom") if rows else "")
    )


def episode_page(row: dict[str, Any], view: View) -> str:
    """One episode in full (the page an ``ep:`` ref links to), with its delete control."""
    fields = [
        ("ref", row["ref"]),
        ("agent", row["agent_id"]),
        ("project", row["project_id"] or "(none)"),
        ("channel", row["channel"] or "(none)"),
        ("keywords", ", ".join(row["keywords"]) or "-"),
        ("session", f"{row['start_time'] or '?'} → {row['end_time'] or '?'}"),
        ("archived (created_at)", row["created_at"]),
        ("resolved", "yes" if row["resolved"] else "no"),
        ("embedding", row["embedding_model"] or "none yet"),
    ]
    dl = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in fields)
    body = (
        f'<dl class="fields">{dl}</dl>'
        f'<h2>Summary</h2><pre class="content" data-testid="full-summary">{esc(row["summary"])}</pre>'
    )
    if view.read_only:
        return body
    delete = url("/episode/delete", agent=row["agent_id"], id=row["id"])
    return (
        body + f'<p><a href="{delete}" class="danger" data-testid="delete-ep-{esc(row["id"])}">Delete</a></p>'
    )


def profiles_page(agent: str, result: dict[str, Any]) -> str:
    """Every profile of one agent."""
    if not result["items"]:
        return f'<p data-testid="no-profile">{esc(agent)} has no profile.</p>'
    return "".join(
        f'<section class="profile"><h2>project {axis_label(p["project_id"])} · user {axis_label(p["user_id"])}</h2>'
        f'<p class="muted">updated {esc(p["updated_at"])}</p><pre data-testid="profile">{esc(p["content"])}</pre>'
        "</section>"
        for p in result["items"]
    )


def login_page(csrf: str, error: str | None, *, acl: bool = False) -> str:
    """The token form (``acl``: the view takes ACL client tokens, not CPERSONA_AUTH_TOKEN)."""
    which = (
        "your client token (from `cpersona acl add-client`; you see only what its grants allow)"
        if acl
        else "the token (CPERSONA_AUTH_TOKEN)"
    )
    return (
        f"{message_box(error)}<p>This view is protected: enter {esc(which)}.</p>"
        f'<form method="post" action="/login">{hidden({"csrf": csrf})}'
        '<input type="password" name="token" autocomplete="current-password" data-testid="token" autofocus>'
        '<button type="submit">Log in</button></form>'
    )
