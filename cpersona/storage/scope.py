"""The isolation axes (docs/architecture.md#the-isolation-rule-written-once), written once: every SQL path and every in-memory filter derives from ``tests``.

| axis       | None        | ''                 | 'X'                         |
|------------|-------------|--------------------|-----------------------------|
| agent_id   | no filter   | agent_id = ''      | agent_id = 'X'              |
| project_id | no filter   | project_id = ''    | project_id IN ('X', '')     |
| channel    | no filter   | no filter          | channel IN ('X', '')        |

``agents`` is a further restriction, not an axis: when set (an HTTP client's ACL
grants, docs/architecture.md#access-control-http-with-an-acl-file), only rows of those agents are visible, whatever ``agent_id`` says.
An empty set admits nothing.

``Scope.tests`` states the table above as data (which values each column may hold);
``Scope.where`` writes it as SQL in an engine's dialect (both engines call it, each with
its placeholder), ``Scope.admits`` applies it to one row in Python, and the SQLite
vector index applies the same tests to its in-memory columns. tests/api/test_isolation.py
runs every tool on both engines.
"""

from __future__ import annotations

from dataclasses import dataclass

from cpersona.storage.sql_text import Dialect

#: The columns the axes filter on, in the order the SQLite vector index keeps them.
AXIS_COLUMNS = ("agent_id", "project_id", "channel")


@dataclass(frozen=True)
class AxisTest:
    """One column a row must pass: its value is one of ``values``, or '' when ``global_too``.

    No admitted value at all (an empty ACL grant) admits no row.
    """

    column: str
    values: tuple[str, ...]
    global_too: bool = False  # '' is admitted as well: the global pool, channel-less rows

    @property
    def admitted(self) -> tuple[str, ...]:
        """Every value that passes ('' included when the global pool does)."""
        return (*self.values, "") if self.global_too else self.values

    def sql(self, prefix: str, dialect: Dialect) -> str:
        """The test as one SQL condition: each bound value a placeholder, the global pool a literal ''."""
        items = [dialect.mark] * len(self.values) + (["''"] if self.global_too else [])
        if not items:
            return dialect.false
        if len(items) == 1:
            return f"{prefix}{self.column} = {items[0]}"
        return f"{prefix}{self.column} IN ({', '.join(items)})"


@dataclass(frozen=True)
class Scope:
    """A read scope: which rows a caller may see."""

    agent_id: str | None = None
    project_id: str | None = None
    channel: str | None = None
    agents: frozenset[str] | None = None  # the caller's granted agents; None = no restriction

    def tests(self, *, has_channel: bool = True) -> list[AxisTest]:
        """The isolation rule for this scope: every test a visible row passes (none: every row)."""
        tests: list[AxisTest] = []
        if self.agent_id is not None:
            tests.append(AxisTest("agent_id", (self.agent_id,)))
        if self.project_id is not None:
            # '' is the global pool only; a value X sees X plus the global pool.
            tests.append(
                AxisTest("project_id", (self.project_id,) if self.project_id else (), global_too=True)
            )
        if has_channel and self.channel:  # '' and None both mean "no channel filter"
            tests.append(AxisTest("channel", (self.channel,), global_too=True))
        if self.agents is not None:
            tests.append(AxisTest("agent_id", tuple(sorted(self.agents))))
        return tests

    def where(self, dialect: Dialect, alias: str = "", *, has_channel: bool = True) -> tuple[str, list[str]]:
        """SQL conjunction in ``dialect`` (its true literal when unfiltered) and its parameters."""
        prefix = f"{alias}." if alias else ""
        clauses: list[str] = []
        params: list[str] = []
        for test in self.tests(has_channel=has_channel):
            clauses.append(test.sql(prefix, dialect))
            params.extend(test.values)
        return (" AND ".join(clauses) if clauses else dialect.true), params

    def admits(self, agent_id: str, project_id: str, channel: str) -> bool:
        """The same rule in Python, for one row already in memory."""
        row = dict(zip(AXIS_COLUMNS, (agent_id, project_id, channel), strict=True))
        return all(row[test.column] in test.admitted for test in self.tests())


def write_axes(project_id: str | None, channel: str | None) -> tuple[str, str]:
    """Omitted project/channel are stored as '' (the global pool / channel-less)."""
    return (project_id or "", channel or "")
