"""The HTTP plumbing is defined once: no module outside cpersona/http re-defines what it holds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "cpersona"
#: A definition (at any indentation) and the modules allowed to hold it ([]: imported, defined nowhere).
DEFINITIONS = {
    r"(Scope|Message|Receive|Send|ASGIApp)\s*=": [],  # Starlette's aliases, imported by cpersona.http.asgi
    r"def bearer_token\(": ["http/tokens.py"],
    r"def _?is_loopback\(": ["http/addresses.py"],
    r"class Forbidden\(": ["errors.py"],
    r"LOOPBACK_NAMES\s*=": ["http/addresses.py"],
    # The 401 / 403 bodies: one sender (the MCP transport and the view each had their own).
    r"async def \w*(reject|refusal|plain)\w*\(": ["http/refusals.py"],
}


def holders(pattern: str) -> list[str]:
    rule = re.compile(r"^\s*" + pattern, re.MULTILINE)
    return sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if rule.search(path.read_text(encoding="utf-8"))
    )


@pytest.mark.parametrize("pattern", list(DEFINITIONS))
def test_defined_once(pattern: str) -> None:
    assert holders(pattern) == DEFINITIONS[pattern]


def test_the_check_finds_what_exists() -> None:
    # Guard against a pattern that can never match: the kit's own definitions are seen.
    assert holders(r"def weak_token\(") == ["http/tokens.py"]
    assert holders(r"async def send_response\(") == ["http/asgi.py"]


def test_the_ui_hard_codes_no_token_length() -> None:
    # The minimum is cpersona.core.limits.MIN_TOKEN_CHARS, read through cpersona.http.tokens.weak_token.
    for path in (PACKAGE / "ui").rglob("*.py"):
        assert not re.search(r"len\(token\)\s*<\s*\d", path.read_text(encoding="utf-8")), path
