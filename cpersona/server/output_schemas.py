"""Each tool's ``outputSchema``: JSON Schema generated from its result shapes (cpersona/result_types/)
by the one annotation walker (cpersona/server/json_schema.py).

What ``tools/list`` publishes carries no ``description``s: they are annotations (no validator reads
them), they were two thirds of the bytes (110 KB of 171 KB for 34 tools), and the same text is in
docs/api-shapes.md. With ``CPERSONA_OUTPUT_SCHEMAS=envelope`` it is only the answer's top level
(``envelope_schema``): a client that re-checks the schema on every call (the Python SDK 1.x runs
``jsonschema.validate``, which validates the schema against the 2020-12 metaschema each time, about
0.2 ms per subschema) pays for a dozen subschemas instead of two hundred (docs/tools.md).

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

import re
from typing import Any

from cpersona import result_types
from cpersona.config import OutputSchemaDetail
from cpersona.server.json_schema import SCHEMA_DIALECT, result_schema


def tool_result_shapes(name: str) -> tuple[type, ...]:
    """The success shapes of tool ``name``, from its declaration (``ToolSpec.results``)."""
    from cpersona.server.tools import TOOLS_BY_NAME  # the registry imports shapes, not this module

    return TOOLS_BY_NAME[name].results


def output_schema(name: str, detail: OutputSchemaDetail = "full") -> dict[str, Any]:
    """The ``outputSchema`` of tool ``name``: any of its success shapes, or the failure shape, with
    every ``$ref`` written out in place (``inline_refs``) and no descriptions; with ``detail``
    ``envelope``, only the top level of those shapes (``envelope_schema``)."""
    schema = results_schema(tool_result_shapes(name))
    if detail == "envelope":
        return envelope_schema(schema)
    return without_descriptions(inline_refs(schema))


#: Keywords whose value maps names (of properties, definitions) to schemas: a key there named
#: "description" is a property, not the annotation.
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "dependentSchemas")


def without_descriptions(schema: Any) -> Any:
    """``schema`` without its ``description`` annotations (a property named "description" stays)."""
    if isinstance(schema, list):
        return [without_descriptions(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    kept: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "description":
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            kept[key] = {name: without_descriptions(sub) for name, sub in value.items()}
        else:
            kept[key] = without_descriptions(value)
    return kept


def envelope_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The top level of ``schema`` (a ``results_schema``): one object whose ``ok`` is required and
    boolean, and whose other keys have the one JSON type every shape that has them agrees on.

    The keys are grouped by type into ``patternProperties`` (``^(count|total)$``: integer), one
    subschema per JSON type rather than one per key: the metaschema check a client repeats per call
    costs per subschema. Nested objects and rows are only typed as objects and arrays; keys whose type
    differs between shapes (or is a union) are left unconstrained, since objects are open anyway.
    """
    defs = schema["$defs"]
    agreed: dict[str, str | None] = {}
    for branch in schema["anyOf"]:
        for key, prop in defs[branch["$ref"].removeprefix("#/$defs/")].get("properties", {}).items():
            kind = _json_type(prop, defs)
            agreed[key] = kind if agreed.get(key, kind) == kind else None
    agreed.pop("ok", None)
    groups: dict[str, list[str]] = {}
    for key, kind in agreed.items():
        if kind is not None:
            groups.setdefault(kind, []).append(re.escape(key))
    return {
        "$schema": SCHEMA_DIALECT,
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
        "required": ["ok"],
        "patternProperties": {f"^({'|'.join(keys)})$": {"type": kind} for kind, keys in groups.items()},
    }


def _json_type(prop: dict[str, Any], defs: dict[str, Any]) -> str | None:
    """The single JSON type a property schema allows, or None (a union, or anything)."""
    if "$ref" in prop:
        return _json_type(defs[prop["$ref"].removeprefix("#/$defs/")], defs)
    if isinstance(prop.get("type"), str):
        return str(prop["type"])
    values = [prop["const"]] if "const" in prop else prop.get("enum")
    if values:
        kinds = {_VALUE_TYPES.get(type(value)) for value in values}
        return kinds.pop() if len(kinds) == 1 else None
    return None


_VALUE_TYPES: dict[type, str] = {bool: "boolean", int: "integer", float: "number", str: "string"}


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
    branches = [result_schema(shape, defs) for shape in (*results, result_types.ToolError)]
    return {"$schema": SCHEMA_DIALECT, "type": "object", "anyOf": branches, "$defs": defs}
