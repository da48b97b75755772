"""Declared associations: declare_associations and traverse (store's ``associations`` argument too)."""

from __future__ import annotations

from typing import Any

from cpersona import result_types
from cpersona.config import Settings
from cpersona.core.limits import (
    MAX_ASSOCIATIONS_PER_CALL,
    MAX_ENTITY_CHARS,
    MAX_ROW_ID,
    TRAVERSE_DEPTH_DEFAULT,
    TRAVERSE_DEPTH_MAX,
    TRAVERSE_LIMIT_DEFAULT,
    TRAVERSE_LIMIT_MAX,
)
from cpersona.server import calls
from cpersona.server.calls import api
from cpersona.server.rules import READ, WRITE, Rule
from cpersona.server.tools.common import (
    AGENT_ID,
    KEEPS,
    READS,
    ToolSpec,
    object_schema,
    one_of_types,
    row_id_schema,
)
from cpersona.services.links import DIRECTIONS, RELATION_PATTERN

#: Tools that follow declared links get the agents the client may read (cpersona.server.access).
FOLLOWS_READ = Rule(READ, follows_links=True)
FOLLOWS_WRITE = Rule(WRITE, follows_links=True)

RELATION: dict[str, Any] = {
    "type": "string",
    "pattern": RELATION_PATTERN,
    "description": "e.g. 'decided_by'.",
}

#: store's and declare_associations' list of links (exactly one of to / entity per item; the API checks).
ASSOCIATIONS: dict[str, Any] = {
    "type": "array",
    "maxItems": MAX_ASSOCIATIONS_PER_CALL,
    "description": "Typed links: {relation, to: 'mem:<id>'} or {relation, entity: 'name'}.",
    "items": object_schema(
        {
            "relation": RELATION,
            "to": row_id_schema("target memory", "mem"),
            "entity": {
                "type": "string",
                "minLength": 1,
                "maxLength": 4 * MAX_ENTITY_CHARS,
                "description": f"At most {MAX_ENTITY_CHARS} characters.",
            },
        },
        required=["relation"],
    ),
}


def tools(settings: Settings) -> list[ToolSpec]:
    """The association tools (descriptions do not depend on settings)."""
    return [
        ToolSpec(
            name="declare_associations",
            results=(result_types.DeclareAssociationsResult,),
            access=FOLLOWS_WRITE,  # write on the source's agent (named), read on the targets' (the service)
            call=api("declare_associations", tool_only=("from",), expand=lambda a: {"from_ref": a["from"]}),
            title="Declare links from a memory",
            summary="declare typed links from one of your memories to other memories or named entities "
            "(no extraction)",
            description=(
                "Link one of your memories to other memories or to named entities, typed as you declare (store takes the same for a new memory). All or nothing; nothing is inferred."
            ),
            input_schema=object_schema(
                {
                    "agent_id": AGENT_ID,
                    "from": row_id_schema("source memory (yours)", "mem"),
                    "associations": {**ASSOCIATIONS, "minItems": 1},
                },
                required=["agent_id", "from", "associations"],
            ),
            hints=KEEPS,
        ),
        ToolSpec(
            name="traverse",
            results=(result_types.TraverseResult,),
            access=FOLLOWS_READ,
            call=api(
                "traverse", tool_only=("from",), expand=lambda a: {"start": a["from"]}, shape=calls.shape_rows
            ),
            title="Walk declared links",
            summary="walk declared links (up to 5 hops) from a memory or an entity; rows you may not read "
            "are never reached",
            description=(
                "Walk the links you declared, breadth first, from a memory ('mem:<id>') or an entity; returns the memories and entities reached, each with hop and path."
            ),
            input_schema=object_schema(
                {
                    "agent_id": AGENT_ID,
                    "from": one_of_types(
                        {"type": "integer", "minimum": 1, "maximum": MAX_ROW_ID},
                        {"type": "string", "minLength": 1, "maxLength": 4 * MAX_ENTITY_CHARS},
                        description="'mem:<id>', 'entity:<name>' or an entity name.",
                    ),
                    "relation": {**RELATION, "description": "Follow only links of this relation."},
                    "depth": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": TRAVERSE_DEPTH_MAX,
                        "default": TRAVERSE_DEPTH_DEFAULT,
                        "description": "Hops from the start.",
                    },
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": TRAVERSE_LIMIT_MAX,
                        "default": TRAVERSE_LIMIT_DEFAULT,
                        "description": "Most nodes returned.",
                    },
                    "direction": {
                        "type": "string",
                        "enum": list(DIRECTIONS),
                        "default": "both",
                        "description": "both | out (as declared) | in (against it).",
                    },
                },
                required=["agent_id", "from"],
            ),
            hints=READS,
        ),
    ]
