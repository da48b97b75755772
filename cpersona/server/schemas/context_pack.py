"""The context pack: reconstruct (recall's best rows, their supersede neighbours and links, in a budget)."""

from __future__ import annotations

from cpersona import shapes
from cpersona.config import Settings
from cpersona.limits import (
    MAX_REFS_PER_CALL,
    MAX_ROW_ID_DIGITS,
    RECONSTRUCT_BUDGET_DEFAULT,
    RECONSTRUCT_BUDGET_MAX,
    RECONSTRUCT_BUDGET_MIN,
    RECONSTRUCT_LIMIT_DEFAULT,
    RECONSTRUCT_LIMIT_MAX,
)
from cpersona.server.calls import api
from cpersona.server.schemas.common import (
    AGENT_ID,
    CHANNEL_READ,
    PROJECT_ID_READ,
    READS,
    TIME_CUE,
    ToolSpec,
    object_schema,
    string_schema,
    thousands,
)
from cpersona.server.schemas.links import FOLLOWS_READ


def tools(settings: Settings) -> list[ToolSpec]:
    """The context-pack tool (its description does not depend on settings)."""
    return [
        ToolSpec(
            name="reconstruct",
            results=(shapes.ReconstructResult,),
            # read on agent_id; linked rows only of agents the client may read (the links rule)
            access=FOLLOWS_READ,
            call=api("reconstruct"),
            title="Reconstruct the context of a question",
            summary="one call: the best rows, what superseded them, what they replaced and what they link "
            "to, quoted within a character budget; **the last item is the best match**",
            description=(
                "Get the context of a question in one call: recall's best rows for 'query' (and the rows "
                "you name in 'refs'), each with the memory in force that supersedes it ('current'), the "
                "memories it replaced ('replaced') and the memories linked to it either way ('linked'), "
                "all quoted verbatim from the store and trimmed to 'budget_chars' characters of text "
                f"(default {thousands(RECONSTRUCT_BUDGET_DEFAULT)}). The budget goes to the best matches "
                "first, then current versions, then history, then links; a row that no longer fits whole "
                "is quoted as a prefix ending in ' […]' with truncated: true, and rows that did not fit "
                "are listed in 'omitted' (get_contents has them). Items come grouped by seed, each group "
                "ending with its seed, the best group LAST: the last item is the best match. Each item "
                "says role (match | given | current | replaced | linked), seed and why. Recall "
                "statistics are not recorded. Rows you may not read are never followed."
            ),
            input_schema=object_schema(
                {
                    "agent_id": AGENT_ID,
                    "query": string_schema(
                        "What the context is about (recall's query). Optional when refs or a time_cue "
                        "is given.",
                        default="",
                    ),
                    "refs": {
                        "type": "array",
                        "maxItems": MAX_REFS_PER_CALL,
                        "items": {
                            "type": "string",
                            "pattern": f"^(mem|ep):[1-9][0-9]{{0,{MAX_ROW_ID_DIGITS - 1}}}$",
                        },
                        "description": "Rows of yours to build the pack around as well ('mem:<id>', "
                        "'ep:<id>'); unknown ones are listed in 'missing'.",
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
