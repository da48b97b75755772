"""Every tool's schemas use portable JSON Schema: nothing a strict validator (Ajv strict) refuses."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator
from strict_schema import strict_problems

from cpersona.server.output_schemas import output_schema
from cpersona.server.tools import TOOLS, tool_names


@pytest.mark.parametrize("spec", TOOLS, ids=lambda spec: spec.name)
def test_input_schema_passes_the_strict_rules(spec) -> None:
    assert strict_problems(spec.input_schema) == []


@pytest.mark.parametrize(
    ("schema", "complaint"),
    [
        ({"type": "object", "properties": {"a": {"type": ["string", "integer"]}}}, "type array"),
        ({"type": "object", "properties": {"a": {"type": "string", "nullable": True}}}, "unknown keyword"),
        ({"type": "object", "properties": {"a": {"minimum": 1}}}, "'minimum' without a type"),
        ({"anyOf": [{"type": "string"}, {"pattern": "^x$"}]}, "'pattern' without a type"),
        ({"type": "object", "properties": {}, "required": ["a"]}, "required 'a' is not declared"),
        ({"type": "object", "properties": {"a": {"type": "strin"}}}, "not a valid Draft 2020-12"),
    ],
)
def test_the_strict_check_refuses_what_ajv_strict_refuses(schema, complaint) -> None:
    problems = strict_problems(schema)
    assert any(complaint in p for p in problems), problems


@pytest.mark.parametrize("name", tool_names())
@pytest.mark.parametrize("detail", ["full", "envelope"])
def test_every_tool_has_an_output_schema_that_passes_the_strict_rules(name: str, detail: str) -> None:
    schema = output_schema(name, detail)  # type: ignore[arg-type]
    assert schema["type"] == "object"  # MCP wants an object root
    assert strict_problems(schema) == []


def test_output_schemas_accept_failures_and_refuse_a_wrong_success() -> None:
    store = Draft202012Validator(output_schema("store"))
    assert store.is_valid({"ok": False, "error": "content is empty", "error_code": "invalid_input"})
    assert store.is_valid({"ok": True, "result": "stored", "id": 1, "ref": "mem:1", "embedded": False})
    assert not store.is_valid({"ok": True, "result": "stored", "id": "1", "ref": "mem:1", "embedded": False})
    assert not store.is_valid({"ok": False, "error": "no code"})
