"""The published outputSchema: the ``$defs`` form with its references written out and its descriptions left
out, describing the same shapes; and the ``envelope`` form (``CPERSONA_OUTPUT_SCHEMAS=envelope``)."""

from __future__ import annotations

import json
from typing import Any, NotRequired, TypedDict

import pytest
from jsonschema import Draft202012Validator

from cpersona.server.output_schemas import (
    envelope_schema,
    inline_refs,
    output_schema,
    results_schema,
    tool_result_shapes,
    without_descriptions,
)
from cpersona.server.tools import tool_names


@pytest.mark.parametrize("name", tool_names())
def test_the_published_schema_has_no_reference_left(name: str) -> None:
    published = output_schema(name)
    text = json.dumps(published)
    assert "$ref" not in text and "$defs" not in text
    Draft202012Validator.check_schema(published)
    assert published == without_descriptions(inline_refs(results_schema(tool_result_shapes(name))))
    assert '"description": "' not in text  # the annotations live in docs/api-shapes.md


def test_a_property_named_description_is_kept() -> None:
    schema = {
        "type": "object",
        "description": "an annotation",
        "properties": {"description": {"type": "string", "description": "a field"}},
        "required": ["description"],
    }
    assert without_descriptions(schema) == {
        "type": "object",
        "properties": {"description": {"type": "string"}},
        "required": ["description"],
    }


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


ENVELOPE_CASES = [
    ({"ok": True, "results": [], "count": 0, "mode": "rsf", "gate": {}}, True),
    ({"ok": False, "error": "no", "error_code": "invalid_input"}, True),
    ({"ok": True, "results": [{"type": "memory"}], "count": 1, "mode": "rsf"}, True),  # rows unchecked
    ({"ok": True, "results": [], "count": "0", "mode": "rsf", "gate": {}}, False),
    ({"ok": True, "results": {}, "count": 0}, False),
    ({"ok": True, "gate": [], "count": 0}, False),
    ({"ok": "yes"}, False),
    ({"results": []}, False),
]


@pytest.mark.parametrize(("value", "valid"), ENVELOPE_CASES)
def test_the_envelope_checks_the_top_level(value: dict[str, Any], valid: bool) -> None:
    envelope = Draft202012Validator(output_schema("recall", "envelope"))
    assert envelope.is_valid(value) is valid
    if Draft202012Validator(output_schema("recall")).is_valid(value):
        assert valid  # the envelope never refuses what the full schema accepts


def test_the_envelope_leaves_a_key_of_two_types_open() -> None:
    class _A(TypedDict):
        """A."""

        ok: bool
        value: int

    class _B(TypedDict):
        """B."""

        ok: bool
        value: str

    schema = envelope_schema(results_schema((_A, _B)))
    assert not any("value" in pattern for pattern in schema["patternProperties"])
    assert Draft202012Validator(schema).is_valid({"ok": True, "value": [1]})


@pytest.mark.parametrize("name", tool_names())
def test_every_envelope_is_a_few_subschemas(name: str) -> None:
    envelope = output_schema(name, "envelope")
    Draft202012Validator.check_schema(envelope)
    assert len(envelope["patternProperties"]) <= 7  # one per JSON type: the cost a client pays per call
