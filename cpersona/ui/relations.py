"""What a memory's page says about the memory's place among others: its supersede chain and its links.

``memory_relations`` turns ``Memory.get_history`` and two one-hop ``Memory.traverse`` answers (out and
in) into what templates/memory.html draws. The API calls are made with the browser client's readable
agents (``ClientGrants.readable_agents``), so a row of an agent the client may not read never gets
here; this module only shapes what it is given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: At most this many rows in each list of a memory's page (the rest is one "more" note).
SHOWN_PER_SECTION = 50


@dataclass(frozen=True)
class Successor:
    """A memory further down the chain and when it superseded the one before it."""

    row: Mapping[str, Any]
    at: str


@dataclass(frozen=True)
class LinkLine:
    """One declared link of the memory: ``direction`` is ``out`` (declared by this memory) or ``in``."""

    direction: str
    relation: str
    row: Mapping[str, Any] | None  # the memory at the other end, or None for an entity
    entity: str | None


@dataclass(frozen=True)
class Relations:
    """The supersede and link sections of one memory's page (empty lists: nothing to show)."""

    current: Mapping[str, Any] | None = None  # set only when the memory itself is superseded
    superseded_at: str | None = None
    before: list[Mapping[str, Any]] = field(default_factory=list)
    before_more: int = 0
    after: list[Successor] = field(default_factory=list)
    links: list[LinkLine] = field(default_factory=list)
    links_more: bool = False
    retired_at: str | None = None  # set when the memory was retired (out of recall, kept here)
    retire_reason: str | None = None

    @property
    def any(self) -> bool:
        """True when the page has anything to say about the chain or links."""
        return bool(self.current or self.before or self.after or self.links)


def _ancestors(ref: str, chain: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The rows whose successors lead to ``ref`` (directly or down the chain), in the chain's order."""
    older: dict[str, list[str]] = {}
    for row in chain:
        if row.get("superseded_by"):
            older.setdefault(str(row["superseded_by"]), []).append(str(row["ref"]))
    found: set[str] = set()
    frontier = [ref]
    while frontier:
        following = [o for r in frontier for o in older.get(r, []) if o not in found and o != ref]
        found.update(following)
        frontier = following
    return [row for row in chain if row["ref"] in found]


def _successors(row: Mapping[str, Any], by_ref: Mapping[str, Mapping[str, Any]]) -> list[Successor]:
    """The rows from ``row``'s successor to the current one, nearest first."""
    out: list[Successor] = []
    seen = {row["ref"]}
    current = row
    while current.get("superseded_by") and current["superseded_by"] not in seen:
        newer = by_ref.get(str(current["superseded_by"]))
        if newer is None:
            break
        out.append(Successor(newer, str(current.get("superseded_at") or "")))
        seen.add(newer["ref"])
        current = newer
    return out


def _link_lines(ref: str, answer: Mapping[str, Any]) -> list[LinkLine]:
    lines: list[LinkLine] = []
    for node in answer.get("results") or []:
        step = (node.get("path") or [{}])[-1]
        direction = "out" if step.get("from") == ref else "in"
        if node.get("type") == "entity":
            lines.append(LinkLine(direction, str(step.get("relation", "")), None, str(node["entity"])))
        else:
            lines.append(LinkLine(direction, str(step.get("relation", "")), node, None))
    return lines


def memory_relations(
    row: Mapping[str, Any],
    history: Mapping[str, Any],
    links_out: Mapping[str, Any],
    links_in: Mapping[str, Any],
) -> Relations:
    """The page's sections for ``row`` from its ``get_history`` and one-hop ``traverse`` answers."""
    chain: list[Mapping[str, Any]] = list(history.get("history") or [])
    by_ref = {str(r["ref"]): r for r in chain}
    me = by_ref.get(str(row["ref"]), row)
    before = _ancestors(str(row["ref"]), chain)
    after = _successors(me, by_ref)
    current = by_ref.get(str(history.get("current"))) if me.get("superseded_by") else None
    links = _link_lines(str(row["ref"]), links_out) + _link_lines(str(row["ref"]), links_in)
    more = bool(links_out.get("truncated") or links_in.get("truncated")) or len(links) > SHOWN_PER_SECTION
    return Relations(
        current=current,
        superseded_at=str(me.get("superseded_at") or "") or None,
        before=before[-SHOWN_PER_SECTION:],  # the nearest ones
        before_more=max(0, len(before) - SHOWN_PER_SECTION),
        after=after[:SHOWN_PER_SECTION],
        links=links[:SHOWN_PER_SECTION],
        links_more=more,
        retired_at=str(me.get("retired_at") or "") or None,
        retire_reason=str(me.get("retire_reason") or "") or None,
    )
