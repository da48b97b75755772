"""Which tool needs which grant: the one classification table, and the check ``dispatch_tool`` runs.

Every tool is classified ``read``, ``write`` or ``admin`` here (a test fails,
and the dispatcher refuses the call, when one is missing). The decision for
one call uses the client's grants (``cpersona.acl``) and the agent ids named in
the arguments:

- every argument ending in ``agent_id`` (agent_id, source_agent_id,
  target_agent_id) must be granted at the tool's level;
- an omitted agent_id either narrows the call to the granted agents (listings,
  edits by row id: ``allowed_agents`` passed to the API, so another agent's row
  looks absent) or needs the grant on ``*`` (tools that would scan every agent);
- process-wide tools: reading their state is open to every authenticated client
  (they carry no agent's rows); changing it needs ``admin`` on ``*``;
- ``fix`` / ``apply`` set to true raise the level to ``admin``.

Without an ACL (stdio, or HTTP with one shared token) ``client`` is None and
everything is allowed: that is the documented single-user model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from cpersona.acl import WILDCARD, Client, Level
from cpersona.errors import Forbidden

#: What an omitted agent_id means: narrow to the granted agents, or need the grant on every agent.
Unscoped = Literal["filter", "all"]


@dataclass(frozen=True)
class Rule:
    """The access class of one tool."""

    level: Level
    process_wide: bool = False  # acts on the process, not on any agent's rows
    unscoped: Unscoped = "all"
    admin_when: str | None = None  # boolean argument that, when true, makes the call admin

    @property
    def label(self) -> str:
        """read / write / admin (the documented class; ``admin_when`` is noted separately)."""
        return self.level.label


READ, WRITE, ADMIN = Level.READ, Level.WRITE, Level.ADMIN

#: The classification of every tool (docs/tools.md repeats it per tool; a test compares).
TOOL_ACCESS: dict[str, Rule] = {
    # everyday
    "store": Rule(WRITE),
    "recall": Rule(READ),  # records recall statistics, but reveals and changes no content
    "recall_with_context": Rule(READ),
    "get_contents": Rule(READ),
    "get_history": Rule(READ, unscoped="filter"),
    "archive_episode": Rule(WRITE),
    "update_memory": Rule(WRITE, unscoped="filter"),
    "get_profile": Rule(READ),
    "update_profile": Rule(WRITE),
    "list_memories": Rule(READ, unscoped="filter"),
    "list_episodes": Rule(READ, unscoped="filter"),
    "lock_memory": Rule(WRITE, unscoped="filter"),
    "unlock_memory": Rule(WRITE, unscoped="filter"),
    "delete_memory": Rule(WRITE, unscoped="filter"),
    "delete_episode": Rule(WRITE, unscoped="filter"),
    # operations
    "get_queue_status": Rule(READ, process_wide=True),
    "delete_agent_data": Rule(ADMIN),
    "pause_persistence": Rule(ADMIN, process_wide=True),
    "resume_persistence": Rule(ADMIN, process_wide=True),
    "persistence_status": Rule(READ, process_wide=True),
    "get_operating_context": Rule(READ, process_wide=True),
    "check_update": Rule(READ, process_wide=True, admin_when="apply"),
    "check_health": Rule(READ, admin_when="fix"),
    "deep_check": Rule(READ, admin_when="fix"),
    # retrieval quality: calibration changes how this agent's recalls are gated
    "calibrate_threshold": Rule(WRITE),
    "set_recall_precision": Rule(WRITE),
    "get_recall_precision": Rule(READ),
    # portability
    "export_memories": Rule(ADMIN),
    "import_memories": Rule(ADMIN),
    "merge_memories": Rule(ADMIN),
    "migrate_channel_axis": Rule(ADMIN),
}


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
    agents). Raises Forbidden, saying which grant is missing, when refused.
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
