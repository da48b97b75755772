"""The notice for an agent id that owns no rows at all: a typo must not look like an empty memory.

recall, list_memories / list_episodes, export, check_health and the browser view add it (``notice``)
instead of succeeding silently; it is never an error. Only agents the caller may see are named: the
MCP layer passes the ACL client's readable agents.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection

from cpersona.storage.interface import AdminQueries

#: Agent ids named in one notice at most (the rest are counted).
NOTICE_AGENTS = 20


def agent_notice(
    admin: AdminQueries, agent_id: str | None, visible: Collection[str] | None = None
) -> str | None:
    """``agent 'x' has no rows; known agents: ...`` when ``agent_id`` owns nothing, else None.

    ``visible`` limits the agents named (None: every agent). Costs three indexed probes when the
    agent has rows, which is when callers ask only after an empty answer.
    """
    if agent_id is None or admin.has_rows(agent_id):
        return None
    known = [a for a in admin.known_agent_ids() if visible is None or a in visible]
    shown = ", ".join(repr(a) for a in known[:NOTICE_AGENTS]) or "none"
    if len(known) > NOTICE_AGENTS:
        shown += f" and {len(known) - NOTICE_AGENTS} more"
    text = f"agent {agent_id!r} has no rows; known agents: {shown}"
    close = difflib.get_close_matches(agent_id, known, n=1, cutoff=0.75)
    return text + (f" (did you mean {close[0]!r}?)" if close else "")
