"""Every link between the project's own pages resolves: the file exists, and a ``#anchor`` names one of
its headings.

The docs move: a page splits, a section goes to docs/history/ or docs/research/, a heading is renamed.
A link left behind sends the reader nowhere, and GitHub shows no error. Links to other sites are not
followed (the tests run offline); links inside code spans and fenced blocks are examples, not links.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_doc_references import FENCE, ROOT, anchors_of

#: An inline Markdown link or image, its target up to the first space or closing parenthesis.
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`[^`]*`")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # http:, https:, mailto: …


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def links(page: Path) -> list[tuple[int, str]]:
    """(line number, target) of every relative link on ``page``, outside code."""
    found: list[tuple[int, str]] = []
    fenced = False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        for match in LINK.finditer(CODE_SPAN.sub("", line)):
            if not EXTERNAL.match(match.group(1)):
                found.append((number, match.group(1)))
    return found


def broken(page: Path, target: str) -> str | None:
    """Why ``target`` (as written on ``page``) leads nowhere, or None."""
    path, _, anchor = target.partition("#")
    resolved = (page.parent / path).resolve() if path else page
    if not resolved.exists():
        return f"no file {path}"
    if anchor and resolved.suffix == ".md" and anchor not in anchors_of(resolved):
        return f"{path or page.name} has no heading with anchor #{anchor}"
    return None


def test_the_scan_sees_the_pages_and_their_links() -> None:
    # Guard against the check below passing because it looked at nothing.
    assert len(pages()) > 20
    assert sum(len(links(page)) for page in pages()) > 300


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_on_the_page_resolves(page: Path) -> None:
    problems = [
        f"{page.relative_to(ROOT)}:{number}: ({target}) {why}"
        for number, target in links(page)
        if (why := broken(page, target)) is not None
    ]
    assert not problems, "\n".join(problems)


def test_a_broken_link_is_caught(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## A section\n", encoding="utf-8")
    assert broken(page, "#a-section") is None
    assert broken(page, "#no-such-section") is not None
    assert broken(page, "missing.md") is not None
    assert broken(page, "page.md#title") is None
    page.write_text("[x](page.md#gone) `[y](nowhere.md)`\n```\n[z](nowhere.md)\n```\n", encoding="utf-8")
    assert links(page) == [(1, "page.md#gone")]
