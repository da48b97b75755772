"""Page bodies of the browser view: agents, memories, episodes, profiles, confirmations.

Each function takes ``Memory`` results (plain dicts), shapes what its template needs and
renders it (templates/*.html, escaped by default: see ``cpersona.ui.html``); the handlers in
``cpersona.ui.app`` call the API and wrap these in ``html.layout``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from cpersona.ui.html import counted, macro, moment, render, url
from cpersona.ui.relations import Relations

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


def agents_page(agents: list[dict[str, Any]]) -> Markup:
    """Every agent with its counts and (project, channel) axes."""
    return render("agents.html", agents=agents)


@dataclass(frozen=True)
class Select:
    """One filter select: its name (also its label), (value, text) options, and the chosen value."""

    name: str
    options: list[tuple[str, str]]
    chosen: str


def _select(name: str, options: list[tuple[str, str]], current: str | None) -> Select:
    return Select(name, options, ANY if current is None else current)


def _tri(value: bool | None) -> str | None:
    return None if value is None else ("yes" if value else "no")


def filter_selects(f: Filters, agents: list[dict[str, Any]], *, memories: bool) -> list[Select]:
    """The filter bar's selects above a listing (plain GET form; ui.js submits it when a select changes)."""
    agent_opts = [(ANY, "all agents")] + [(a["agent_id"], a["agent_id"]) for a in agents]
    mine = [x for a in agents for x in a["axes"] if f.agent in (None, a["agent_id"])]
    projects = sorted({x["project_id"] for x in mine})
    channels = sorted({x["channel"] for x in mine})
    axis = [(ANY, "any")]
    selects = [
        _select("agent", agent_opts, f.agent),
        _select("project", axis + [(p, p or "(none)") for p in projects], f.project),
        _select("channel", axis + [(c, c or "(none)") for c in channels], f.channel),
    ]
    yes_no = [(ANY, "any"), ("yes", "yes"), ("no", "no")]
    if memories:
        selects.append(_select("locked", yes_no, _tri(f.locked)))
    selects.append(_select("embedded", yes_no, _tri(f.embedded)))
    return selects


@dataclass(frozen=True)
class PagerState:
    """'rows first–last of total' with the newer / older links ('' when there is none)."""

    testid: str
    total: int
    first: int
    last: int
    prev: str
    next: str


def pager(path: str, f: Filters, total: int, shown: int, *, testid: str = "pager") -> PagerState:
    """Where a listing page stands (shown above and below it)."""
    first, last = f.offset + 1, f.offset + shown
    prev_link = url(path, **f.params(offset=max(0, f.offset - f.size) or None)) if f.offset > 0 else ""
    next_link = url(path, **f.params(offset=f.offset + f.size)) if last < total else ""
    return PagerState(testid, total, first, last, prev_link, next_link)


def _listing(
    name: str, path: str, result: dict[str, Any], f: Filters, agents: list[dict[str, Any]], view: View
) -> Markup:
    total, count = result["total"], result["count"]
    return render(
        name,
        rows=result["items"],
        view=view,
        selects=filter_selects(f, agents, memories=path == "/memories"),
        top=pager(path, f, total, count),
        bottom=pager(path, f, total, count, testid="pager-bottom"),
    )


def memories_page(result: dict[str, Any], f: Filters, agents: list[dict[str, Any]], view: View) -> Markup:
    """A filtered page of memories, newest first."""
    return _listing("memories.html", "/memories", result, f, agents, view)


def episodes_page(result: dict[str, Any], f: Filters, agents: list[dict[str, Any]], view: View) -> Markup:
    """A filtered page of episodes, newest first."""
    return _listing("episodes.html", "/episodes", result, f, agents, view)


def memory_facts(row: dict[str, Any]) -> list[tuple[str, Any]]:
    """The (name, value) list at the top of a memory's page."""
    return [
        ("ref", row["ref"]),
        ("agent", row["agent_id"]),
        ("project", row["project_id"] or "(none)"),
        ("channel", row["channel"] or "(none)"),
        ("msg_id", row["msg_id"] or "-"),
        ("happened (timestamp, local time)", moment(row["timestamp"])),
        ("stored (created_at, local time)", moment(row["created_at"])),
        (
            "recalled",
            f"{counted(row['recall_count'], 'time')}, last {moment(row['last_recalled_at']) or 'never'}",
        ),
        ("embedding", row["embedding_model"] or "none yet"),
        ("source", json.dumps(row["source"], ensure_ascii=False) if row["source"] else "-"),
        ("metadata", json.dumps(row["metadata"], ensure_ascii=False) if row["metadata"] else "-"),
    ]


def memory_page(
    row: dict[str, Any], view: View, error: str | None = None, *, relations: Relations | None = None
) -> Markup:
    """One memory in full: its supersede chain and declared links (``relations``), its edit form."""
    return render(
        "memory.html", row=row, facts=memory_facts(row), view=view, error=error, relations=relations
    )


def episode_page(row: dict[str, Any], view: View) -> Markup:
    """One episode in full (the page an ``ep:`` ref links to), with its delete control."""
    facts = [
        ("ref", row["ref"]),
        ("agent", row["agent_id"]),
        ("project", row["project_id"] or "(none)"),
        ("channel", row["channel"] or "(none)"),
        ("keywords", ", ".join(row["keywords"]) or "-"),
        ("session", f"{row['start_time'] or '?'} → {row['end_time'] or '?'}"),
        ("archived (created_at, local time)", moment(row["created_at"])),
        ("resolved", "yes" if row["resolved"] else "no"),
        ("embedding", row["embedding_model"] or "none yet"),
    ]
    return render("episode.html", row=row, facts=facts, view=view)


def message_box(error: str | None) -> Markup:
    """An error notice (empty when there is none)."""
    return macro("message_box", error)


def done_box(text: str | None) -> Markup:
    """A notice saying what the last change did (after a redirect)."""
    return macro("done_box", text)


def agent_notice_box(text: str | None) -> Markup:
    """The notice for an agent id with no rows at all (a typo must not look like an empty memory)."""
    return macro("agent_notice_box", text)


def error_body(text: str, back: str | None) -> Markup:
    """A refusal: the message and a link back."""
    return macro("error_page", text, back)


def confirm_page(
    question: str,
    action: str,
    fields: dict[str, Any],
    view: View,
    cancel: str,
    *,
    before: str,
    after: str | None = None,
) -> Markup:
    """The confirmation step every edit (``before`` and ``after``) and delete (``before``) goes through."""
    return render("confirm.html", **locals())  # every argument is a template variable


def profiles_page(agent: str, result: dict[str, Any]) -> Markup:
    """Every profile of one agent."""
    return render("profiles.html", agent=agent, profiles=result["items"])


def login_page(csrf: str, error: str | None, *, acl: bool = False) -> Markup:
    """The token form (``acl``: the view takes ACL client tokens, not CPERSONA_AUTH_TOKEN)."""
    return render("login.html", csrf=csrf, error=error, acl=acl)
