"""The published outputSchema: the ``$defs`` form with its references written out, describing the same shapes."""

from __future__ import annotations

import json
from typing import Any, NotRequired, TypedDict

import pytest
from jsonschema import Draft202012Validator

from cpersona.server.output_schemas import inline_refs, output_schema, results_schema, tool_result_shapes
from cpersona.server.schemas import tool_names


@pytest.mark.parametrize("name", tool_names())
def test_the_published_schema_has_no_reference_left(name: str) -> None:
    published = output_schema(name)
    text = json.dumps(published)
    assert "$ref" not in text and "$defs" not in text
    Draft202012Validator.check_schema(published)
    # Every definition of the $defs form is written out somewhere in the published one.
    for definition in results_schema(tool_result_shapes(name))["$defs"].values():
        assert json.dumps(definition["description"])[1:-1] in text


def test_a_reference_keeps_its_own_description_before_the_definitions() -> None:
    schema = {
        "type": "object",
        "properties": {"row": {"$ref": "#/$defs/Row", "description": "the property's"}},
        "$defs": {"Row": {"type": "object", "description": "the shape's", "properties": {}}},
    }
    assert inline_refs(schema) == {
        "type": "object",
        "properties": {
            "row": {"type": "object", "description": "the property's the shape's", "properties": {}}
        },
    }


def test_a_recursive_shape_stays_a_reference() -> None:
    schema = {
        "anyOf": [{"$ref": "#/$defs/Node"}],
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"child": {"$ref": "#/$defs/Node"}, "name": {"$ref": "#/$defs/Name"}},
            },
            "Name": {"type": "string"},
        },
    }
    inlined = inline_refs(schema)
    node = {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}, "name": {"type": "string"}}}
    assert inlined == {"anyOf": [node], "$defs": {"Node": node}}
    validator = Draft202012Validator(inlined)
    assert validator.is_valid({"name": "a", "child": {"name": "b", "child": {}}})
    assert not validator.is_valid({"child": {"child": {"name": 3}}})


class _Row(TypedDict):
    """A row."""

    metadata: dict[str, Any]
    counts: NotRequired[dict[str, int]]


def test_a_free_form_object_is_just_an_object() -> None:
    row = results_schema((_Row,))["$defs"]["_Row"]["properties"]
    assert row["metadata"] == {"type": "object"}  # additionalProperties: {} would allow the same
    assert row["counts"] == {"type": "object", "additionalProperties": {"type": "integer"}}


@pytest.mark.parametrize(
    "value",
    [
        {"ok": True, "results": [], "count": 0, "mode": "rsf", "gate": {}},
        {"ok": False, "error": "no", "error_code": "invalid_input"},
        {"ok": False},
        {"ok": True, "results": [{"type": "memory"}], "count": 1, "mode": "rsf"},
        {"ok": True, "results": [], "count": "0", "mode": "rsf", "gate": {}},
    ],
)
def test_both_forms_judge_alike(value: dict[str, Any]) -> None:
    with_defs = Draft202012Validator(results_schema(tool_result_shapes("recall")))
    published = Draft202012Validator(output_schema("recall"))
    assert with_defs.is_valid(value) == published.is_valid(value)
