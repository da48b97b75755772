"""A tool is declared once: the registry, dispatch, access classes and result shapes all read ToolSpec."""

from __future__ import annotations

import inspect
import subprocess
import sys
from typing import Any

import pytest

from cpersona import result_types
from cpersona.memory import Memory, method_results
from cpersona.server import calls
from cpersona.server.access import TOOL_ACCESS
from cpersona.server.calls import ApiCall, api
from cpersona.server.dispatch import HANDLERS, WORK_HANDLERS
from cpersona.server.output_schemas import tool_result_shapes
from cpersona.server.rules import READ, Rule
from cpersona.server.tools import TOOLS
from cpersona.server.tools.common import READS, ToolSpec, check_binding, object_schema


def declare(schema: dict[str, Any], call: Any, **extra: Any) -> ToolSpec:
    return ToolSpec(
        name="probe",
        description="d",
        input_schema=schema,
        hints=READS,
        access=Rule(READ),
        call=call,
        summary="s",
        **{"results": (result_types.ListMemoriesResult,), **extra},
    )


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


def test_a_declaration_naming_an_argument_the_method_lacks_is_refused() -> None:
    with pytest.raises(RuntimeError, match="'colour' is no parameter of Memory.list_memories"):
        check_binding(declare(object_schema({"colour": {"type": "string"}}), api("list_memories")))


def test_a_schema_default_the_method_does_not_apply_is_refused() -> None:
    schema = object_schema({"limit": {"type": "integer", "default": 7}})
    with pytest.raises(
        RuntimeError, match=r"default for 'limit' \(7\) is not Memory.list_memories's \(100\)"
    ):
        check_binding(declare(schema, api("list_memories")))


def test_a_tool_without_a_result_shape_or_with_another_than_its_methods_is_refused() -> None:
    with pytest.raises(RuntimeError, match="declares no result shape"):
        declare(object_schema({}), calls.persistence_status, results=())
    with pytest.raises(RuntimeError, match="results .* are not Memory.list_memories's"):
        check_binding(declare(object_schema({}), api("list_memories"), results=(result_types.LockResult,)))
    with pytest.raises(RuntimeError, match="Memory.no_such_method, which does not exist"):
        check_binding(declare(object_schema({}), api("no_such_method")))


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
