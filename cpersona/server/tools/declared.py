"""The tools declared on their service method (``@public(tool=Tool(...))``, cpersona/public.py).

Their declarations reach the server through cpersona/server/tools/derived.json (written by
scripts/gen_tool_arguments.py with their argument schemas), so tools/list imports no service.
Here the names a declaration uses become the server's access rules, hint kinds and preview shapers.
"""

from __future__ import annotations

import dataclasses

from cpersona.server import calls
from cpersona.server.calls import Shape, api
from cpersona.server.rules import (
    ADMIN,
    EDIT_ROW,
    LIST_ROWS,
    PROCESS_CONTROL,
    PROCESS_STATE,
    READ,
    WRITE,
    Rule,
)
from cpersona.server.tools.common import ADDS, KEEPS, OVERWRITES, READS, Hints, ToolSpec, derived

ACCESS: dict[str, Rule] = {
    "read": Rule(READ),
    "write": Rule(WRITE),
    "admin": Rule(ADMIN),
    "edit_row": EDIT_ROW,
    "list_rows": LIST_ROWS,
    "process_state": PROCESS_STATE,
    "process_control": PROCESS_CONTROL,
}
HINTS: dict[str, Hints] = {"reads": READS, "adds": ADDS, "keeps": KEEPS, "overwrites": OVERWRITES}
PREVIEWS: dict[str, Shape] = {
    "listing": calls.shape_listing,
    "rows": calls.shape_rows,
    "contents": calls.shape_contents,
    "history": calls.shape_history,
}


def declared_tools(group: str) -> list[ToolSpec]:
    """The tools of ``group`` declared on their method, in the generator's order."""
    specs = []
    for name, entry in derived().items():
        declared = entry.get("declared")
        if declared is None or declared["group"] != group:
            continue
        access = ACCESS[declared["access"]]
        if declared["admin_when"]:
            access = dataclasses.replace(access, admin_when=declared["admin_when"])
        preview = declared["preview"]
        specs.append(
            ToolSpec(
                name=name,
                description=declared["description"],
                hints=HINTS[declared["hints"]],
                access=access,
                call=api(declared["method"], shape=None if preview is None else PREVIEWS[preview]),
                title=declared["title"],
                summary=declared["summary"],
                on_method=True,
            )
        )
    return specs
