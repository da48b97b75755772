"""The browser view escapes by default: templates with autoescape on, and markup only through a named path.

The rules a reviewer relies on, checked on the source: no template turns escaping off (``|safe``,
``{% autoescape false %}``), no Python module builds ``Markup(`` or a second Jinja environment except
those named in ``MARKUP_ALLOWED`` (cpersona/ui/html.py: the escaper, the renderer and two constants), and
every template ships in the wheel (pyproject's package-data covers it). Then the behaviour: a value
full of markup characters comes out escaped, with the bytes the view always sent.
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from importlib import resources
from pathlib import Path
from urllib.parse import urlencode

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cpersona.ui import html, insight, pages

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "cpersona"
TEMPLATES = PACKAGE / "ui" / "templates"
#: The only modules that may mark text as markup or make a Jinja environment (each use reviewed).
MARKUP_ALLOWED = {"cpersona/ui/html.py"}

_UNSAFE_TEMPLATE = re.compile(r"\|\s*safe\b|autoescape\s+(false|False)|\|\s*forceescape\b")
_MARKUP_CODE = re.compile(
    r"\bMarkup\s*\(|\bEnvironment\s*\(|\bjinja2\.Template\b|from jinja2 import[^\n]*\bTemplate\b"
)
HOSTILE = "<script>alert('x')</script> & \"quoted\""
ESCAPED = "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; &quot;quoted&quot;"


def unsafe_template_uses(text: str) -> list[str]:
    """Every place in a template's source that turns escaping off."""
    return [m.group(0) for m in _UNSAFE_TEMPLATE.finditer(text)]


def markup_calls(text: str) -> list[str]:
    """Every place in Python source that builds markup or an environment of its own."""
    return [m.group(0) for m in _MARKUP_CODE.finditer(text)]


def test_the_detectors_find_what_they_look_for() -> None:
    assert unsafe_template_uses("<p>{{ row.content|safe }}</p>{{ x | safe }}") == ["|safe", "| safe"]
    assert unsafe_template_uses("{% autoescape false %}{{ x }}{% endautoescape %}")
    assert not unsafe_template_uses("{{ row.safety }} {{ x|snippet }}")
    assert markup_calls("body = Markup(f'<p>{x}</p>')") == ["Markup("]
    assert markup_calls("env = jinja2.Environment(autoescape=False)")
    assert not markup_calls("def f() -> Markup:\n    return render('x.html')")


def test_no_template_turns_escaping_off() -> None:
    found = {p.name: unsafe_template_uses(p.read_text(encoding="utf-8")) for p in sorted(TEMPLATES.iterdir())}
    assert {name: uses for name, uses in found.items() if uses} == {}


def test_markup_is_built_only_in_the_allowed_modules() -> None:
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        calls = markup_calls(path.read_text(encoding="utf-8"))
        if calls and rel not in MARKUP_ALLOWED:
            offenders[rel] = calls
    assert offenders == {}
    # The allowlist names modules that still use it (a stale entry would hide a new one's review).
    for rel in MARKUP_ALLOWED:
        assert markup_calls((ROOT / rel).read_text(encoding="utf-8")), rel


def test_the_environment_escapes_by_default() -> None:
    env = html._ENV
    assert env.autoescape is True
    assert env.from_string("{{ v }}").render(v=HOSTILE) == ESCAPED
    assert env.from_string("{{ v }}").render(v=None) == ""


def test_every_template_ships_as_package_data() -> None:
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
        "package-data"
    ]["cpersona"]
    names = sorted(p.name for p in TEMPLATES.iterdir() if p.is_file())
    assert names
    for name in names:
        assert any(fnmatch.fnmatch(f"ui/templates/{name}", g) for g in globs), name
    installed = resources.files("cpersona.ui").joinpath("templates")
    assert sorted(p.name for p in installed.iterdir() if p.is_file()) == names


@pytest.mark.parametrize(
    "render",
    [
        lambda: pages.profiles_page(HOSTILE, {"items": []}),
        lambda: pages.login_page(HOSTILE, HOSTILE),
        lambda: pages.message_box(HOSTILE),
        lambda: pages.error_body(HOSTILE, HOSTILE),
        lambda: html.layout(
            HOSTILE, HOSTILE, active="/", csrf=HOSTILE, read_only=True, authenticated_by_login=True
        ),
        lambda: insight.search_form([{"agent_id": HOSTILE}], HOSTILE, HOSTILE, HOSTILE, HOSTILE, 10),
    ],
    ids=["profiles", "login", "message", "error", "layout", "search-form"],
)
def test_values_come_out_escaped_with_the_bytes_the_view_always_sent(render: object) -> None:
    out = str(render())  # type: ignore[operator]
    assert HOSTILE not in out and "<script>" not in out
    assert ESCAPED in out
    assert "&#39;" not in out and "&#34;" not in out  # html.escape's quote entities, as before


def test_a_plain_string_passed_as_a_body_is_escaped_not_trusted() -> None:
    # The frame embeds markup from render(); a str built by hand is text, so a mistake shows, not runs.
    page = html.layout(
        "t", "<b>bold</b>", active="/", csrf="c", read_only=False, authenticated_by_login=False
    )
    assert "&lt;b&gt;bold&lt;/b&gt;" in page and "<b>bold</b>" not in page


@given(
    st.dictionaries(
        st.sampled_from(["agent", "id", "project", "channel", "offset", "done"]),
        st.one_of(st.none(), st.text(), st.integers(), st.booleans()),
    )
)
def test_url_is_what_urlencode_makes(params: dict[str, object]) -> None:
    # url() skips quoting plain values for speed; the string must stay urlencode's.
    query = urlencode({k: v for k, v in params.items() if v is not None})
    assert html.url("/memories", **params) == (f"/memories?{query}" if query else "/memories")
