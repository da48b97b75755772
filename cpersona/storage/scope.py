"""The isolation axes (SPEC §4) as SQL predicates, one definition for every path.

``Scope.where`` writes SQLite's placeholders; ``storage.postgres.sql.where`` is the same
rule with PostgreSQL's (tests/api/test_isolation.py runs on both engines).

| axis       | None        | ''                 | 'X'                         |
|------------|-------------|--------------------|-----------------------------|
| agent_id   | no filter   | agent_id = ''      | agent_id = 'X'              |
| project_id | no filter   | project_id = ''    | project_id IN ('X', '')     |
| channel    | no filter   | no filter          | channel IN ('X', '')        |

``agents`` is a further restriction, not an axis: when set (an HTTP client's ACL
grants, SPEC §9), only rows of those agents are visible, whatever ``agent_id`` says.
An empty set admits nothing.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scope:
    """A read scope: which rows a caller may see."""

    agent_id: str | None = None
    project_id: str | None = None
    channel: str | None = None
    agents: frozenset[str] | None = None  # the caller's granted agents; None = no restriction

    def where(self, alias: str = "", *, has_channel: bool = True) -> tuple[str, list[str]]:
        """SQL conjunction (``'1'`` when unfiltered) and its parameters."""
        prefix = f"{alias}." if alias else ""
        clauses: list[str] = []
        params: list[str] = []
        if self.agent_id is not None:
            clauses.append(f"{prefix}agent_id = ?")
            params.append(self.agent_id)
        if self.project_id is not None:
            if self.project_id == "":
                clauses.append(f"{prefix}project_id = ''")
            else:
                clauses.append(f"{prefix}project_id IN (?, '')")
                params.append(self.project_id)
        if has_channel and self.channel:
            clauses.append(f"{prefix}channel IN (?, '')")
            params.append(self.channel)
        if self.agents is not None:
            if self.agents:
                ordered = sorted(self.agents)
                clauses.append(f"{prefix}agent_id IN ({','.join('?' * len(ordered))})")
                params.extend(ordered)
            else:
                clauses.append("0")
        return (" AND ".join(clauses) if clauses else "1"), params

    def admits(self, agent_id: str, project_id: str, channel: str) -> bool:
        """The same rule in Python, for rows already in memory (the vector index)."""
        if self.agent_id is not None and agent_id != self.agent_id:
            return False
        if self.agents is not None and agent_id not in self.agents:
            return False
        if self.project_id is not None and project_id not in (self.project_id, ""):
            return False
        return not (self.channel and channel not in (self.channel, ""))


def write_axes(project_id: str | None, channel: str | None) -> tuple[str, str]:
    """Omitted project/channel are stored as '' (the global pool / channel-less)."""
    return (project_id or "", channel or "")
