"""The context pack: reconstruct (recall's best rows, their supersede neighbours and links, in a budget)."""

from __future__ import annotations

from cpersona import result_types
from cpersona.config import Settings
from cpersona.core.limits import (
    MAX_REFS_PER_CALL,
    MAX_ROW_ID_DIGITS,
    RECONSTRUCT_BUDGET_DEFAULT,
    RECONSTRUCT_BUDGET_MAX,
    RECONSTRUCT_BUDGET_MIN,
    RECONSTRUCT_LIMIT_DEFAULT,
    RECONSTRUCT_LIMIT_MAX,
)
from cpersona.server.calls import api
from cpersona.server.tools.common import (
    AGENT_ID,
    CHANNEL_READ,
    PROJECT_ID_READ,
    READS,
    TIME_CUE,
    ToolSpec,
    object_schema,
    string_schema,
)
from cpersona.server.tools.links import FOLLOWS_READ


def tools(settings: Settings) -> list[ToolSpec]:
    """The context-pack tool (its description does not depend on settings)."""
    return [
        ToolSpec(
            name="reconstruct",
            results=(result_types.ReconstructResult,),
            # read on agent_id; linked rows only of agents the client may read (the links rule)
            access=FOLLOWS_READ,
            call=api("reconstruct"),
            title="Reconstruct the context of a question",
            summary="one call: the best rows, what superseded them, what they replaced and what they link "
            "to, quoted within a character budget; **the last item is the best match**",
            description=(
                "The context of a question in one call: recall's best rows (and rows you name in refs), each with the memory that superseded it, those it replaced and its links, quoted verbatim within budget_chars. The best group comes LAST; what did not fit is listed in 'omitted'."
            ),
            input_schema=object_schema(
                {
                    "agent_id": AGENT_ID,
                    "query": string_schema(
                        "What the context is about (optional with refs or time_cue).",
                        default="",
                    ),
                    "refs": {
                        "type": "array",
                        "maxItems": MAX_REFS_PER_CALL,
                        "items": {
                            "type": "string",
                            "pattern": f"^(mem|ep):[1-9][0-9]{{0,{MAX_ROW_ID_DIGITS - 1}}}$",
                        },
                        "description": "Your rows to build around too ('mem:<id>', 'ep:<id>').",
                    },
                    "budget_chars": {
                        "type": "integer",
                        "minimum": RECONSTRUCT_BUDGET_MIN,
                        "maximum": RECONSTRUCT_BUDGET_MAX,
                        "default": RECONSTRUCT_BUDGET_DEFAULT,
                        "description": "Most characters of quoted text (the items' text fields together).",
                    },
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": RECONSTRUCT_LIMIT_MAX,
                        "default": RECONSTRUCT_LIMIT_DEFAULT,
                        "description": "Most recall rows taken as seeds.",
                    },
                    "time_cue": TIME_CUE,
                    "project_id": PROJECT_ID_READ,
                    "channel": CHANNEL_READ,
                },
                required=["agent_id"],
            ),
            hints=READS,
        ),
    ]
