"""Forgetting on purpose: retire_memory and unretire_memory (docs/secrets-and-forgetting.md).

Declared in a group of their own so the everyday table stays as it was; dispatch, access, the
outputSchema and the README row follow from these declarations like every other tool's.
"""

from __future__ import annotations

from cpersona.config import Settings
from cpersona.server.calls import api
from cpersona.server.rules import EDIT_ROW
from cpersona.server.tools.common import KEEPS, ToolSpec


def tools(settings: Settings) -> list[ToolSpec]:
    """The forgetting tools (nothing in them depends on ``settings``)."""
    del settings
    return [
        ToolSpec(
            name="retire_memory",
            access=EDIT_ROW,
            call=api("retire_memory"),
            title="Retire a memory",
            summary="take a memory out of recall without a successor; kept for get_history",
            description=(
                "Take a memory that is no longer true out of recall (kept for get_history). When a newer "
                "memory replaces it, use supersedes instead."
            ),
            hints=KEEPS,
        ),
        ToolSpec(
            name="unretire_memory",
            access=EDIT_ROW,
            call=api("unretire_memory"),
            title="Unretire a memory",
            summary="bring a retired memory back into recall",
            description=("Bring a retired memory back into recall (undo retire_memory)."),
            hints=KEEPS,
        ),
    ]
