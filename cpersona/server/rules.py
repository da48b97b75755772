"""The access classes a tool declaration carries (read / write / admin), checked by ``access.authorise``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cpersona.acl import Level

#: What an omitted agent_id means: narrow to the granted agents, or need the grant on every agent.
Unscoped = Literal["filter", "all"]


@dataclass(frozen=True)
class Rule:
    """The access class of one tool."""

    level: Level
    process_wide: bool = False  # acts on the process, not on any agent's rows
    unscoped: Unscoped = "all"
    admin_when: str | None = None  # boolean argument that, when true, makes the call admin
    follows_links: bool = False  # reaches linked rows of other agents: the handler gets the readable agents

    @property
    def label(self) -> str:
        """read / write / admin (the documented class; ``admin_when`` is noted separately)."""
        return self.level.label


READ, WRITE, ADMIN = Level.READ, Level.WRITE, Level.ADMIN

#: The classes several tools share. Edits and listings by row id: an omitted agent_id narrows the call
#: to the granted agents (another agent's row looks absent). Process-wide state: open to read for every
#: authenticated client, changing it needs admin on '*'.
EDIT_ROW = Rule(WRITE, unscoped="filter")
LIST_ROWS = Rule(READ, unscoped="filter")
PROCESS_STATE = Rule(READ, process_wide=True)
PROCESS_CONTROL = Rule(ADMIN, process_wide=True)
