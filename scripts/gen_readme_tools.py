"""Regenerate the README's tools table from the tool declarations (``ToolSpec.summary``).

Usage: ``python scripts/gen_readme_tools.py`` rewrites the part of README.md between the
GENERATED markers, one row per tool in registry order; ``--check`` exits 1 when the README
is out of date (tests/test_readme.py runs the same comparison).
"""

from __future__ import annotations

import sys
from pathlib import Path

from cpersona.server.schemas import TOOLS

README = Path(__file__).resolve().parents[1] / "README.md"
BEGIN = "<!-- BEGIN GENERATED from cpersona/server/schemas/ by scripts/gen_readme_tools.py; do not edit by hand -->"
END = "<!-- END GENERATED tools table -->"


def table() -> str:
    """The generated block, markers included."""
    rows = [f"| `{spec.name}` | {spec.summary} |" for spec in TOOLS]
    return "\n".join([BEGIN, "| tool | what it does |", "|---|---|", *rows, END])


def render(text: str) -> str:
    """``text`` (the README) with its generated tools table replaced by the current one."""
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + table() + tail


def main(argv: list[str]) -> int:
    """Rewrite README.md, or with ``--check`` report whether its tools table is current."""
    text = README.read_text(encoding="utf-8")
    fresh = render(text)
    if "--check" in argv:
        if fresh != text:
            print("README.md's tools table is stale: run python scripts/gen_readme_tools.py", file=sys.stderr)
            return 1
        return 0
    README.write_text(fresh, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
