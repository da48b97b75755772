"""Regenerate the tables of docs/api-shapes.md from the TypedDicts in cpersona/result_types/.

The tables are read from the JSON Schema of each shape, written by the walker the MCP layer's
``outputSchema`` uses (cpersona/server/json_schema.py), so the docs and the wire cannot disagree.

Usage: ``python scripts/gen_api_shapes.py`` rewrites the part of the file between
the GENERATED markers; ``--check`` exits 1 when the file is out of date (the test
suite runs the same comparison).
"""

from __future__ import annotations

import json
import sys
import typing
from pathlib import Path
from typing import Any

sys.path.insert(
    0, str(Path(__file__).resolve().parent)
)  # scripts/_generated.py, also when a test loads this file

from _generated import regenerate, replace_block  # noqa: E402

from cpersona import result_types  # noqa: E402
from cpersona.memory import method_results as results_by_method  # noqa: E402
from cpersona.server.json_schema import result_schema  # noqa: E402

DOC = Path(__file__).resolve().parents[1] / "docs" / "api-shapes.md"
BEGIN = (
    "<!-- BEGIN GENERATED from cpersona/result_types/ by scripts/gen_api_shapes.py; do not edit by hand -->"
)
END = "<!-- END GENERATED -->"
#: "or" inside a table cell (a bare | would end the cell).
OR = " \\| "


#: Every shape's JSON Schema, from the one walker the wire uses (cpersona/server/json_schema.py).
DEFS: dict[str, Any] = {}
SHAPES: dict[str, type] = {}
_PYTHON_NAMES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


def _definition(shape: type) -> dict[str, Any]:
    result_schema(shape, DEFS, SHAPES)
    found: dict[str, Any] = DEFS[shape.__name__]
    return found


def _anchor(name: str) -> str:
    return name.lower()


def format_type(schema: dict[str, Any]) -> str:
    """A readable type: shapes become links to their own table, literals are JSON."""
    if "$ref" in schema:
        name = schema["$ref"].removeprefix("#/$defs/")
        return f"[`{name}`](#{_anchor(name)})"
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if "enum" in schema:
        return OR.join(f"`{json.dumps(v)}`" for v in schema["enum"])
    if "anyOf" in schema:
        return OR.join(format_type(branch) for branch in schema["anyOf"])
    kind = schema.get("type")
    if kind == "array":
        return f"list[{format_type(schema['items'])}]" if "items" in schema else "list"
    if kind == "object":
        values = schema.get("additionalProperties")
        return f"dict[str, {format_type(values) if values else 'Any'}]"
    if kind is None:
        return "Any"
    return _PYTHON_NAMES[kind]


def _base(shape: type) -> type | None:
    """The largest other shape whose keys ``shape`` repeats unchanged (a TypedDict it extends)."""
    mine = _definition(shape)["properties"]
    best: type | None = None
    best_size = 0
    for other in vars(result_types).values():
        if not (isinstance(other, type) and typing.is_typeddict(other)) or other is shape:
            continue
        theirs = _definition(other)["properties"]
        extends = len(theirs) < len(mine) and all(mine.get(k) == v for k, v in theirs.items())
        if extends and len(theirs) > best_size:
            best, best_size = other, len(theirs)
    return best


def table(shape: type) -> list[str]:
    """The markdown section of one shape: heading, docstring, one table row per own key."""
    definition = _definition(shape)
    properties: dict[str, Any] = definition["properties"]
    required = set(definition.get("required", ()))
    lines = [f"### `{shape.__name__}`", "", definition["description"], ""]
    base = _base(shape)
    if base is not None:
        lines += [f"Every key of [`{base.__name__}`](#{_anchor(base.__name__)}), plus:", ""]
        inherited = _definition(base)["properties"]
        properties = {k: v for k, v in properties.items() if k not in inherited}
    lines += ["| key | type | meaning |", "|---|---|---|"]
    for key, prop in properties.items():
        shown = f"`{key}`" + ("" if key in required else " (optional)")
        lines.append(f"| {shown} | {format_type(prop)} | {prop.get('description', '')} |")
    lines.append("")
    return lines


def _nested(shape: type, seen: list[type]) -> None:
    """Depth-first: ``shape`` then every shape its keys refer to, each once."""
    if shape in seen:
        return
    seen.append(shape)
    for prop in _definition(shape)["properties"].values():
        for name in _refs(prop):
            _nested(SHAPES[name], seen)


def _refs(schema: Any) -> list[str]:
    """The shapes ``schema`` refers to, in order."""
    if isinstance(schema, list):
        return [name for item in schema for name in _refs(item)]
    if not isinstance(schema, dict):
        return []
    if "$ref" in schema:
        return [schema["$ref"].removeprefix("#/$defs/")]
    return [name for value in schema.values() for name in _refs(value)]


def tool_only_results() -> dict[str, tuple[type, ...]]:
    """The MCP tools that are no ``Memory`` method, with the result shapes their declarations name."""
    from cpersona.server.tools import TOOLS

    method_results = results_by_method()
    return {spec.name: spec.results for spec in TOOLS if spec.name not in method_results}


def generated_section() -> str:
    """The generated part of docs/api-shapes.md, markers included."""
    lines = [BEGIN, "", "## Results by method", "", "| `Memory` method | returns |", "|---|---|"]
    method_results = results_by_method()
    for method, results in method_results.items():
        shown = OR.join(format_type(result_schema(r, DEFS, SHAPES)) for r in results)
        lines.append(f"| `{method}` | {shown} |")
    lines += ["", "## Results of the tools that are not methods", ""]
    lines += ["| MCP tool | returns |", "|---|---|"]
    for tool, results in tool_only_results().items():
        lines.append(
            f"| `{tool}` | {OR.join(format_type(result_schema(r, DEFS, SHAPES)) for r in results)} |"
        )
    failure = format_type(result_schema(result_types.ToolError, DEFS, SHAPES))
    lines += ["", f"Every tool may instead answer {failure}.", ""]
    lines += ["## Rows", ""]
    rows: list[type] = []
    for shape in result_types.ROW_SHAPES:
        _nested(shape, rows)
    for shape in rows:
        lines += table(shape)
    lines += ["## Results", ""]
    results_seen: list[type] = list(rows)
    for results in (*method_results.values(), *tool_only_results().values(), (result_types.ToolError,)):
        for shape in results:
            _nested(shape, results_seen)
    for shape in results_seen[len(rows) :]:
        lines += table(shape)
    lines.append(END)
    return "\n".join(lines)


def render(current: str) -> str:
    """``current`` with its generated section replaced (appended when the markers are missing)."""
    if BEGIN in current and END in current:
        return replace_block(current, BEGIN, END, generated_section())
    return current.rstrip("\n") + "\n\n" + generated_section() + "\n"


def main(argv: list[str]) -> int:
    return regenerate(DOC, render, argv, f"{DOC} is out of date: run python scripts/gen_api_shapes.py")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
