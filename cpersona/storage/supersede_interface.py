"""Supersede links between memories (issue 22 point 2): the storage protocol both engines implement.

A link lives on the older row (``superseded_by``, ``superseded_at``): each memory is superseded by
at most one newer memory, and a newer one may supersede several. The chain of a memory is therefore
a tree whose root is the current (unsuperseded) row. Deleting the newer row splices the chain in
the database itself (a trigger, so every delete path does it): the rows it superseded point at its
own successor, or become current again. Rules about who may link what are the services'
(``cpersona.services.supersede``); storage only reads and writes links.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from cpersona.storage.scope import Scope

#: An export's supersede line names rows by their ids in the exporting database ("source ids").
SUPERSEDE_RECORD = "supersede"


@dataclass(frozen=True)
class Link:
    """``older`` was superseded by ``newer`` at ``at`` (ISO-8601 UTC text, as stored)."""

    older: int
    newer: int
    at: str


class SupersedeLinks(Protocol):
    """Reads and writes of supersede links on one session."""

    def successors(self, ids: Sequence[int]) -> dict[int, Link]:
        """The link of each id in ``ids`` that is superseded (ids not superseded are absent)."""
        ...

    def predecessors(self, newer_ids: Sequence[int], limit: int | None = None) -> list[Link]:
        """Every link whose newer row is in ``newer_ids`` (the rows those superseded); with ``limit``,
        the first ``limit`` of them by (newer, older) id, so a wide fan-in costs no more than the limit."""
        ...

    def chain_above(self, rid: int) -> list[Link]:
        """The links from ``rid`` up to the current row, nearest first, at any length (a cycle's
        closing link, which the rules no longer let in, is the last step)."""
        ...

    def left_out_below(self, listed: Sequence[int], limit: int) -> list[int]:
        """Up to ``limit`` ids of ``listed`` that a row outside ``listed`` supersedes."""
        ...

    def owners(self, ids: Sequence[int]) -> dict[int, tuple[str, bool]]:
        """(agent, locked) of each id that exists."""
        ...

    def mark(self, older_ids: Sequence[int], newer_id: int, at: str) -> None:
        """Mark ``older_ids`` superseded by ``newer_id`` at ``at``."""
        ...

    def hidden_ids(self, scope: Scope) -> set[int]:
        """Ids of the superseded memories ``scope`` admits (what recall leaves out by default)."""
        ...

    def dangling(self, limit: int = 20) -> list[Link]:
        """Links whose newer row does not exist (the splice trigger prevents them; a health check looks)."""
        ...


Key = TypeVar("Key")


def apply_imported_links(
    find: Callable[[Key], int | None], links: SupersedeLinks, pairs: Sequence[tuple[Key, Key, str]]
) -> tuple[int, int]:
    """Write copied links, each as (older row, newer row, when) with ``find`` giving a row's id here
    (an import: by dedup key; a merge: by source id); returns (linked, skipped).

    A pair is skipped when either row is not there (its line was refused), when the older row is
    already superseded in this database (what is there wins, as for duplicates), or when the link
    would make a cycle with the links already there, or when the two rows are of different agents
    (as through the tools: a memory supersedes only its own agent's). A locked row is still linked:
    its file may say it was superseded before it was locked. Re-importing the same file links
    nothing new.
    """
    linked = skipped = 0
    for older_row, newer_row, at in pairs:
        older, newer = find(older_row), find(newer_row)
        if older is None or newer is None or older == newer or links.successors([older]):
            skipped += 1
            continue
        owners = links.owners([older, newer])
        if older not in owners or newer not in owners:
            skipped += 1
            continue
        if owners[older][0] != owners[newer][0]:
            skipped += 1
            continue
        if _reaches(links, newer, older):
            skipped += 1
            continue
        links.mark([older], newer, at)
        linked += 1
    return linked, skipped


def _reaches(links: SupersedeLinks, start: int, target: int) -> bool:
    """Does ``start``'s chain lead up to ``target``? Read whole, however long (``chain_above``)."""
    return any(link.newer == target for link in links.chain_above(start))
