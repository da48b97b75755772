"""Each tool's ``outputSchema``: JSON Schema generated from its result shapes (cpersona/shapes/).

A tool answers one of its success shapes or the uniform failure (``ToolError``), so
the schema is ``anyOf`` those, each TypedDict once under ``$defs``. Objects are left
open (no ``additionalProperties: false``): the MCP layer adds keys the Python API
never returns (previews: ``content_truncated``; budgets: ``deferred``), and a refusal
may carry its own keys (``store``'s ``result``/``reason``); the API shapes themselves
are checked closed by tests/test_shapes.py. Portable constructs only (no type
arrays), so strict validators accept the schemas (docs/decisions.md, "Output schemas").
"""

from __future__ import annotations

import types
import typing
from typing import Any, Literal, NotRequired, Required, get_args, get_origin, get_type_hints

from cpersona import shapes

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def tool_result_shapes(name: str) -> tuple[type, ...]:
    """The success shapes of tool ``name``, from its declaration (``ToolSpec.results``)."""
    from cpersona.server.schemas import TOOLS_BY_NAME  # the registry imports shapes, not this module

    return TOOLS_BY_NAME[name].results


def output_schema(name: str) -> dict[str, Any]:
    """The ``outputSchema`` of tool ``name``: any of its success shapes, or the failure shape."""
    return results_schema(tool_result_shapes(name))


def results_schema(results: tuple[type, ...]) -> dict[str, Any]:
    """JSON Schema for a result that is one of ``results`` (TypedDicts) or the failure shape."""
    defs: dict[str, Any] = {}
    branches = [_schema(shape, defs) for shape in (*results, shapes.ToolError)]
    return {"$schema": SCHEMA_DIALECT, "type": "object", "anyOf": branches, "$defs": defs}


def _schema(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    """JSON Schema for one annotation; TypedDicts go to ``defs`` once and are referenced."""
    origin = get_origin(tp)
    if origin in (NotRequired, Required):
        return _schema(get_args(tp)[0], defs)
    if origin is typing.Annotated:
        described = dict(_schema(get_args(tp)[0], defs))
        described["description"] = " ".join(str(m) for m in tp.__metadata__)
        return described
    if tp is Any or tp is object:
        return {}
    if tp is None or tp is type(None):
        return {"type": "null"}
    if isinstance(tp, type) and typing.is_typeddict(tp):
        if tp.__name__ not in defs:
            defs[tp.__name__] = {}  # reserve the name first: a shape may refer to itself
            defs[tp.__name__] = _object(tp, defs)
        return {"$ref": f"#/$defs/{tp.__name__}"}
    if origin is Literal:
        values = list(get_args(tp))
        return {"const": values[0]} if len(values) == 1 else {"enum": values}
    if origin in (types.UnionType, typing.Union):
        return {"anyOf": [_schema(arg, defs) for arg in get_args(tp)]}
    if origin is list or tp is list:
        args = get_args(tp)
        return {"type": "array", **({"items": _schema(args[0], defs)} if args else {})}
    if origin is dict or tp is dict:
        args = get_args(tp)
        return {"type": "object", **({"additionalProperties": _schema(args[1], defs)} if args else {})}
    if tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    raise TypeError(f"no JSON Schema for the shape annotation {tp!r}")


def _object(shape: type, defs: dict[str, Any]) -> dict[str, Any]:
    hints = get_type_hints(shape, include_extras=True)
    schema: dict[str, Any] = {
        "type": "object",
        "description": (shape.__doc__ or "").strip(),
        "properties": {key: _schema(tp, defs) for key, tp in hints.items()},
    }
    required = [key for key in hints if key in shape.__required_keys__]  # type: ignore[attr-defined]
    if required:
        schema["required"] = required
    return schema
