"""References in the code point at the project's own docs, and every one of them resolves (issue 18 point 6).

The specification the project was built from is not part of the repository, so a comment citing one
of its sections sends a maintainer nowhere. Code cites ``docs/<file>.md#<anchor>`` instead; this
test fails on a citation of the specification and on a reference to a missing file or heading.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CODE_FOLDERS = ("cpersona", "tests", "benchmarks", "scripts")

#: A section citation of the external specification: the word, then a section sign and a number.
SPEC_CITATION = re.compile("SPEC" + r"\s*§")
#: A docs reference, optionally with an anchor: docs/retrieval.md#after-fusion.
DOC_REFERENCE = re.compile(r"docs/([\w/.-]+?\.md)(?:#([\w-]+))?")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


def code_files() -> list[Path]:
    files = [path for folder in CODE_FOLDERS for path in sorted((ROOT / folder).rglob("*.py"))]
    return [path for path in files if ".venv" not in path.parts]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower-case, punctuation dropped, each space a hyphen."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text, not its target
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(relative: str) -> frozenset[str]:
    """Every heading anchor of one docs file (``relative`` to docs/)."""
    return anchors_of(ROOT / "docs" / relative)


@cache
def anchors_of(path: Path) -> frozenset[str]:
    """Every heading anchor of one Markdown file, with GitHub's -1, -2 suffixes for repeated headings."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        match = None if fenced else HEADING.match(line)
        if match is None:
            continue
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return frozenset(found)


def references() -> list[tuple[str, int, str, str | None]]:
    found = []
    for path in code_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            for match in DOC_REFERENCE.finditer(line):
                found.append((str(path.relative_to(ROOT)), number, match.group(1), match.group(2)))
    return found


def test_the_slug_follows_github() -> None:
    assert slug("Quality gate") == "quality-gate"
    assert slug("## `cpersona serve`".lstrip("# ")) == "cpersona-serve"
    assert slug("Query building (`match_query.py`, then `storage/keyword.py`)") == (
        "query-building-match_querypy-then-storagekeywordpy"
    )
    assert slug("Measured (MiniLM int8, LoCoMo 26 / 30 / 41, categories 1–4)") == (
        "measured-minilm-int8-locomo-26--30--41-categories-14"
    )


def test_the_scan_sees_the_code_and_its_references() -> None:
    # Guard against the checks below passing because they looked at nothing.
    assert len(code_files()) > 100
    assert sum(1 for _, _, _, anchor in references() if anchor) >= 30


def test_no_code_cites_the_external_specification() -> None:
    cited = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in code_files()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if SPEC_CITATION.search(line)
    ]
    assert not cited, "cite a docs/*.md section instead of the specification:\n" + "\n".join(cited)


def test_the_citation_pattern_catches_a_citation() -> None:
    assert SPEC_CITATION.search("the rule (SPEC" + " §4)")
    assert not SPEC_CITATION.search("SPEC_TOOL_NAMES")


@pytest.mark.parametrize("where, file, anchor", [(f"{p}:{n}", f, a) for p, n, f, a in references()])
def test_a_docs_reference_resolves(where: str, file: str, anchor: str | None) -> None:
    assert (ROOT / "docs" / file).is_file(), f"{where}: docs/{file} does not exist"
    if anchor is not None:
        assert anchor in anchors(file), f"{where}: docs/{file} has no heading with anchor #{anchor}"
