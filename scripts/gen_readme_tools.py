"""Regenerate the README's tools table from the tool declarations (``ToolSpec.summary``).

Usage: ``python scripts/gen_readme_tools.py`` rewrites the part of README.md between the
GENERATED markers, one row per tool in registry order; ``--check`` exits 1 when the README
is out of date (tests/test_readme.py runs the same comparison).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(
    0, str(Path(__file__).resolve().parent)
)  # scripts/_generated.py, also when a test loads this file

from _generated import regenerate, replace_block  # noqa: E402

from cpersona.server.tools import TOOLS

README = Path(__file__).resolve().parents[1] / "README.md"
BEGIN = (
    "<!-- BEGIN GENERATED from cpersona/server/tools/ by scripts/gen_readme_tools.py; do not edit by hand -->"
)
END = "<!-- END GENERATED tools table -->"


def table() -> str:
    """The generated block, markers included."""
    rows = [f"| `{spec.name}` | {spec.summary} |" for spec in TOOLS]
    return "\n".join([BEGIN, "| tool | what it does |", "|---|---|", *rows, END])


def render(text: str) -> str:
    """``text`` (the README) with its generated tools table replaced by the current one."""
    return replace_block(text, BEGIN, END, table())


def main(argv: list[str]) -> int:
    """Rewrite README.md, or with ``--check`` report whether its tools table is current."""
    return regenerate(
        README, render, argv, "README.md's tools table is stale: run python scripts/gen_readme_tools.py"
    )


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
