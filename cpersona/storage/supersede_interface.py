"""Supersede links between memories (issue 22 point 2): the storage protocol both engines implement.

A link lives on the older row (``superseded_by``, ``superseded_at``): each memory is superseded by
at most one newer memory, and a newer one may supersede several. The chain of a memory is therefore
a tree whose root is the current (unsuperseded) row. Deleting the newer row splices the chain in
the database itself (a trigger, so every delete path does it): the rows it superseded point at its
own successor, or become current again. Rules about who may link what are the services'
(``cpersona.services.supersede``); storage only reads and writes links.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from cpersona.storage.scope import Scope


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

    def predecessors(self, newer_ids: Sequence[int]) -> list[Link]:
        """Every link whose newer row is in ``newer_ids`` (the rows those superseded)."""
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
