"""Shapes of the MCP resource calls (``cpersona://`` URIs over the read services)."""

# No ``from __future__ import annotations`` here: with string annotations Python 3.11 cannot see
# NotRequired at runtime, and the doc generator reads __optional_keys__.
from typing import Annotated, TypedDict

from cpersona.result_types.common import Success


class ResourceTemplateInfo(TypedDict):
    """One resource template."""

    uri_template: Annotated[str, "RFC 6570 template; the variable is {agent_id} (percent-encoded)."]
    name: Annotated[str, "Stable name."]
    title: Annotated[str, "Human-readable title."]
    description: Annotated[str, "What the resource holds."]
    mime_type: Annotated[str, "Always application/json."]


class ResourceTemplatesResult(TypedDict):
    """resource_templates: the templates of the per-agent resources."""

    ok: Success
    templates: Annotated[
        list[ResourceTemplateInfo], "Profile and recent memories, then one memory and one episode."
    ]


class ResourceInfo(TypedDict):
    """One concrete resource."""

    uri: Annotated[str, "cpersona://agents or cpersona://agents/<agent_id>/<kind>."]
    name: Annotated[str, "Stable name (per-agent names carry the agent id)."]
    title: Annotated[str, "Human-readable title."]
    description: Annotated[str, "What the resource holds."]
    mime_type: Annotated[str, "Always application/json."]


class ResourceLinkInfo(TypedDict):
    """A link to one stored row as a resource (recall and reconstruct carry these over MCP)."""

    uri: Annotated[str, "cpersona://agents/<agent_id>/memories/<id> or .../episodes/<id>."]
    name: Annotated[str, "The row's ref (mem:<id> or ep:<id>)."]
    mime_type: Annotated[str, "Always application/json."]


class ResourceListResult(TypedDict):
    """list_resources: one page of resources the caller may read."""

    ok: Success
    resources: Annotated[list[ResourceInfo], "The agents list first, then two per visible agent."]
    next_cursor: Annotated[str | None, "Pass it back for the next page; None on the last page."]


class ResourceReadResult(TypedDict):
    """read_resource: one resource's contents."""

    ok: Success
    uri: Annotated[str, "The URI read."]
    mime_type: Annotated[str, "application/json."]
    text: Annotated[str, "The JSON document (docs/resources.md describes each)."]


class CompletionResult(TypedDict):
    """complete_agent_id / complete_project_id: values starting with the prefix."""

    ok: Success
    values: Annotated[list[str], "At most 100, sorted."]
    total: Annotated[int, "How many matched."]
    has_more: Annotated[bool, "More matched than were returned."]
