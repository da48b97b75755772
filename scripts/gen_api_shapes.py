"""Regenerate the tables of docs/api-shapes.md from the TypedDicts in cpersona/result_types/.

Usage: ``python scripts/gen_api_shapes.py`` rewrites the part of the file between
the GENERATED markers; ``--check`` exits 1 when the file is out of date (the test
suite runs the same comparison).
"""

from __future__ import annotations

import json
import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal, NotRequired, Required, get_args, get_origin, get_type_hints

from cpersona import result_types
from cpersona.memory import method_results as results_by_method

DOC = Path(__file__).resolve().parents[1] / "docs" / "api-shapes.md"
BEGIN = (
    "<!-- BEGIN GENERATED from cpersona/result_types/ by scripts/gen_api_shapes.py; do not edit by hand -->"
)
END = "<!-- END GENERATED -->"
#: "or" inside a table cell (a bare | would end the cell).
OR = " \\| "


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and typing.is_typeddict(tp)


def _anchor(name: str) -> str:
    return name.lower()


def format_type(tp: Any) -> str:
    """A readable type: TypedDicts become links to their own table, literals are JSON."""
    origin = get_origin(tp)
    if origin in (NotRequired, Required):
        return format_type(get_args(tp)[0])
    if origin is typing.Annotated:
        return format_type(get_args(tp)[0])
    if tp is type(None) or tp is None:
        return "None"
    if tp is Any:
        return "Any"
    if _is_typeddict(tp):
        return f"[`{tp.__name__}`](#{_anchor(tp.__name__)})"
    if origin is Literal:
        return OR.join(f"`{json.dumps(v)}`" for v in get_args(tp))
    if origin in (types.UnionType, typing.Union):
        return OR.join(format_type(a) for a in get_args(tp))
    if origin in (list, dict):
        return f"{origin.__name__}[{', '.join(format_type(a) for a in get_args(tp))}]"
    if isinstance(tp, type):
        return tp.__name__
    return str(tp)


def _meaning(tp: Any) -> str:
    if get_origin(tp) in (NotRequired, Required):
        tp = get_args(tp)[0]
    if get_origin(tp) is typing.Annotated:
        return " ".join(str(m) for m in tp.__metadata__)
    return ""


def _base(shape: type) -> type | None:
    """The largest other shape whose keys ``shape`` repeats unchanged (a TypedDict it extends)."""
    hints = get_type_hints(shape, include_extras=True)
    best: type | None = None
    for other in vars(result_types).values():
        if not _is_typeddict(other) or other is shape:
            continue
        theirs = get_type_hints(other, include_extras=True)
        extends = len(theirs) < len(hints) and all(hints.get(k) == v for k, v in theirs.items())
        if extends and (best is None or len(theirs) > len(get_type_hints(best, include_extras=True))):
            best = other
    return best


def table(shape: type) -> list[str]:
    """The markdown section of one TypedDict: heading, docstring, one table row per own key."""
    hints = get_type_hints(shape, include_extras=True)
    optional = shape.__optional_keys__  # type: ignore[attr-defined]
    lines = [f"### `{shape.__name__}`", "", (shape.__doc__ or "").strip(), ""]
    base = _base(shape)
    if base is not None:
        lines += [f"Every key of {format_type(base)}, plus:", ""]
        inherited = get_type_hints(base, include_extras=True)
        hints = {k: v for k, v in hints.items() if k not in inherited}
    lines += ["| key | type | meaning |", "|---|---|---|"]
    for key, tp in hints.items():
        shown = f"`{key}`" + (" (optional)" if key in optional else "")
        lines.append(f"| {shown} | {format_type(tp)} | {_meaning(tp)} |")
    lines.append("")
    return lines


def _nested(shape: type, seen: list[type]) -> None:
    """Depth-first: ``shape`` then every TypedDict its keys refer to, each once."""
    if shape in seen:
        return
    seen.append(shape)
    for tp in get_type_hints(shape, include_extras=True).values():
        for inner in _walk(tp):
            _nested(inner, seen)


def _walk(tp: Any) -> list[type]:
    if _is_typeddict(tp):
        return [tp]
    return [inner for arg in get_args(tp) if not isinstance(arg, str) for inner in _walk(arg)]


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
        shown = OR.join(format_type(r) for r in results)
        lines.append(f"| `{method}` | {shown} |")
    lines += ["", "## Results of the tools that are not methods", ""]
    lines += ["| MCP tool | returns |", "|---|---|"]
    for tool, results in tool_only_results().items():
        lines.append(f"| `{tool}` | {OR.join(format_type(r) for r in results)} |")
    lines += ["", f"Every tool may instead answer {format_type(result_types.ToolError)}.", ""]
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
        head, _, rest = current.partition(BEGIN)
        _, _, tail = rest.partition(END)
        return head + generated_section() + tail
    return current.rstrip("\n") + "\n\n" + generated_section() + "\n"


def main(argv: list[str]) -> int:
    current = DOC.read_text(encoding="utf-8")
    wanted = render(current)
    if "--check" in argv:
        if wanted != current:
            print(f"{DOC} is out of date: run python scripts/gen_api_shapes.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
