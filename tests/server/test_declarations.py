"""A tool is declared once: the registry, dispatch, access classes and result shapes all read ToolSpec."""

from __future__ import annotations

import importlib.util
import inspect
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import Field

from cpersona import result_types
from cpersona.memory import Memory, method_results
from cpersona.server.access import TOOL_ACCESS
from cpersona.server.calls import ApiCall, api, local
from cpersona.server.dispatch import HANDLERS, WORK_HANDLERS
from cpersona.server.json_schema import parameters_schema
from cpersona.server.output_schemas import tool_result_shapes
from cpersona.server.rules import READ, Rule
from cpersona.server.tools import TOOLS
from cpersona.server.tools.common import READS, ToolSpec


def _gen_tool_arguments() -> Any:
    path = Path(__file__).resolve().parents[2] / "scripts" / "gen_tool_arguments.py"
    spec = importlib.util.spec_from_file_location("gen_tool_arguments", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = _gen_tool_arguments()


def declare(call: Any, name: str = "probe") -> ToolSpec:
    return ToolSpec(name=name, description="d", hints=READS, access=Rule(READ), call=call, summary="s")


def test_every_table_is_read_from_the_declarations() -> None:
    names = [spec.name for spec in TOOLS]
    assert list(TOOL_ACCESS) == list(HANDLERS) == names
    for spec in TOOLS:
        assert TOOL_ACCESS[spec.name] is spec.access
        assert HANDLERS[spec.name] is spec.call
        assert tool_result_shapes(spec.name) == spec.results and spec.results
    assert set(WORK_HANDLERS) == {spec.name for spec in TOOLS if spec.long}


def test_a_tool_that_is_a_memory_method_takes_its_shapes_and_long_from_the_method() -> None:
    for spec in TOOLS:
        if isinstance(spec.call, ApiCall):
            assert spec.results == method_results()[spec.call.method], spec.name
            takes_work = "work" in inspect.signature(getattr(Memory, spec.call.method)).parameters
            assert spec.long is takes_work, spec.name


def test_schema_defaults_are_the_methods_defaults() -> None:
    # One set of defaults: the method's signature; a schema only quotes it.
    checked = 0
    for spec in TOOLS:
        if not isinstance(spec.call, ApiCall):
            continue
        for name, prop in spec.input_schema.get("properties", {}).items():
            default = spec.call.default(name)
            if "default" in prop and default not in (inspect.Parameter.empty, None):
                assert prop["default"] == default, (spec.name, name)
                checked += 1
    assert checked >= 20


def test_the_generated_schemas_are_current() -> None:
    # cpersona/server/tools/derived.json is what the signatures say (python scripts/gen_tool_arguments.py).
    assert GEN.main(["--check"]) == 0


def test_arguments_come_from_the_signature_bounds_and_descriptions_from_its_fields() -> None:
    def probe(
        call: Any,
        *,
        count: Annotated[int, Field(ge=1, le=9, description="How many.")] = 3,
        name: Annotated[str | None, Field(description="Omit for all.")] = None,
        tags: Annotated[Sequence[str] | None, Field(max_length=4)] = None,
        internal: Annotated[bool, Field(exclude=True)] = True,
        ref: str,
    ) -> result_types.LockResult:
        raise AssertionError("never called")

    schema = parameters_schema(probe, skip=("call",))
    assert schema == {
        "type": "object",
        "properties": {
            "count": {
                "type": "integer",
                "minimum": 1,
                "maximum": 9,
                "description": "How many.",
                "default": 3,
            },
            "name": {"type": "string", "description": "Omit for all."},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 4},
            "ref": {"type": "string"},
        },
        "additionalProperties": False,
        "required": ["ref"],
    }
    assert GEN.derive(declare(local(probe)))["results"] == ["LockResult"]


def test_a_wire_argument_stands_where_the_parameters_it_replaces_stood() -> None:
    def probe(agent_id: str, start: str | int, *, depth: int = 2) -> result_types.TraverseResult:
        raise AssertionError("never called")

    schema = parameters_schema(probe, wire={"from": (Annotated[str, Field(min_length=1)], ("start",))})
    assert list(schema["properties"]) == ["agent_id", "from", "depth"]
    assert schema["properties"]["from"] == {"type": "string", "minLength": 1}
    assert schema["required"] == ["agent_id", "from"]


def test_a_function_without_a_result_shape_is_refused() -> None:
    def untyped(call: Any) -> dict[str, Any]:
        return {}

    with pytest.raises(RuntimeError, match="names no result shape"):
        GEN.derive(declare(local(untyped)))
    with pytest.raises(RuntimeError, match="Memory.no_such_method, which does not exist"):
        GEN.derive(declare(api("no_such_method")))


def test_a_tool_whose_schema_is_not_generated_says_how_to_generate_it() -> None:
    with pytest.raises(RuntimeError, match="run python scripts/gen_tool_arguments.py"):
        _ = declare(api("list_memories"), name="not_generated_yet").input_schema


def test_the_registry_is_built_without_importing_memory() -> None:
    # tools/list is answered while Memory (numpy, SQLite, the model runtime) is still importing
    # (tests/server/test_startup.py); the declarations must not need it.
    code = (
        "import sys; from cpersona.server.app import tool_list; from cpersona.server.tools import build_tools; "
        "from cpersona.config import Settings; tool_list(build_tools(Settings())); "
        "print([m for m in ('cpersona.memory', 'numpy', 'jsonschema') if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "[]", (done.stdout, done.stderr)


def test_every_name_a_method_declaration_may_use_means_something_to_the_server() -> None:
    # @public(tool=Tool(access=..., hints=..., preview=...)) names them (the services sit below the server).
    from typing import get_args

    from cpersona.core.public import Access, HintKind, Preview
    from cpersona.server.tools.declared import ACCESS, HINTS, PREVIEWS

    assert set(ACCESS) == set(get_args(Access))
    assert set(HINTS) == set(get_args(HintKind))
    assert set(PREVIEWS) == set(get_args(Preview))
