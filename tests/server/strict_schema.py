"""The rules strict JSON-Schema validators enforce, as a pure-Python check of one schema.

Ajv's strict mode (what the MCP inspector's strict check follows) refuses schemas that
Draft 2020-12 itself allows: type arrays, keywords it does not know, keywords for one type
with no ``type`` beside them saying so, and ``required`` names that ``properties`` does not
declare. ``strict_problems`` reports each with where it is, so a test names the offending
tool and path.
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

#: Draft 2020-12 keywords (core, applicator, validation, annotations) the schemas may use.
KNOWN = {
    "$schema", "$id", "$ref", "$defs", "$comment", "$anchor",
    "type", "enum", "const", "anyOf", "oneOf", "allOf", "not", "if", "then", "else",
    "properties", "additionalProperties", "required", "patternProperties", "propertyNames",
    "minProperties", "maxProperties", "dependentRequired", "dependentSchemas",
    "items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "minLength", "maxLength", "pattern", "format",
    "title", "description", "default", "examples", "readOnly", "writeOnly", "deprecated",
}  # fmt: skip

#: Keywords that only constrain one JSON type, and the types whose ``type`` must sit beside them.
TYPED = {
    **dict.fromkeys(
        ("properties", "additionalProperties", "required", "patternProperties", "propertyNames",
         "minProperties", "maxProperties", "dependentRequired", "dependentSchemas"),
        {"object"},
    ),
    **dict.fromkeys(("items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains"), {"array"}),
    **dict.fromkeys(
        ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"), {"number", "integer"}
    ),
    **dict.fromkeys(("minLength", "maxLength", "pattern", "format"), {"string"}),
}  # fmt: skip

#: Keywords whose value is a schema, a list of schemas, or a map of names to schemas.
ONE_SCHEMA = {"additionalProperties", "items", "not", "if", "then", "else", "contains", "propertyNames"}
SCHEMA_LISTS = {"anyOf", "oneOf", "allOf", "prefixItems"}
SCHEMA_MAPS = {"properties", "patternProperties", "$defs", "dependentSchemas"}


def strict_problems(schema: dict[str, Any]) -> list[str]:
    """Everything a strict validator would refuse in ``schema`` (empty: it compiles under Ajv strict)."""
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return [f"not a valid Draft 2020-12 schema: {exc.message}"]
    found: list[str] = []
    _walk(schema, "#", found)
    return found


def _walk(schema: Any, where: str, found: list[str]) -> None:
    if not isinstance(schema, dict):
        return  # true/false schemas are fine
    declared = schema.get("type")
    if isinstance(declared, list):
        found.append(f"{where}: type array {declared} (use anyOf of single-type schemas)")
    for keyword in sorted(set(schema) - KNOWN):
        found.append(f"{where}: unknown keyword {keyword!r}")
    for keyword, types in TYPED.items():
        if keyword in schema and not (isinstance(declared, str) and declared in types):
            found.append(f"{where}: {keyword!r} without a type {sorted(types)} beside it")
    properties = schema.get("properties", {})
    for name in schema.get("required", ()):
        if name not in properties:
            found.append(f"{where}: required {name!r} is not declared in properties")
    for keyword in ONE_SCHEMA & set(schema):
        _walk(schema[keyword], f"{where}/{keyword}", found)
    for keyword in SCHEMA_LISTS & set(schema):
        for i, sub in enumerate(schema[keyword]):
            _walk(sub, f"{where}/{keyword}/{i}", found)
    for keyword in SCHEMA_MAPS & set(schema):
        for name, sub in schema[keyword].items():
            _walk(sub, f"{where}/{keyword}/{name}", found)
