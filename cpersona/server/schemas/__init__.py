"""Declarative tool registry: one entry per MCP tool (name, description, JSON Schema, annotations).

Descriptions are written for the calling agent: they say what the tool does,
what it returns and how to use the result. Schemas are what the dispatcher
validates arguments against, so they must stay accurate. Annotations must be
truthful (docs/tools.md#annotations): e.g. ``recall`` is *not* read-only because it records that
rows were returned, which demotes them for a few minutes.

The tools are grouped by job, one module each; ``build_tools`` joins the groups
in the order hosts list them.
"""

from __future__ import annotations

from cpersona.config import Settings
from cpersona.server.schemas import (
    context_pack,
    everyday,
    forgetting,
    links,
    operations,
    portability,
    quality,
)
from cpersona.server.schemas.common import ToolSpec

__all__ = ["TOOLS", "TOOLS_BY_NAME", "ToolSpec", "build_tools", "tool_names"]


def build_tools(settings: Settings) -> tuple[ToolSpec, ...]:
    """The registry for one server: descriptions quote the configured preview size and profile cap."""
    return (
        *everyday.tools(settings),
        *forgetting.tools(settings),
        *links.tools(settings),
        *context_pack.tools(settings),
        *quality.tools(settings),
        *operations.tools(settings),
        *portability.tools(settings),
    )


#: The registry with default settings: names and input schemas (descriptions aside) never depend on
#: settings, so the dispatcher validates against these and tests enumerate them.
TOOLS: tuple[ToolSpec, ...] = build_tools(Settings())
TOOLS_BY_NAME: dict[str, ToolSpec] = {spec.name: spec for spec in TOOLS}


def tool_names() -> list[str]:
    """Names of every tool the server exposes, in registry order."""
    return [spec.name for spec in TOOLS]
