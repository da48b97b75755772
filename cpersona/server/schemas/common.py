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

from cpersona import shapes
from cpersona.health.checks import check_names
from cpersona.health.deep_checks import deep_check_names
from cpersona.limits import (
    LIST_LIMIT_MAX,
    MAX_LIST_ITEMS,
    MAX_ROW_ID,
    MAX_ROW_ID_DIGITS,
    RECALL_LIMIT_DEFAULT,
    RECALL_LIMIT_MAX,
    TTL_MAX_SECONDS,
    TTL_MIN_SECONDS,
)
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
    results: tuple[type, ...]  # its success shapes (cpersona/shapes/): the outputSchema
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
    method_results = shapes.METHOD_RESULTS.get(call.method)
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
        "description": f"The {kind} id: an integer, or its ref string '{prefix}:<id>'.",
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
        "description": (
            "Memories of the same agent this one replaces, e.g. ['mem:12']. They stay stored, marked "
            "superseded by this one (get_history shows the chain) and are left out of recall unless "
            "include_superseded is true. Refused, writing nothing, when a ref is unknown or another "
            "agent's (not_found), locked (locked), already superseded, this memory itself, or would "
            f"make a cycle (supersede_refused). At most {MAX_LIST_ITEMS}."
        ),
    }


INCLUDE_SUPERSEDED = bool_schema(
    "Also return memories that a newer memory superseded; each says superseded_by and superseded_at."
)
INCLUDE_RETIRED = bool_schema(
    "Also return memories retired with retire_memory; each says retired_at and retire_reason."
)


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
        "description": (
            "Seconds until the memory expires (1 to ten years): from then on no recall returns it, and it is "
            "deleted after CPERSONA_EXPIRY_GRACE. For temporary facts (a meeting room, an on-call week)."
        ),
    },
    "expires_at": one_of_types(
        "string",
        "number",
        description=(
            "When the memory expires, ISO-8601 (no zone = UTC) or Unix seconds, 1 second to ten years from now; "
            "instead of ttl."
        ),
    ),
}


AGENT_ID = string_schema(
    "Your agent identifier. Rows are isolated per agent: you only ever see, edit or delete rows "
    "stored under the same agent_id. The empty string is a valid (distinct) agent."
)
AGENT_ID_OPTIONAL_OWNER = string_schema(
    "Your agent identifier. When given, the row must belong to this agent or the call fails as "
    "not found (other agents' rows are never revealed). Always pass it."
)
PROJECT_ID_READ = string_schema(
    "Project scope. Omitted: every project. '' : only the global (project-less) pool. "
    "'X': project X plus the global pool."
)
PROJECT_ID_WRITE = string_schema("Project to file the row under; omitted or '' stores it in the global pool.")
CHANNEL_READ = string_schema(
    "Channel scope. Omitted or '': every channel. 'X': channel X plus channel-less rows."
)
CHANNEL_WRITE = string_schema(
    "Channel (e.g. a chat room or tool name) to file the row under; omitted stores ''."
)
USER_ID = string_schema("Whose profile, when one agent serves several users; default ''.", default="")
TIMESTAMP = one_of_types(
    "string",
    "number",
    description="When it happened: ISO-8601 (naive times are taken as UTC) or Unix seconds.",
)


#: recall's time cue (retrieval/time_cue.py; docs/retrieval.md "Time cues").
TIME_CUE: dict[str, Any] = {
    "type": "object",
    "description": (
        "When the memory happened, if you know: a period (phrase, or start and/or end) and how sure you "
        "are. It acts on each memory's own timestamp (as given at store). certainty 'sure' keeps only "
        "rows in the period; 'likely' (default) and 'vague' lift rows in or near it (vague: less, and "
        "farther around) and never hide the best plain match. Without a cue, one unambiguous date "
        "phrase in the query ('in May 2023', 'yesterday', '先週') acts as a 'likely' cue. The cue that "
        "acted is echoed as 'time_cue'."
    ),
    "properties": {
        "phrase": string_schema(
            "A date phrase read against now: 'today', 'yesterday', 'last week', 'this month', 'last year', "
            "'3 days ago', 'in May 2023', '8 May 2023', '2023-05', '先週', '昨日', '2023年5月'. "
            "Not with start/end."
        ),
        "start": one_of_types(
            "string",
            "number",
            description="Period start: a date '2023-05-01' (from its start), '2023-05', '2023', an "
            "ISO-8601 time (naive = UTC) or Unix seconds.",
        ),
        "end": one_of_types(
            "string",
            "number",
            description="Period end, included: a date '2023-05-31' (through its end), '2023-05', "
            "'2023', an ISO-8601 time or Unix seconds. Not before start.",
        ),
        "certainty": {
            "type": "string",
            "enum": ["sure", "likely", "vague"],
            "default": "likely",
            "description": "sure = filter to the period; likely = boost rows in it; vague = a milder, "
            "wider boost.",
        },
        "now": one_of_types(
            "string",
            "number",
            description="What relative phrases count from (ISO-8601 with your offset, so 'yesterday' "
            "is your yesterday, or Unix seconds); default the server's current time, UTC.",
        ),
    },
    "additionalProperties": False,
}


def thousands(value: int) -> str:
    """A number as descriptions spell it (thousands separated by commas)."""
    return f"{value:,}"


RECALL_SCOPE: dict[str, Any] = {
    "agent_id": AGENT_ID,
    "query": string_schema(
        "What to look for, in natural language or exact terms (names, identifiers, error strings, "
        "CJK text all work). Empty returns the most recent memories.",
        default="",
    ),
    "limit": {
        "type": "integer",
        "minimum": 0,
        "maximum": RECALL_LIMIT_MAX,
        "default": RECALL_LIMIT_DEFAULT,
        "description": f"Maximum rows to return (0..{RECALL_LIMIT_MAX}, default {RECALL_LIMIT_DEFAULT}).",
    },
    "deep": bool_schema("Ignore time decay (search old history as if it were recent)."),
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
    description="Who said it: {type, id, name} (e.g. {type: 'user', id: 'U123', name: 'Ana'}) or that object as JSON text.",
)
METADATA_SCHEMA = one_of_types(
    "object",
    "string",
    description="Free-form JSON object (or its JSON text) kept with the memory; size-capped, refused when too big.",
)
