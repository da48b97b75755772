"""MCP resources as plain Python: the agents list, one agent's profiles, its most recent memories.

A resource is addressed by a ``cpersona://`` URI. Agent ids may hold any character (``/``
included), so they are percent-encoded in one path segment (``quote(agent_id, safe="")``);
``resource_uri`` builds the URIs and ``parse_uri`` is its exact inverse, refusing anything else.

Access follows the tools' ACL (docs/resources.md#access): ``allowed_agents`` is the set of agents the caller may
read (None: every agent, as without an ACL). The list shows only those agents; reading another
agent's resource raises ``Forbidden`` before anything is looked up, so a refusal says nothing
about whether that agent exists. Every method returns plain JSON-ready dicts; the MCP layer only
wraps them.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote, unquote

from cpersona.core.limits import MAX_IDENTIFIER_CHARS, RESOURCE_LIST_PAGE, RESOURCE_RECENT_MEMORIES
from cpersona.core.public import public
from cpersona.core.validation import agent_set
from cpersona.errors import Forbidden, InvalidInput, NotFound
from cpersona.result_types.resources import (
    CompletionResult,
    ResourceInfo,
    ResourceLinkInfo,
    ResourceListResult,
    ResourceReadResult,
    ResourceTemplateInfo,
    ResourceTemplatesResult,
)
from cpersona.services.browser import Browser
from cpersona.services.reader import Reader

SCHEME = "cpersona://"
AGENTS_URI = f"{SCHEME}agents"
_AGENT_PREFIX = f"{AGENTS_URI}/"
#: Longest URI looked at (an encoded identifier is at most 3 bytes per UTF-8 byte, 4 per char).
MAX_URI_CHARS = len(_AGENT_PREFIX) + 12 * MAX_IDENTIFIER_CHARS + 32
JSON_MIME = "application/json"

Kind = Literal["agents", "profile", "memories"]


@dataclass(frozen=True)
class Template:
    """One resource template (RFC 6570, level 1: the one variable is ``agent_id``)."""

    kind: Kind
    uri_template: str
    name: str
    title: str
    description: str


TEMPLATES: tuple[Template, ...] = (
    Template(
        "profile",
        f"{_AGENT_PREFIX}{{agent_id}}/profile",
        "agent-profile",
        "Agent profile",
        "The agent's standing profiles (one per project and user), newest first, as JSON: "
        "{agent_id, profiles: [{project_id, user_id, content, updated_at}], count}.",
    ),
    Template(
        "memories",
        f"{_AGENT_PREFIX}{{agent_id}}/memories",
        "agent-recent-memories",
        "Agent's recent memories",
        f"The agent's {RESOURCE_RECENT_MEMORIES} most recently stored memories, newest first, as JSON: "
        "{agent_id, items, count, total} (items as list_memories returns them).",
    ),
)
_TEMPLATE_BY_KIND = {t.kind: t for t in TEMPLATES}

#: One stored row per URI: what recall and reconstruct link to beside their rows (a ref's kind → the path
#: segment). Listed in resources/templates/list, not in resources/list (there are as many as rows).
_ROW_SEGMENTS = {"mem": "memories", "ep": "episodes"}
_ROW_KINDS = {segment: kind for kind, segment in _ROW_SEGMENTS.items()}
ROW_TEMPLATES: tuple[tuple[str, str, str, str], ...] = (
    (
        f"{_AGENT_PREFIX}{{agent_id}}/memories/{{id}}",
        "memory",
        "Memory",
        "One stored memory in full, as JSON (a row as get_contents returns it).",
    ),
    (
        f"{_AGENT_PREFIX}{{agent_id}}/episodes/{{id}}",
        "episode",
        "Episode",
        "One archived session summary in full, as JSON (a row as get_contents returns it).",
    ),
)

AGENTS_DESCRIPTION = (
    "Every agent this client may read, with its counts of memories, episodes and profiles and the URIs "
    "of its profile and recent memories, as JSON: {agents: [...], count}."
)


def resource_uri(kind: Kind, agent_id: str | None = None) -> str:
    """The URI of one resource (``agent_id`` percent-encoded as one path segment)."""
    if kind == "agents":
        return AGENTS_URI
    if agent_id is None:
        raise InvalidInput(f"a {kind} resource needs an agent_id")
    return f"{_AGENT_PREFIX}{quote(agent_id, safe='')}/{kind}"


def parse_uri(uri: Any) -> tuple[Kind, str | None]:
    """(kind, agent_id) of a resource URI; raises InvalidInput for anything ``resource_uri`` cannot make."""
    if not isinstance(uri, str):
        raise InvalidInput("uri must be a string")
    if len(uri) > MAX_URI_CHARS:
        raise InvalidInput(
            f"uri is longer than {MAX_URI_CHARS} characters: no cpersona resource has such a URI"
        )
    if uri == AGENTS_URI:
        return "agents", None
    if uri.startswith(_AGENT_PREFIX):
        encoded, slash, kind = uri[len(_AGENT_PREFIX) :].rpartition("/")
        if slash and "/" not in encoded and kind in _TEMPLATE_BY_KIND:
            agent = _decode_agent(encoded)
            if resource_uri(kind, agent) == uri:  # one spelling per resource: the canonical encoding
                return kind, agent
            raise InvalidInput(f"uri is not in canonical form; use {resource_uri(kind, agent)!r}")
    raise InvalidInput(
        f"unknown resource {uri[:200]!r}: see resources/templates/list (cpersona://agents/...)"
    )


def _decode_agent(encoded: str) -> str:
    try:
        agent = unquote(encoded, errors="strict")
    except UnicodeDecodeError:
        raise InvalidInput("the agent id in the uri is not valid percent-encoded UTF-8") from None
    if len(agent) > MAX_IDENTIFIER_CHARS:
        raise InvalidInput(f"agent_id is longer than {MAX_IDENTIFIER_CHARS} characters")
    return agent


def resource_templates() -> ResourceTemplatesResult:
    """The resource templates: ``{ok, templates: [...]}`` (static: needs no open database)."""
    return {
        "ok": True,
        "templates": [
            ResourceTemplateInfo(
                uri_template=t.uri_template,
                name=t.name,
                title=t.title,
                description=t.description,
                mime_type=JSON_MIME,
            )
            for t in TEMPLATES
        ]
        + [
            ResourceTemplateInfo(
                uri_template=uri, name=name, title=title, description=text, mime_type=JSON_MIME
            )
            for uri, name, title, text in ROW_TEMPLATES
        ],
    }


def row_uri(agent_id: str, ref: str) -> str:
    """The URI of one stored row (``mem:<id>`` / ``ep:<id>``) of ``agent_id``."""
    kind, _, number = ref.partition(":")
    return f"{_AGENT_PREFIX}{quote(agent_id, safe='')}/{_ROW_SEGMENTS[kind]}/{number}"


def resource_links(rows: Any) -> list[ResourceLinkInfo]:
    """One link per stored row in ``rows`` (dicts with ``agent_id`` and a ``mem:``/``ep:`` ``ref``), in
    order, each row once: what a client reads with resources/read to get the row in full."""
    links: list[ResourceLinkInfo] = []
    seen: set[str] = set()
    for row in rows if isinstance(rows, list) else ():
        ref, agent = (row.get("ref"), row.get("agent_id")) if isinstance(row, dict) else (None, None)
        if (
            not (isinstance(ref, str) and isinstance(agent, str))
            or ref.partition(":")[0] not in _ROW_SEGMENTS
        ):
            continue
        uri = row_uri(agent, ref)
        if uri not in seen:
            seen.add(uri)
            links.append({"uri": uri, "name": ref, "mime_type": JSON_MIME})
    return links


def _parse_row_uri(uri: str) -> tuple[str, str] | None:
    """(agent_id, ref) of a row URI made by ``row_uri``, None when ``uri`` is no row URI."""
    if not uri.startswith(_AGENT_PREFIX):
        return None
    parts = uri[len(_AGENT_PREFIX) :].split("/")
    if len(parts) != 3 or parts[1] not in _ROW_KINDS:
        return None
    encoded, segment, number = parts
    if not (number.isascii() and number.isdigit() and number[0] != "0" and len(number) <= 19):
        raise InvalidInput(f"the row id in {uri[:200]!r} must be a positive integer")
    agent = _decode_agent(encoded)
    ref = f"{_ROW_KINDS[segment]}:{number}"
    if row_uri(agent, ref) != uri:
        raise InvalidInput(f"uri is not in canonical form; use {row_uri(agent, ref)!r}")
    return agent, ref


def _visible(agent: str, allowed: frozenset[str] | None) -> bool:
    return allowed is None or agent in allowed


class Resources:
    """The MCP resources over the read services (no SQL of its own)."""

    def __init__(self, reader: Reader, browser: Browser) -> None:
        self.reader = reader
        self.browser = browser

    @public
    def resource_templates(self) -> ResourceTemplatesResult:
        """The resource templates: ``{ok, templates: [{uri_template, name, title, description, mime_type}]}``."""
        return resource_templates()

    def visible_agents(self, allowed_agents: Collection[str] | None = None) -> list[str]:
        """The agent ids (sorted) that own rows and that the caller may read."""
        allowed = agent_set(allowed_agents)
        return [
            a["agent_id"] for a in self.browser.list_agents()["agents"] if _visible(a["agent_id"], allowed)
        ]

    @public
    def list_resources(
        self, *, cursor: str | None = None, allowed_agents: Collection[str] | None = None
    ) -> ResourceListResult:
        """One page of concrete resources: the agents list first, then each visible agent's two.

        Returns ``{ok, resources: [{uri, name, title, description, mime_type}], next_cursor}``
        (``next_cursor`` None on the last page). The cursor is opaque to clients: the last entry
        listed (its agent and template), so a page reads only its own agents, never the pages
        before it (keyset paging: 20,000 agents cost each page what the first costs).
        """
        after, template = _cursor_key(cursor)
        allowed = agent_set(allowed_agents)
        entries: list[ResourceInfo] = []
        if after is None:
            entries.append(
                {
                    "uri": AGENTS_URI,
                    "name": "agents",
                    "title": "Agents",
                    "description": AGENTS_DESCRIPTION,
                    "mime_type": JSON_MIME,
                }
            )
        keys: list[tuple[str, int]] = []
        if after is not None and template + 1 < len(TEMPLATES):  # the rest of a pair a page cut
            keys += [(after, t) for t in range(template + 1, len(TEMPLATES))]
        wanted = RESOURCE_LIST_PAGE + 1 - len(entries) - len(keys)  # one more says "more"
        agents = self.browser.agent_page(after, wanted // len(TEMPLATES) + 1, allowed)
        keys += [(agent, t) for agent in agents for t in range(len(TEMPLATES))]
        room = RESOURCE_LIST_PAGE - len(entries)
        for agent, t in keys[:room]:
            kind = TEMPLATES[t]
            entries.append(
                {
                    "uri": resource_uri(kind.kind, agent),
                    "name": f"{kind.name}:{agent[:80]}",
                    "title": f"{kind.title}: {agent[:80]}",
                    "description": kind.description,
                    "mime_type": JSON_MIME,
                }
            )
        more = len(keys) > room
        return {
            "ok": True,
            "resources": entries,
            "next_cursor": _cursor_of(*keys[room - 1]) if more else None,
        }

    @public
    def read_resource(self, uri: Any, *, allowed_agents: Collection[str] | None = None) -> ResourceReadResult:
        """The contents of one resource: ``{ok, uri, mime_type, text}`` (``text`` is JSON).

        Raises InvalidInput for a URI that names no resource, Forbidden for an agent the caller
        may not read, NotFound for an agent that owns no rows.
        """
        allowed = agent_set(allowed_agents)
        row = _parse_row_uri(uri) if isinstance(uri, str) and len(uri) <= MAX_URI_CHARS else None
        if row is not None:
            return self._read_row(uri, *row, allowed)
        kind, agent = parse_uri(uri)
        if kind == "agents":
            body: dict[str, Any] = self._agents_body(allowed)
        else:
            assert agent is not None
            if not _visible(agent, allowed):
                raise Forbidden(f"this client may not read agent {agent[:80]!r}: it needs the read grant")
            notice = self.browser.agent_notice(agent, allowed)
            if notice is not None:
                raise NotFound(notice)
            body = self._profile_body(agent) if kind == "profile" else self._memories_body(agent)
        return {"ok": True, "uri": uri, "mime_type": JSON_MIME, "text": json.dumps(body, ensure_ascii=False)}

    def _read_row(self, uri: str, agent: str, ref: str, allowed: frozenset[str] | None) -> ResourceReadResult:
        if not _visible(agent, allowed):
            raise Forbidden(f"this client may not read agent {agent[:80]!r}: it needs the read grant")
        found = self.reader.get_contents(agent, [ref])
        if not found["items"]:  # unknown, or another agent's: the same answer (docs/resources.md)
            raise NotFound(f"no {ref} of agent {agent[:80]!r}")
        text = json.dumps(found["items"][0], ensure_ascii=False)
        return {"ok": True, "uri": uri, "mime_type": JSON_MIME, "text": text}

    # The three resource bodies below stay plain dicts: they are serialized into read_resource's
    # ``text`` (a JSON document described in docs/resources.md), never returned as a result shape.
    def _agents_body(self, allowed: frozenset[str] | None) -> dict[str, Any]:
        agents = [
            {
                "agent_id": a["agent_id"],
                "memories": a["memories"],
                "episodes": a["episodes"],
                "profiles": a["profiles"],
                "profile_uri": resource_uri("profile", a["agent_id"]),
                "memories_uri": resource_uri("memories", a["agent_id"]),
            }
            for a in self.browser.list_agents()["agents"]
            if _visible(a["agent_id"], allowed)
        ]
        return {"agents": agents, "count": len(agents)}

    def _profile_body(self, agent: str) -> dict[str, Any]:
        listed = self.browser.list_profiles(agent)
        profiles = [
            {k: p.get(k) for k in ("project_id", "user_id", "content", "updated_at")} for p in listed["items"]
        ]
        return {"agent_id": agent, "profiles": profiles, "count": len(profiles)}

    def _memories_body(self, agent: str) -> dict[str, Any]:
        listed = self.reader.list_memories(agent, limit=RESOURCE_RECENT_MEMORIES)
        return {
            "agent_id": agent,
            "items": listed["items"],
            "count": listed["count"],
            "total": listed["total"],
        }

    @public
    def complete_agent_id(
        self, prefix: Any, *, allowed_agents: Collection[str] | None = None
    ) -> CompletionResult:
        """Agent ids the caller may read that start with ``prefix``: ``{ok, values, total, has_more}``.

        At most 100 values (the MCP limit for one completion), sorted.
        """
        if not isinstance(prefix, str):
            raise InvalidInput("the value to complete must be a string")
        matches = [a for a in self.visible_agents(allowed_agents) if a.startswith(prefix)]
        return _completion(matches)

    @public
    def complete_project_id(
        self, prefix: Any, *, agent_id: Any = None, allowed_agents: Collection[str] | None = None
    ) -> CompletionResult:
        """Project ids in use by the readable agents (only ``agent_id``'s when given) starting with ``prefix``.

        Same shape as ``complete_agent_id``; the global pool (``''``) is not offered.
        """
        if not isinstance(prefix, str):
            raise InvalidInput("the value to complete must be a string")
        allowed = agent_set(allowed_agents)
        projects = {
            axis["project_id"]
            for a in self.browser.list_agents()["agents"]
            if _visible(a["agent_id"], allowed) and (agent_id is None or a["agent_id"] == agent_id)
            for axis in a["axes"]
        }
        return _completion(sorted(p for p in projects if p and p.startswith(prefix)))


def _completion(matches: list[str]) -> CompletionResult:
    values = matches[:COMPLETION_VALUES_MAX]
    return {"ok": True, "values": values, "total": len(matches), "has_more": len(matches) > len(values)}


#: MCP allows at most 100 values in one completion result.
COMPLETION_VALUES_MAX = 100


def _cursor_of(agent: str, template: int) -> str:
    """The cursor after ``agent``'s ``template``-th resource: ``<template>.<agent, base64url>``."""
    encoded = base64.urlsafe_b64encode(agent.encode("utf-8", "surrogatepass")).decode("ascii").rstrip("=")
    return f"{template}.{encoded}"


def _cursor_key(cursor: Any) -> tuple[str | None, int]:
    """(agent, template) a cursor resumes after; (None, -1) from the start. InvalidInput when it is
    not a cursor this server gave."""
    if cursor is None:
        return None, -1
    bad = InvalidInput("invalid cursor: pass the next_cursor of the previous page unchanged")
    if not isinstance(cursor, str) or len(cursor) > 4 * MAX_IDENTIFIER_CHARS or "." not in cursor:
        raise bad
    template, _, encoded = cursor.partition(".")
    if template not in {str(t) for t in range(len(TEMPLATES))} or not encoded.isascii():
        raise bad
    try:
        agent = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode("utf-8", "surrogatepass")
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad from exc
    if _cursor_of(agent, int(template)) != cursor:  # lenient base64 reads junk as some agent
        raise bad
    return agent, int(template)
