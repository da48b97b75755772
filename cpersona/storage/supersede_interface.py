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

    def mark_many(self, links: Sequence[tuple[int, int, str]]) -> None:
        """Mark each (older, newer, at): one statement for a whole batch of an import."""
        ...

    def hidden_ids(
        self, scope: Scope, *, superseded: bool = True, retired: bool = True, now: str | None = None
    ) -> set[int]:
        """Ids of the superseded and / or retired memories ``scope`` admits (what recall leaves out by
        default), and with ``now`` those expired at or before it (always left out)."""
        ...

    def set_expiry(self, memory_id: int, at: str | None) -> None:
        """Let one memory expire at ``at`` (stored UTC text; None: never)."""
        ...

    def expiries(self, ids: Sequence[int]) -> dict[int, str]:
        """``expires_at`` of each id in ``ids`` that has one."""
        ...

    def expired_before(self, cutoff: str, limit: int) -> list[int]:
        """Unlocked memories that expired before ``cutoff`` (the worker deletes them), oldest first."""
        ...

    def retirements(self, ids: Sequence[int]) -> dict[int, tuple[str, str | None]]:
        """``(retired_at, reason)`` of each retired id in ``ids`` (others are absent)."""
        ...

    def set_retired(self, memory_id: int, at: str | None, reason: str | None) -> None:
        """Retire one memory at ``at`` with ``reason``; ``at`` None brings it back (clears both)."""
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
    already superseded in this database or earlier in ``pairs`` (what is there wins, as for
    duplicates), when the link would make a cycle with the links already there, at any length, or
    when the two rows are of different agents (as through the tools: a memory supersedes only its
    own agent's). A locked row is still linked: its file may say it was superseded before it was
    locked. Re-importing the same file links nothing new.

    The cost is linear in the pairs: the existing links and owners are read in bulk, each chain
    already in the database once (``chain_above``), and the new links are followed in memory with
    path compression (a 5,000-link chain took quadratic time, a query per step).
    """
    found: dict[Key, int | None] = {}  # a chain names most rows twice (newer, then older): one lookup

    def place(row: Key) -> int | None:
        if row not in found:
            found[row] = find(row)
        return found[row]

    resolved = [(place(o), place(n), at) for o, n, at in pairs]
    known = [(o, n, at) for o, n, at in resolved if o is not None and n is not None and o != n]
    taken = set(links.successors(sorted({o for o, _, _ in known})))
    owners: dict[int, tuple[str, bool]] = {}
    ids = sorted({i for o, n, _ in known for i in (o, n)})
    for start in range(0, len(ids), _OWNER_CHUNK):
        owners.update(links.owners(ids[start : start + _OWNER_CHUNK]))
    heads = _Heads(links)
    todo: list[tuple[int, int, str]] = []
    for older, newer, at in known:
        if older in taken or older not in owners or newer not in owners:
            continue
        if owners[older][0] != owners[newer][0] or heads.find(newer) == older:
            continue
        heads.link(older, newer)
        taken.add(older)
        todo.append((older, newer, at))
    links.mark_many(todo)
    return len(todo), len(pairs) - len(todo)


def apply_lifecycle(
    find: Callable[[Key], int | None],
    links: SupersedeLinks,
    items: Sequence[tuple[Key, str | None, str | None, str | None]],
) -> int:
    """Set each found row's (expires_at, retired_at, reason) where it has none yet; rows changed."""
    changed = 0
    for row, expires, retired, reason in items:
        rid = find(row)
        if rid is None:
            continue
        touched = False
        if expires is not None and rid not in links.expiries([rid]):
            links.set_expiry(rid, expires)
            touched = True
        if retired is not None and rid not in links.retirements([rid]):
            links.set_retired(rid, retired, reason)
            touched = True
        changed += touched
    return changed


#: Ids per owners read (far below either engine's bound parameters).
_OWNER_CHUNK = 500


class _Heads:
    """The current row above each row, as links are added: the database's chains read once each,
    then followed in memory with path compression. ``find(x) == y`` for a row ``y`` with no
    successor means ``y`` is on ``x``'s chain, so linking ``y`` under ``x`` would close a cycle."""

    def __init__(self, links: SupersedeLinks) -> None:
        self.links = links
        self.up: dict[int, int | None] = {}

    def _load(self, rid: int) -> None:
        below = rid
        for link in self.links.chain_above(rid):
            if below in self.up:
                return
            self.up[below] = link.newer
            below = link.newer
        self.up.setdefault(below, None)

    def find(self, rid: int) -> int:
        path: list[int] = []
        seen = {rid}
        current = rid
        while True:
            if current not in self.up:
                self._load(current)
            above = self.up[current]
            if above is None or above in seen:  # the head (or a cycle an older release let in)
                break
            path.append(current)
            seen.add(above)
            current = above
        for row in path:
            self.up[row] = current
        return current

    def link(self, older: int, newer: int) -> None:
        self.up[older] = newer
