"""The building blocks of the tool registry: ``ToolSpec``, the hint kinds, the generated schemas.

Descriptions are written for the calling agent: they say what an agent needs to choose and call
the tool (the rest is in docs/tools.md). Input schemas are generated from the functions' signatures
(cpersona/arguments, scripts/gen_tool_arguments.py); the dispatcher validates against them. Annotations must be
truthful (docs/tools.md#annotations): e.g. ``recall`` is *not* read-only because it records that
rows were returned, which demotes them for a few minutes.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cpersona import result_types
from cpersona.server.calls import ApiCall, Handler
from cpersona.server.rules import Rule


@dataclass(frozen=True)
class Hints:
    """A tool's MCP annotations (docs/tools.md#annotations): they must be truthful."""

    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool = False  # the server never reaches outside its own database


#: The four kinds most tools are: look only; add a row each call; set a state (a repeat changes
#: nothing more); overwrite or delete what was there.
READS = Hints(read_only=True, destructive=False, idempotent=True)
ADDS = Hints(read_only=False, destructive=False, idempotent=False)
KEEPS = Hints(read_only=False, destructive=False, idempotent=True)
OVERWRITES = Hints(read_only=False, destructive=True, idempotent=True)


#: Each tool's input schema and result shapes, read from its function's signature and return
#: annotation by scripts/gen_tool_arguments.py (tools/list is answered before the services, numpy
#: and SQLite are imported, so it is generated, not derived at start).
DERIVED_FILE = Path(__file__).with_name("derived.json")


@functools.cache
def derived() -> dict[str, Any]:
    """The generated argument schemas and result shapes, by tool name."""
    data: dict[str, Any] = json.loads(DERIVED_FILE.read_text(encoding="utf-8"))
    return data


@dataclass(frozen=True)
class ToolSpec:
    """One MCP tool, declared once: what hosts see in tools/list, who may call it, what it calls.

    The registry (tools/list), the dispatcher, the access checks (``access``) and the
    ``outputSchema`` are all read from this. ``call`` is ``api("<Memory method>")`` or
    ``local(<function>)`` (cpersona/server/calls.py): the tool's arguments go to that function by
    name. Its input schema and its result shapes are the function's signature and return
    annotation (generated into ``derived.json``); the declaration holds only what a signature
    cannot say. ``describe`` replaces an argument's description with settings-dependent text.
    """

    name: str
    description: str
    hints: Hints
    access: Rule
    call: Handler
    title: str = ""
    summary: str = ""  # the README's one line (scripts/gen_readme_tools.py); Markdown
    describe: Mapping[str, str] = field(default_factory=dict)
    on_method: bool = False  # declared on its service method (@public(tool=...)), not in a group module

    def __post_init__(self) -> None:
        if not self.summary:
            raise RuntimeError(f"tool {self.name} declares no summary (its README line)")

    def _derived(self) -> dict[str, Any]:
        found = derived().get(self.name)
        if found is None:
            raise RuntimeError(
                f"tool {self.name}: no generated input schema; run python scripts/gen_tool_arguments.py"
            )
        return dict(found)

    @property
    def input_schema(self) -> dict[str, Any]:
        """The arguments' JSON Schema, from the function's signature (``describe`` applied)."""
        schema: dict[str, Any] = self._derived()["input_schema"]
        if not self.describe:
            return schema
        properties = {
            name: {**prop, "description": self.describe[name]} if name in self.describe else prop
            for name, prop in schema["properties"].items()
        }
        return {**schema, "properties": properties}

    @property
    def results(self) -> tuple[type, ...]:
        """Its success shapes (cpersona/result_types/), from the function's return annotation."""
        return tuple(getattr(result_types, name) for name in self._derived()["results"])

    @property
    def long(self) -> bool:
        """A long tool: it honours a cancel at batch boundaries and reports progress (docs/tools.md)."""
        return isinstance(self.call, ApiCall) and self.call.long

    def annotations(self) -> dict[str, Any]:
        """MCP tool annotations as plain camelCase JSON (what tools/list carries)."""
        return {
            "title": self.title or None,
            "readOnlyHint": self.hints.read_only,
            "destructiveHint": self.hints.destructive,
            "idempotentHint": self.hints.idempotent,
            "openWorldHint": self.hints.open_world,
        }


def thousands(value: int) -> str:
    """A number as descriptions spell it (thousands separated by commas)."""
    return f"{value:,}"
