"""The building blocks of the tool registry: ``ToolSpec``, JSON-Schema helpers, shared argument schemas.

Descriptions are written for the calling agent: they say what the tool does,
what it returns and how to use the result. Schemas are what the dispatcher
validates arguments against, so they must stay accurate. Annotations must be
truthful (docs/tools.md#annotations): e.g. ``recall`` is *not* read-only because it records that
rows were returned, which demotes them for a few minutes.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from cpersona.core.limits import (
    LIST_LIMIT_MAX,
    MAX_LIST_ITEMS,
    MAX_ROW_ID,
    MAX_ROW_ID_DIGITS,
    RECALL_LIMIT_DEFAULT,
    RECALL_LIMIT_MAX,
    TTL_MAX_SECONDS,
    TTL_MIN_SECONDS,
)
from cpersona.health.checks import check_names
from cpersona.health.deep_checks import deep_check_names
from cpersona.server.calls import ApiCall, Handler
from cpersona.server.rules import Rule

#: Names accepted by check_health / deep_check ``checks`` (their registries are the source).
HEALTH_CHECKS = tuple(check_names())
DEEP_CHECKS = tuple(deep_check_names())


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


@dataclass(frozen=True)
class ToolSpec:
    """One MCP tool, declared once: what hosts see in tools/list, who may call it, what it calls.

    The registry (tools/list), the dispatcher, the access checks (``access``) and the
    ``outputSchema`` (``results``) are all read from this. ``call`` is usually
    ``api("<Memory method>")`` (cpersona/server/calls.py): the tool's arguments go to that method
    by name and its signature holds the defaults. ``results`` is written out (tools/list is
    answered before ``Memory`` is imported); ``check_binding`` holds it, the argument names and
    the defaults to the method.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    hints: Hints
    access: Rule
    call: Handler
    results: tuple[type, ...]  # its success shapes (cpersona/result_types/): the outputSchema
    title: str = ""
    summary: str = ""  # the README's one line (scripts/gen_readme_tools.py); Markdown

    def __post_init__(self) -> None:
        if not self.results:
            raise RuntimeError(f"tool {self.name} declares no result shape (results=...)")
        if not self.summary:
            raise RuntimeError(f"tool {self.name} declares no summary (its README line)")

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


def check_binding(spec: ToolSpec) -> None:
    """Refuse a declaration that disagrees with the ``Memory`` method it calls (RuntimeError).

    What can still disagree: a method that does not exist, an argument the method does not take,
    a default the schema advertises that the method does not apply (a method default of None means
    "the service decides", e.g. calibrate_threshold's sample size; the schema may quote it), and
    result shapes other than the method's. The dispatcher runs this for every tool when it is
    imported (it imports ``Memory`` anyway; tools/list must not).
    """
    call = spec.call
    if not isinstance(call, ApiCall):
        return
    tool, schema = spec.name, spec.input_schema
    call.parameters  # noqa: B018 - raises when Memory has no such method
    from cpersona.memory import method_results as results_by_method  # imports Memory: not at tools/list

    method_results = results_by_method().get(call.method)
    if method_results is not None and set(method_results) != set(spec.results):  # order aside
        raise RuntimeError(
            f"tool {tool}: results {spec.results} are not Memory.{call.method}'s {method_results}"
        )
    for name, prop in schema.get("properties", {}).items():
        if not call.takes(name):
            raise RuntimeError(f"tool {tool}: argument {name!r} is no parameter of Memory.{call.method}")
        default = call.default(name)
        if (
            "default" in prop
            and default not in (inspect.Parameter.empty, None)
            and prop["default"] != default
        ):
            raise RuntimeError(
                f"tool {tool}: the schema's default for {name!r} ({prop['default']!r}) is not "
                f"Memory.{call.method}'s ({default!r})"
            )


