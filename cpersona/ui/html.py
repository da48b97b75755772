"""Plain-Python HTML building for the browser view: every value goes through ``esc``.

No template engine: pages are f-strings over small helpers, and everything that came from
the store or the request is escaped with ``html.escape`` (quotes included) on the way in.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlencode


def esc(value: Any) -> str:
    """Escape any value for HTML text or a quoted attribute."""
    return html.escape("" if value is None else str(value), quote=True)


def url(path: str, **params: Any) -> str:
    """``path`` with the query parameters that are not None ('' is kept: the empty axis), escaped."""
    query = urlencode({k: v for k, v in params.items() if v is not None})
    return esc(f"{path}?{query}" if query else path)


def hidden(fields: Mapping[str, Any]) -> str:
    """Hidden inputs for ``fields``."""
    return "".join(f'<input type="hidden" name="{esc(k)}" value="{esc(v)}">' for k, v in fields.items())


def post_button(
    action: str, label: str, csrf: str, fields: Mapping[str, Any], *, css: str = "", name: str = ""
) -> str:
    """A one-button POST form carrying the CSRF token."""
    test_id = f' data-testid="{esc(name)}"' if name else ""
    return (
        f'<form method="post" action="{esc(action)}" class="inline">{hidden({"csrf": csrf, **fields})}'
        f'<button type="submit" class="{esc(css)}"{test_id}>{esc(label)}</button></form>'
    )


def table(
    head: Iterable[str],
    rows: Iterable[Iterable[str]],
    *,
    css: str = "",
    wide: Iterable[str] = (),
    nowrap: Iterable[str] = (),
) -> str:
    """A table; cells are already HTML (escape before passing).

    Each cell carries its column's name (``data-label``): on a narrow screen the stylesheet
    turns each row into a card, the short cells flowing side by side after their names and
    the ``wide`` columns (the text, say) on a line of their own; empty cells are hidden there.
    On a wide screen the ``nowrap`` columns (times, refs, buttons) keep to one line.
    """
    full, unbroken = set(wide), set(nowrap)
    labels = list(head)
    th = "".join(f"<th>{esc(h)}</th>" for h in labels)

    def cell(i: int, content: str) -> str:
        label = labels[i] if i < len(labels) else ""
        flags = (("wide", label in full), ("nowrap", label in unbroken), ("empty", not content.strip()))
        classes = " ".join(c for c, on in flags if on)
        css_attr = f' class="{classes}"' if classes else ""
        return f'<td data-label="{esc(label)}"{css_attr}>{content}</td>'

    body = "".join("<tr>" + "".join(cell(i, c) for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f'<table class="{esc(css)} stack"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


def badge(text: str, kind: str) -> str:
    """A small coloured label."""
    return f'<span class="badge {esc(kind)}">{esc(text)}</span>'


def snippet(text: str, limit: int = 280) -> str:
    """The first ``limit`` characters on one line, escaped."""
    flat = " ".join(str(text).split())
    return esc(flat if len(flat) <= limit else flat[: limit - 1] + "…")


def message(text: str | None, kind: str = "error") -> str:
    """A notice box (empty when there is no text)."""
    return f'<p class="notice {esc(kind)}" role="alert">{esc(text)}</p>' if text else ""


NAV = (
    ("/", "Agents"),
    ("/memories", "Memories"),
    ("/episodes", "Episodes"),
    ("/search", "Search"),
    ("/health", "Health"),
)


def layout(
    title: str, body: str, *, active: str, csrf: str, read_only: bool, authenticated_by_login: bool
) -> str:
    """The page frame: head, navigation, the read-only banner, the body."""
    links = "".join(
        f'<a href="{esc(path)}"{" class=active" if path == active else ""}>{esc(label)}</a>'
        for path, label in NAV
    )
    logout = post_button("/logout", "Log out", csrf, {}, css="link") if authenticated_by_login else ""
    banner = '<p class="notice info">Read-only view: changes are hidden and refused.</p>' if read_only else ""
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} · cpersona</title>"
        '<link rel="stylesheet" href="/static/ui.css"><script src="/static/ui.js" defer></script></head>'
        f'<body><header><strong class="brand">cpersona</strong><nav>{links}</nav>{logout}</header>'
        f"<main>{banner}<h1>{esc(title)}</h1>{body}</main></body></html>"
    )
