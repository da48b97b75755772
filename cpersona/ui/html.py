"""The browser view's one way to HTML: Jinja2 templates (``templates/``) with autoescape on.

Every ``{{ value }}`` in a template is escaped (``html.escape``, quotes included), so nothing that
came from the store or the request can become markup. Markup gets into a page only as the output
of another template or macro (``render`` / ``macro``): this module is the one place that marks text
as safe, and tests/ui/test_templates.py fails when a template uses ``|safe`` or other code calls
``Markup(``. Python keeps the data work (filters, pagers, chart geometry); templates keep the tags.
"""

from __future__ import annotations

import html
import re
from datetime import datetime
from typing import Any
from urllib.parse import quote_plus

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

#: Characters ``quote_plus`` leaves as they are.
_PLAIN = re.compile(r"[A-Za-z0-9_.~-]*")


def _escape(value: Any) -> Any:
    """Every template value on its way out, before autoescape: markup passes, None reads ''.

    Autoescape then escapes the rest with markupsafe, whose bytes equal ``html.escape``'s except for
    the two quotes (``&#39;`` / ``&#34;``): a value holding one is escaped here with ``html.escape``
    instead, so the view sends the bytes it always sent (``&#x27;``). Most values hold no quote, and
    leaving them to autoescape keeps a 200-row page fast.
    """
    if hasattr(value, "__html__"):
        return value
    text = "" if value is None else value if isinstance(value, str) else str(value)
    if "'" in text or '"' in text:
        return Markup(html.escape(text, quote=True))
    return text


def url(path: str, **params: Any) -> str:
    """``path`` with the query parameters that are not None ('' is kept: the empty axis); templates escape it.

    The same string ``urlencode`` makes; a value of plain characters (ids, most agent names) skips
    the quoting, which is most of a 200-row page's cost otherwise (three links a row).
    """
    query = "&".join(
        f"{k}={text if _PLAIN.fullmatch(text) else quote_plus(text)}"
        for k, v in params.items()
        if v is not None
        for text in (v if isinstance(v, str) else str(v),)
    )
    return f"{path}?{query}" if query else path


def snippet(text: Any, limit: int = 280) -> str:
    """The first ``limit`` characters on one line."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def moment(iso: str | None) -> str:
    """A stored (UTC) time as a person reads it: local time to the minute, '2026-03-04 10:15' (short
    enough not to wrap on a phone); text that is not a time as it is, without a fraction."""
    if not iso:
        return ""
    try:
        return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return iso[:19].replace("T", " ")


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """'1 memory', '2 memories': a count and its noun in the right number (the view may not import
    cpersona.core.text, which the CLI's twin of this lives in: tests/test_layers.py)."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


#: No markup at all (a drawing that has nothing to show).
NOTHING = Markup("")
#: How the '' axis value reads (the global pool / no channel).
NONE = Markup('<span class="muted">(none)</span>')

NAV = (
    ("/", "Agents"),
    ("/memories", "Memories"),
    ("/episodes", "Episodes"),
    ("/search", "Search"),
    ("/health", "Health"),
)

_ENV = Environment(
    loader=PackageLoader("cpersona.ui", "templates"),
    autoescape=True,
    finalize=_escape,
    undefined=StrictUndefined,  # a misspelt name fails the test that renders it, not the reader
    trim_blocks=True,
    lstrip_blocks=True,
    auto_reload=False,  # package data: compiled once per process, no stat per page
)
_ENV.globals.update(url=url, moment=moment, counted=counted, nav=NAV, NONE=NONE)
_ENV.filters.update(snippet=snippet, joined=lambda values, sep=", ": sep.join(str(v) for v in values))


def render(name: str, **context: Any) -> Markup:
    """Template ``name`` rendered with ``context``: markup another template may embed as is."""
    return Markup(_ENV.get_template(name).render(**context))


def macro(name: str, *args: Any, **kwargs: Any) -> Markup:
    """One macro of ``macros.html`` (a badge, a notice box, ...) called from Python."""
    return Markup(getattr(_ENV.get_template("macros.html").module, name)(*args, **kwargs))


def layout(
    title: str, body: str, *, active: str, csrf: str, read_only: bool, authenticated_by_login: bool
) -> Markup:
    """The page frame: head, navigation, the read-only banner, the body (markup from ``render``)."""
    return render("layout.html", **locals())  # every argument is a template variable
