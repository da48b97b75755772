"""Regenerate cpersona/server/tools/derived.json: each tool's input schema and result shapes.

A tool's arguments are the parameters of the function it calls (a ``Memory`` method, or a
process-wide handler in cpersona/server/calls.py), with the bounds and descriptions of their
``Annotated[..., pydantic.Field(...)]`` metadata (shared types: cpersona/arguments.py); its result
shapes are that function's return annotation. tools/list is answered before the services (numpy,
SQLite) are imported, so the schemas are written out here rather than read at start.

Usage: ``python scripts/gen_tool_arguments.py`` rewrites the file; ``--check`` exits 1 when it is
out of date (tests/server/test_declarations.py runs the same comparison).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import sys
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(
    0, str(Path(__file__).resolve().parent)
)  # scripts/_generated.py, also when a test loads this file

from _generated import regenerate  # noqa: E402

from cpersona import result_types  # noqa: E402
from cpersona.arguments import types as argument_types  # noqa: E402
from cpersona.core.public import annotated_results, public_methods, public_tool
from cpersona.memory import SERVICES, Memory
from cpersona.server.calls import _SUPPLIED, ApiCall, LocalCall, api
from cpersona.server.json_schema import parameters_schema
from cpersona.server.rules import READ, Rule
from cpersona.server.tools import GROUPS, TOOLS, ToolSpec
from cpersona.server.tools.common import DERIVED_FILE, READS

#: Where the names of a wire argument's annotation (a string in its declaration) are found.
NAMES: dict[str, Any] = {
    **{name: getattr(typing, name) for name in ("Annotated", "Any", "Literal", "Sequence")},
    **vars(argument_types),
}


def _function(spec: ToolSpec) -> tuple[Callable[..., Any], tuple[str, ...]]:
    """The function a tool calls and the parameters that are no tool argument."""
    call = spec.call
    if isinstance(call, ApiCall):
        method = getattr(Memory, call.method, None)
        if method is None:
            raise RuntimeError(f"tool {spec.name} calls Memory.{call.method}, which does not exist")
        return inspect.unwrap(method), _SUPPLIED
    if isinstance(call, LocalCall):
        first = next(iter(inspect.signature(call.function).parameters))
        return call.function, (first,)  # the Call the dispatcher hands over
    raise RuntimeError(f"tool {spec.name}: call= is neither api(...) nor local(...)")


def derive(spec: ToolSpec) -> dict[str, Any]:
    """One tool's input schema and result shape names."""
    function, skip = _function(spec)
    wire = (
        {name: (eval(text, {}, NAMES), params) for name, (text, params) in spec.call.wire.items()}  # noqa: S307
        if isinstance(spec.call, ApiCall)
        else {}
    )
    schema = parameters_schema(function, skip=skip, wire=wire)
    results = annotated_results(function)
    if not results and isinstance(spec.call, ApiCall):
        results = result_types.DECLARED_RESULTS.get(spec.call.method, ())
    if not results:
        raise RuntimeError(
            f"tool {spec.name}: {function.__qualname__} names no result shape in its return annotation"
        )
    return {"input_schema": schema, "results": [shape.__name__ for shape in results]}


def method_tools() -> dict[str, dict[str, Any]]:
    """The tools declared on their service method (``@public(tool=...)``), in ``Memory.SERVICES`` order."""
    found: dict[str, dict[str, Any]] = {}
    for service in SERVICES.values():
        for name, attribute in public_methods(service):
            tool = public_tool(getattr(service, attribute))
            if tool is None:
                continue
            if tool.group not in GROUPS:
                raise RuntimeError(f"tool {name}: group {tool.group!r} is none of {', '.join(GROUPS)}")
            probe = ToolSpec(
                name=name, description="", hints=READS, access=Rule(READ), call=api(name), summary="-"
            )
            found[name] = {**derive(probe), "declared": {**dataclasses.asdict(tool), "method": name}}
    return found


def render() -> str:
    """The file's text: the group modules' tools in registry order, then those declared on methods."""
    data = {spec.name: derive(spec) for spec in TOOLS if not spec.on_method}
    for name, entry in method_tools().items():
        if name in data:
            raise RuntimeError(f"tool {name} is declared twice: in a group module and on its method")
        data[name] = entry
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    """Rewrite the file, or with ``--check`` report whether it is current."""
    stale = f"{DERIVED_FILE} is stale: run python scripts/gen_tool_arguments.py"
    return regenerate(DERIVED_FILE, lambda _current: render(), argv, stale)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
