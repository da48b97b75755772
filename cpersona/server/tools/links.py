"""Declared associations: declare_associations and traverse (store's ``associations`` argument too)."""

from __future__ import annotations

from cpersona.config import Settings
from cpersona.server import calls
from cpersona.server.calls import api
from cpersona.server.rules import READ, WRITE, Rule
from cpersona.server.tools.common import KEEPS, READS, ToolSpec

#: Tools that follow declared links get the agents the client may read (cpersona.server.access).
FOLLOWS_READ = Rule(READ, follows_links=True)
FOLLOWS_WRITE = Rule(WRITE, follows_links=True)


def tools(settings: Settings) -> list[ToolSpec]:
    """The association tools (descriptions do not depend on settings)."""
    return [
        ToolSpec(
            name="declare_associations",
            access=FOLLOWS_WRITE,  # write on the source's agent (named), read on the targets' (the service)
            call=api("declare_associations", wire={"from": ("FromRef", ("from_ref",))}),
            title="Declare links from a memory",
            summary="declare typed links from one of your memories to other memories or named entities "
            "(no extraction)",
            description=(
                "Link one of your memories to other memories or to named entities, with relations you name. All or nothing."
            ),
            hints=KEEPS,
        ),
        ToolSpec(
            name="traverse",
            access=FOLLOWS_READ,
            call=api("traverse", wire={"from": ("WalkStart", ("start",))}, shape=calls.shape_rows),
            title="Walk declared links",
            summary="walk declared links (up to 5 hops) from a memory or an entity; rows you may not read "
            "are never reached",
            description=(
                "Walk the links you declared, breadth first, from a memory ('mem:<id>') or an entity; returns the memories and entities reached, each with hop and path."
            ),
            hints=READS,
        ),
    ]
