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

    @property
    def label(self) -> str:
        """read / write / admin (the documented class; ``admin_when`` is noted separately)."""
        return self.level.label


READ, WRITE, ADMIN = Level.READ, Level.WRITE, Level.ADMIN
