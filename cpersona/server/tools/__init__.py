"""Declarative tool registry: one entry per MCP tool (name, description, access, hints, what it calls).

Descriptions are written for the calling agent: what it needs to choose and call the tool (the
rest is in docs/tools.md). Input schemas and result shapes are the called function's signature
and return annotation (scripts/gen_tool_arguments.py). Annotations must be truthful
(docs/tools.md#annotations): e.g. ``recall`` is *not* read-only because it records that rows were
returned, which demotes them for a few minutes.

The tools are grouped by job, one module each, plus the tools declared on their service method
(``@public(tool=...)``); ``build_tools`` joins the groups in the order hosts list them.
"""

from __future__ import annotations

from cpersona.config import ConfigError, Settings
from cpersona.server.tools import (
    context_pack,
    everyday,
    forgetting,
    links,
    operations,
    portability,
    quality,
)
from cpersona.server.tools.common import ToolSpec
from cpersona.server.tools.declared import declared_tools

__all__ = [
    "EVERYDAY_TOOLS",
    "GROUPS",
    "TOOLS",
    "TOOLS_BY_NAME",
    "ToolSpec",
    "build_tools",
    "offered_tools",
    "tool_names",
]

#: What an agent uses in every session (``CPERSONA_TOOLS=everyday``): write and read memories, the session
#: summary, the standing profile, the supersede chain and the links. Everything else is operations an
#: operator runs now and then; each is one name away in the same setting.
EVERYDAY_TOOLS = (
    "store",
    "recall",
    "reconstruct",
    "get_contents",
    "archive_episode",
    "get_profile",
    "update_profile",
    "get_history",
    "declare_associations",
    "traverse",
)


#: The tool groups, in the order hosts list them: each group module's tools, then those declared on
#: their service method with that ``group`` (cpersona/public.py ``Tool``).
GROUPS = {
    "everyday": everyday.tools,
    "forgetting": forgetting.tools,
    "links": links.tools,
    "context_pack": context_pack.tools,
    "quality": quality.tools,
    "operations": operations.tools,
    "portability": portability.tools,
}


def build_tools(settings: Settings) -> tuple[ToolSpec, ...]:
    """The registry for one server: descriptions quote the configured preview size and profile cap."""
    return tuple(
        spec for group, tools in GROUPS.items() for spec in (*tools(settings), *declared_tools(group))
    )


def offered_tools(settings: Settings) -> tuple[ToolSpec, ...]:
    """The tools this server lists and answers (``CPERSONA_TOOLS``), in registry order.

    Unset or ``all``: every tool. ``everyday`` names a set; any other word must be a tool's name (ConfigError otherwise,
    so a typo stops the server instead of hiding a tool).
    """
    specs = build_tools(settings)
    if not settings.tools:  # unset: every tool
        return specs
    wanted: set[str] = set()
    for word in settings.tools:
        if word == "all":
            return specs
        if word == "everyday":
            wanted.update(EVERYDAY_TOOLS)
        elif word in TOOLS_BY_NAME:
            wanted.add(word)
        else:
            raise ConfigError(
                f"CPERSONA_TOOLS: {word[:80]!r} is no tool; use all, everyday or names from docs/tools.md"
            )
    return tuple(spec for spec in specs if spec.name in wanted)


#: The registry with default settings: names and input schemas (descriptions aside) never depend on
#: settings, so the dispatcher validates against these and tests enumerate them.
TOOLS: tuple[ToolSpec, ...] = build_tools(Settings())
TOOLS_BY_NAME: dict[str, ToolSpec] = {spec.name: spec for spec in TOOLS}


def tool_names() -> list[str]:
    """Names of every tool the server exposes, in registry order."""
    return [spec.name for spec in TOOLS]
