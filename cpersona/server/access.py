"""Which tool needs which grant: the one classification table, and the check ``dispatch_tool`` runs.

Every tool declares its class, ``read``, ``write`` or ``admin``, with its ``access=``
rule (cpersona/server/tools/; a declaration cannot omit it). The decision for
one call uses the client's grants (``cpersona.acl``) and the agent ids named in
the arguments:

- every argument ending in ``agent_id`` (agent_id, source_agent_id,
  target_agent_id) must be granted at the tool's level;
- an omitted agent_id either narrows the call to the granted agents (listings,
  edits by row id: ``allowed_agents`` passed to the API, so another agent's row
  looks absent) or needs the grant on ``*`` (tools that would scan every agent);
- process-wide tools: reading their state is open to every authenticated client
  (they carry no agent's rows); changing it needs ``admin`` on ``*``;
- ``fix`` / ``apply`` set to true raise the level to ``admin``;
- tools that follow declared links (``follows_links``: store's associations, declare_associations,
  traverse) reach rows of agents the call does not name: they get the agents the client may READ,
  and never link to, return or walk through a row of any other agent.

Without an ACL (stdio, or HTTP with one shared token) ``client`` is None and
everything is allowed: that is the documented single-user model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cpersona.acl import WILDCARD, Client, Level
from cpersona.errors import Forbidden
from cpersona.server.rules import ADMIN, READ, WRITE, Rule, Unscoped
from cpersona.server.tools import TOOLS

__all__ = ["ADMIN", "READ", "TOOL_ACCESS", "WRITE", "Rule", "Unscoped", "authorise", "named_agents"]

#: The classification of every tool, read from its declaration (``access=`` in cpersona/server/tools/);
#: docs/tools.md repeats it per tool and a test compares.
TOOL_ACCESS: dict[str, Rule] = {spec.name: spec.access for spec in TOOLS}


def required_level(rule: Rule, arguments: Mapping[str, Any]) -> Level:
    """The level this call needs (the tool's class, raised to admin by ``fix``/``apply``)."""
    if rule.admin_when is not None and arguments.get(rule.admin_when) is True:
        return ADMIN
    return rule.level


def named_agents(arguments: Mapping[str, Any]) -> list[str]:
    """Agent ids the call names (every string argument whose name ends in ``agent_id``)."""
    return [value for key, value in arguments.items() if key.endswith("agent_id") and isinstance(value, str)]


def authorise(client: Client | None, tool: str, arguments: Mapping[str, Any]) -> frozenset[str] | None:
    """Check ``client`` may make this call; return the agents an unscoped call is narrowed to.

    None means no narrowing (no ACL, or a wildcard grant, or the call names its
    agents). For a ``follows_links`` tool it is the agents the client may read (None: all).
    Raises Forbidden, saying which grant is missing, when refused.
    Unknown tools are refused even without an ACL: a tool with no class is a bug.
    """
    rule = TOOL_ACCESS.get(tool)
    if rule is None:
        raise Forbidden(f"tool {tool!r} has no access class; refusing it")
    if client is None:
        return None
    level = required_level(rule, arguments)
    if rule.process_wide:
        if level > READ and not client.may(WILDCARD, level):
            raise Forbidden(_missing(client, tool, level, WILDCARD, "it acts on the whole server"))
        return None
    agents = named_agents(arguments)
    for agent in agents:
        if not client.may(agent, level):
            raise Forbidden(_missing(client, tool, level, agent))
    if rule.follows_links:
        return client.agents_at(READ)
    if agents:
        return None
    if rule.unscoped == "filter":
        return client.agents_at(level)
    if not client.may(WILDCARD, level):
        raise Forbidden(_missing(client, tool, level, WILDCARD, "without agent_id it covers every agent"))
    return None


def _missing(client: Client, tool: str, level: Level, agent: str, why: str = "") -> str:
    target = "every agent ('*')" if agent == WILDCARD else f"agent {agent[:80]!r}"
    reason = f" ({why})" if why else ""
    return f"client {client.name!r} may not call {tool} on {target}{reason}: it needs the {level.label} grant"