def object_schema(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


def string_schema(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


def bool_schema(description: str, default: bool = False) -> dict[str, Any]:
    return {"type": "boolean", "description": description, "default": default}


def list_limit_schema(default: int) -> dict[str, Any]:
    return {"type": "integer", "minimum": 0, "maximum": LIST_LIMIT_MAX, "default": default}


def row_id_schema(kind: str, prefix: str) -> dict[str, Any]:
    # One branch per form, so each keyword sits beside the one type it constrains (strict validators
    # refuse "minimum" or "pattern" next to a type array).
    return {
        "anyOf": [
            {"type": "integer", "minimum": 1, "maximum": MAX_ROW_ID},
            {"type": "string", "pattern": f"^{prefix}:[1-9][0-9]{{0,{MAX_ROW_ID_DIGITS - 1}}}$"},
        ],
    }


def row_target(kind: str, prefix: str) -> dict[str, Any]:
    """The arguments of a tool that acts on one row by id: ``<kind>_id`` and the owner check."""
    return object_schema(
        {f"{kind}_id": row_id_schema(kind, prefix), "agent_id": AGENT_ID_OPTIONAL_OWNER},
        required=[f"{kind}_id"],
    )


def supersedes_schema() -> dict[str, Any]:
    """``supersedes``: memory refs of the same agent that the memory replaces (history kept)."""
    return {
        "type": "array",
        "items": row_id_schema("memory", "mem"),
        "maxItems": MAX_LIST_ITEMS,
        "description": ("Your memories this one replaces (kept, left out of recall)."),
    }


INCLUDE_SUPERSEDED: dict[str, Any] = {"type": "boolean", "default": False}
INCLUDE_RETIRED: dict[str, Any] = {"type": "boolean", "default": False}


def one_of_types(*types: str | dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A value of any of ``types`` as portable JSON Schema: ``anyOf`` of single-type schemas.

    Type arrays (``"type": ["string", "number"]``) mean the same, but strict validators (Ajv strict
    mode, the MCP inspector's strict check) refuse them. A dict is taken as a whole branch.
    """
    branches = [{"type": t} if isinstance(t, str) else t for t in types]
    return {"anyOf": branches, **extra}


#: store's ttl / expires_at (docs/secrets-and-forgetting.md#expiry).
EXPIRY: dict[str, Any] = {
    "ttl": {
        "type": "number",
        "minimum": TTL_MIN_SECONDS,
        "maximum": TTL_MAX_SECONDS,
        "description": "Seconds until it expires (leaves recall; deleted later).",
    },
    "expires_at": one_of_types("string", "number", description="When it expires; instead of ttl."),
}


# Shared argument texts are short on purpose: they repeat in every tool a host hands its model each
# session (docs/tools.md, "Rules that apply to every tool", says the rest once).
# agent_id says what it is, and the instructions say rows are isolated per agent: no text per tool.
AGENT_ID: dict[str, Any] = {"type": "string"}
AGENT_ID_OPTIONAL_OWNER = string_schema("Always pass it.")
PROJECT_ID_READ = string_schema("Omitted: all; '': global only; 'X': X + global.")
PROJECT_ID_WRITE = string_schema("Default '': the global pool.")
CHANNEL_READ = string_schema("Omitted or '': all; 'X': X + channel-less rows.")
CHANNEL_WRITE: dict[str, Any] = {"type": "string"}
USER_ID = string_schema("When one agent serves several users.", default="")
TIMESTAMP = one_of_types("string", "number", description="ISO-8601 (naive = UTC) or Unix seconds.")


#: recall's time cue (retrieval/time_cue.py; docs/retrieval.md "Time cues").
TIME_CUE: dict[str, Any] = {
    "type": "object",
    "description": "When it happened, if known.",
    "properties": {
        "phrase": string_schema("e.g. 'last week', 'in May 2023'; or start/end."),
        "start": one_of_types("string", "number", description="Date, ISO-8601 or Unix s."),
        "end": one_of_types("string", "number", description="Included."),
        "certainty": {
            "type": "string",
            "enum": ["sure", "likely", "vague"],
            "default": "likely",
            "description": "sure filters; likely, vague boost.",
        },
        "now": one_of_types("string", "number", description="For relative phrases."),
    },
    "additionalProperties": False,
}


def thousands(value: int) -> str:
    """A number as descriptions spell it (thousands separated by commas)."""
    return f"{value:,}"


RECALL_SCOPE: dict[str, Any] = {
    "agent_id": AGENT_ID,
    "query": string_schema("Empty: the most recent.", default=""),
    "limit": {
        "type": "integer",
        "minimum": 0,
        "maximum": RECALL_LIMIT_MAX,
        "default": RECALL_LIMIT_DEFAULT,
    },
    "deep": bool_schema("Ignore time decay."),
    "channel": CHANNEL_READ,
    "project_id": PROJECT_ID_READ,
}

SOURCE_SCHEMA = one_of_types(
    {
        "type": "object",
        "properties": {
            "type": {"type": "string"},
            "id": one_of_types("string", "integer"),
            "name": {"type": "string"},
        },
    },
    "string",
    description="Who said it: {type, id, name}.",
)
METADATA_SCHEMA = one_of_types(
    "object",
    "string",
    description="A JSON object kept with it.",
)
