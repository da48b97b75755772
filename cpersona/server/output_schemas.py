"""Each tool's ``outputSchema``: JSON Schema generated from its result shapes (cpersona/shapes/).

A tool answers one of its success shapes or the uniform failure (``ToolError``), so
the schema is ``anyOf`` those, each TypedDict once under ``$defs`` (``results_schema``). What
``tools/list`` publishes (``output_schema``) has those ``$ref``s written out in place: the same
shapes, but a validating client (the MCP SDK's jsonschema, per result) then resolves no reference
per row (docs/decisions.md, "Output schemas that are cheap to check"). Objects are left
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
    """The ``outputSchema`` of tool ``name``: any of its success shapes, or the failure shape, with
    every ``$ref`` written out in place (``inline_refs``)."""
    return inline_refs(results_schema(tool_result_shapes(name)))


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with each ``$ref`` to its ``$defs`` replaced by a copy of the definition.

    A reference's own keywords are kept beside the definition's and win; its ``description`` (the
    property's role) goes before the definition's (what the shape is) rather than replacing it. A
    shape that refers to itself, directly or through others, stays a ``$ref`` (and in ``$defs``):
    a recursive shape cannot be written out. ``$defs`` goes when nothing refers to it any more.
    """
    defs: dict[str, Any] = schema.get("$defs", {})
    kept: set[str] = set()

    def walk(node: Any, open_defs: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [walk(item, open_defs) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        own = {key: walk(value, open_defs) for key, value in node.items() if key not in ("$ref", "$defs")}
        if not isinstance(ref, str) or not ref.startswith("#/$defs/"):
            return own if ref is None else {"$ref": ref, **own}
        name = ref.removeprefix("#/$defs/")
        if name in open_defs:  # recursive: keep the reference
            kept.add(name)
            return {"$ref": ref, **own}
        written = {**walk(defs[name], (*open_defs, name)), **own}
        shape_says, here_says = defs[name].get("description"), own.get("description")
        if shape_says and here_says and shape_says != here_says:  # keep both: the role, then the shape
            written["description"] = f"{here_says} {shape_says}"
        return written

    inlined = walk(schema, ())
    while kept - set(inlined.get("$defs", {})):  # a kept definition may itself keep others
        inlined["$defs"] = {name: walk(defs[name], (name,)) for name in sorted(kept)}
    return inlined


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
        value_schema: dict[str, Any] = _schema(args[1], defs) if args else {}
        # additionalProperties: {} allows what its absence allows, but a validator still visits it per key.
        return {"type": "object", **({"additionalProperties": value_schema} if value_schema else {})}
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
