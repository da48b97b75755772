"""Carrying declared associations across a merge (engine-neutral; each engine's merge calls it).

A ``copy`` merge gives the target new rows: each copied memory gets its source's outgoing links,
with targets that were copied too pointing at their copies. A ``move`` keeps ids (links stay as
they are) but deletes the source rows that duplicate a target row: their links, both directions,
are re-pointed at the row they duplicate before the delete takes them. A link that would end up
linking a memory to itself is dropped. Re-declared links are ignored (the unique indexes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cpersona.core.text import format_ts, utc_now
from cpersona.storage.interface import LinkRows
from cpersona.storage.maintenance_interface import COPY
from cpersona.storage.values import LinkRow


def links_of(repo: LinkRows, ids: Sequence[int]) -> list[LinkRow]:
    """Every link from or to these memories, read before a merge changes them."""
    if not ids:
        return []
    seen: dict[tuple[int, str, int | None, str | None], LinkRow] = {}
    for link in (*repo.outgoing(ids), *repo.incoming(ids)):
        seen[(link.from_id, link.relation, link.to_id, link.entity_key)] = link
    return list(seen.values())


def carry_links(repo: LinkRows, links: Sequence[LinkRow], placed: Mapping[int, int], mode: str) -> int:
    """Declare the remapped links (``placed``: source id -> the target row it became); returns how many."""
    when = format_ts(utc_now())
    carried = 0
    for link in links:
        if mode == COPY and link.from_id not in placed:
            continue  # a copy carries what the source memories declared, not what others said of them
        if link.from_id not in placed and (link.to_id is None or link.to_id not in placed):
            continue
        from_id = placed.get(link.from_id, link.from_id)
        to_id = None if link.to_id is None else placed.get(link.to_id, link.to_id)
        if to_id == from_id:
            continue
        carried += int(repo.add(from_id, link.relation, to_id, link.entity, link.entity_key, when))
    return carried
