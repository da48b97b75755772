"""The context pack: reconstruct (recall's best rows, their supersede neighbours and links, in a budget)."""

from __future__ import annotations

from cpersona.config import Settings
from cpersona.server.calls import api
from cpersona.server.tools.common import (
    READS,
    ToolSpec,
)
from cpersona.server.tools.links import FOLLOWS_READ


def tools(settings: Settings) -> list[ToolSpec]:
    """The context-pack tool (its description does not depend on settings)."""
    return [
        ToolSpec(
            name="reconstruct",
            # read on agent_id; linked rows only of agents the client may read (the links rule)
            access=FOLLOWS_READ,
            call=api("reconstruct"),
            title="Reconstruct the context of a question",
            summary="one call: the best rows, what superseded them, what they replaced and what they link "
            "to, quoted within a character budget; **the last item is the best match**",
            description=(
                "The context of a question in one call: recall's best rows (and refs), each with what superseded it, what it replaced and its links, quoted within budget_chars. The best group comes LAST; 'omitted' lists what did not fit."
            ),
            hints=READS,
        ),
    ]
