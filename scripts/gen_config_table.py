"""Regenerate the README's configuration table from the settings table in cpersona/config/settings.py.

Usage: ``python scripts/gen_config_table.py`` rewrites the part of README.md between
the GENERATED markers; ``--check`` exits 1 when the README is out of date (the test
suite runs the same comparison, tests/config/test_config.py).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from cpersona.config import Row, settings_table

README = Path(__file__).resolve().parents[1] / "README.md"
BEGIN = "<!-- BEGIN GENERATED from cpersona/config/settings.py by scripts/gen_config_table.py; do not edit by hand -->"
END = "<!-- END GENERATED configuration table -->"
HEADER = ["| variable | value | default | meaning |", "|---|---|---|---|"]
_KINDS = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "text",
    Path: "path",
    tuple: "comma-separated list",
}


def _code(text: str) -> str:
    return f"`{text}`"


def value_cell(row: Row) -> str:
    """What the variable accepts: its choices, or its kind with its bounds."""
    if row.var.value_text:
        return row.var.value_text
    if row.choices:
        quoted = [_code(c) for c in row.choices]
        return ", ".join(quoted[:-1]) + " or " + quoted[-1]
    low, high = row.var.minimum, row.var.maximum
    kind = _KINDS[row.kind]
    if low is not None and high is not None:
        return f"{kind} {low:g}–{high:g}"
    if low is not None:
        return f"{kind} ≥ {low:g}"
    return kind


def default_cell(row: Row) -> str:
    """The default as a user reads it: the value itself, or the row's words for a computed one."""
    if row.var.default_text:
        return row.var.default_text
    value: Any = row.default
    if isinstance(value, bool):
        return _code("true" if value else "false")
    if isinstance(value, float):
        return _code(f"{value:g}")
    if value is None or value == ():
        raise ValueError(f"{row.var.name}: an unset default needs default_text (what happens when unset)")
    return _code(str(value))


def name_cell(row: Row) -> str:
    aliases = ", ".join(_code(a) for a in row.var.aliases)
    return _code(row.var.name) + (f" (alias {aliases})" if aliases else "")


def table_lines() -> list[str]:
    """The table, one line per setting, in the order of the Settings fields."""
    lines = list(HEADER)
    for row in settings_table():
        cells = [name_cell(row), value_cell(row), default_cell(row), row.var.doc]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return lines


def render(current: str) -> str:
    """``current`` (the README's text) with its generated section replaced by a fresh table."""
    head, found, rest = current.partition(BEGIN)
    if not found or END not in rest:
        raise ValueError("README.md has no generated configuration section (the BEGIN/END markers)")
    _, _, tail = rest.partition(END)
    return head + "\n".join([BEGIN, "", *table_lines(), "", END]) + tail


def main(argv: list[str]) -> int:
    current = README.read_text(encoding="utf-8")
    fresh = render(current)
    if "--check" in argv:
        if fresh != current:
            print("README.md's configuration table is stale: run python scripts/gen_config_table.py")
            return 1
        return 0
    README.write_text(fresh, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
