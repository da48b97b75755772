"""Supersede with history (issue 22 point 2): the rules for linking a newer memory to older ones,
the chain ``get_history`` returns, and the marks recall adds with ``include_superseded``.

The rules (docs/decisions.md "Supersede, keep history"): a memory supersedes only memories of its
own agent (another agent's row, or an ungranted one, answers ``not_found``, as every by-id tool
does); a locked row cannot be marked superseded (``locked``: hiding a fact from recall changes it);
a row cannot supersede itself or a row down its own chain, and a row already superseded by
another memory is refused (``supersede_refused``: supersede the current one instead). Every check
runs inside the write transaction that writes the link, so a refusal writes nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, cast

from cpersona.core.limits import MAX_LIST_ITEMS
from cpersona.core.validation import row_id
from cpersona.errors import InvalidInput, LockedRow, NotFound, SupersedeRefused
from cpersona.result_types.everyday import GetHistoryResult
from cpersona.result_types.rows import MemoryRow
from cpersona.storage.interface import Session
from cpersona.storage.supersede_interface import Link
from cpersona.storage.values import Row

#: At most this many rows read by one history (docs/input-rules.md "Walks"); past it the history says
#: ``truncated`` and where it was cut (at most ``HISTORY_CUT_REFS`` refs).
MAX_HISTORY_ROWS = 1000
HISTORY_CUT_REFS = 20


def parse_refs(value: Any, name: str = "supersedes") -> list[int]:
    """The memory ids of a ``supersedes`` argument (None → none); repeats count once, order kept."""
    if value is None:
        return []
    if isinstance(value, str | bytes | dict) or not isinstance(value, Sequence):
        raise InvalidInput(f"{name} must be a list of memory refs such as ['mem:12']")
    if len(value) > MAX_LIST_ITEMS:
        raise InvalidInput(f"{name} has {len(value)} items; at most {MAX_LIST_ITEMS} allowed")
    ids: list[int] = []
    for item in value:
        rid = row_id(item, name, "mem")
        if rid not in ids:
            ids.append(rid)
    return ids


def _visible(row: Row, agent: str | None, allowed: frozenset[str] | None) -> bool:
    owner = row["agent_id"]
    return (agent is None or owner == agent) and (allowed is None or owner in allowed)


def check_links(
    session: Session,
    newer_id: int | None,
    agent: str,
    older_ids: Sequence[int],
    allowed: Collection[str] | None,
) -> list[int]:
    """Refuse links that break a rule; return the ids still to mark (a link already in place is kept).

    ``newer_id`` None: the newer row is about to be inserted (it has no chain yet). ``agent`` is the
    newer row's agent: only its rows can be superseded (and the caller must be granted it).
    """
    granted = None if allowed is None else frozenset(allowed)
    rows = session.memories.get_many(list(older_ids))
    links = session.supersede.successors(list(older_ids))
    chain = set(_successor_chain(session, newer_id)) if newer_id is not None else set()
    todo: list[int] = []
    for rid in older_ids:
        row = rows.get(rid)
        if row is None or not _visible(row, agent, granted):
            raise NotFound(
                f"memory {rid} not found for agent {agent!r} (supersedes names only memories of the same agent)"
            )
        if rid == newer_id:
            raise SupersedeRefused(f"memory {rid} cannot supersede itself")
        if rid in chain:
            raise SupersedeRefused(
                f"memory {rid} already supersedes mem:{newer_id} (directly or down its chain): that would be a cycle"
            )
        link = links.get(rid)
        if link is not None:
            if link.newer == newer_id:
                continue
            raise SupersedeRefused(
                f"memory {rid} is already superseded by mem:{link.newer}; supersede the current one "
                f"(mem:{_head(session, rid)}) instead"
            )
        if row["locked"]:
            raise LockedRow(f"memory {rid} is locked; unlock_memory it before superseding it")
        todo.append(rid)
    return todo


def _successor_chain(session: Session, rid: int) -> list[int]:
    """``rid``'s successors, nearest first, to the current row: the whole way, however long (one
    recursive statement), so the cycle check and ``current`` hold at any chain length."""
    return [link.newer for link in session.supersede.chain_above(rid)]


def _head(session: Session, rid: int) -> int:
    chain = _successor_chain(session, rid)
    return chain[-1] if chain else rid


def history(
    session: Session,
    rid: int,
    agent: str | None,
    allowed: Collection[str] | None,
    max_rows: int = MAX_HISTORY_ROWS,
) -> GetHistoryResult:
    """The chain ``rid`` belongs to, oldest to newest, each row with what superseded it and when.

    Rows nearer the current one come later (a row always before the row that superseded it); rows
    at the same distance in creation order. Not found when ``rid`` is not visible to the caller.

    At most ``max_rows`` rows are read: first the rows from ``rid`` up to the current one (``current``
    is the true head at any length), then the rows below the head, level by level, each level one
    query with a ``LIMIT`` of what is still room for. A cut history says so: ``truncated`` and
    ``cut_at``, the listed rows next to which rows were left out.
    """
    granted = None if allowed is None else frozenset(allowed)
    start = session.memories.get(rid)
    if start is None or not _visible(start, agent, granted):
        raise NotFound(f"memory {rid} not found" + (f" for agent {agent!r}" if agent is not None else ""))
    above = session.supersede.chain_above(rid)
    path = [rid, *(link.newer for link in above)]
    if len(path) > 1 and path[-1] in path[:-1]:  # a cycle an older release let in: no true head
        path.pop()
    head = path[-1]
    cut: set[int] = set()
    if len(path) > max_rows:  # rid, its nearest successors, then (after a gap) the current row
        cut.add(path[max_rows - 2])
        path = [*path[: max_rows - 1], head]
    depth = {row: len(path) - 1 - i for i, row in enumerate(path)}
    links: dict[int, Link] = {
        link.older: link for link in above if link.older in depth and link.newer in depth
    }
    frontier = [head]
    expanded = {head}  # each row's older rows are read once (a cycle written long ago ends the walk)
    complete = True
    while frontier:
        room = max_rows - len(depth)
        limit = room + len(path) + 1  # rows already listed may come back; one more says "more left"
        found = session.supersede.predecessors(frontier, limit=limit)
        fresh = [link for link in found if link.older not in depth]
        taken = fresh[:room]
        for link in taken:
            depth[link.older] = depth[link.newer] + 1
            links[link.older] = link
        if len(found) >= limit or len(taken) < len(fresh):
            complete = False
            break
        frontier = [link.older for link in found if link.older in depth and link.older not in expanded]
        expanded.update(frontier)
        if len(depth) >= max_rows and frontier:
            complete = False
            break
    if not complete:
        cut.update(session.supersede.left_out_below(sorted(depth), HISTORY_CUT_REFS))
    rows = session.memories.get_many(list(depth))
    visible = [row for row in rows.values() if _visible(row, agent, granted)]
    visible.sort(key=lambda r: (-depth[r["id"]], r["created_at"], r["id"]))
    chain = [annotate(dict(row), links.get(row["id"])) for row in visible]
    mark_retired(session, chain)  # a retired row stays in its history, saying so
    result: GetHistoryResult = {
        "ok": True,
        "ref": f"mem:{rid}",
        "current": f"mem:{head}",
        # storage rows plus the supersede keys: the one cast at the storage boundary (docs/decisions.md)
        "history": cast(list[MemoryRow], chain),
        "count": len(chain),
    }
    shown = {int(row["id"]) for row in visible}
    if cut:
        result["truncated"] = True
        result["cut_at"] = [f"mem:{n}" for n in sorted(cut) if n in shown][:HISTORY_CUT_REFS]
    return result


def annotate(row: dict[str, Any], link: Link | None) -> dict[str, Any]:
    """``row`` with ``superseded_by`` / ``superseded_at`` when ``link`` says it was superseded."""
    if link is not None:
        row["superseded_by"] = f"mem:{link.newer}"
        row["superseded_at"] = link.at
    return row


def mark_retired(session: Session, rows: list[dict[str, Any]]) -> None:
    """Add ``retired_at`` / ``retire_reason`` to the retired memory rows among ``rows`` (in place)."""
    ids = [int(r["id"]) for r in rows if r.get("type") == "memory"]
    retired = session.supersede.retirements(ids) if ids else {}
    for row in rows:
        if row.get("type") == "memory" and int(row["id"]) in retired:
            row["retired_at"], row["retire_reason"] = retired[int(row["id"])]


def mark_rows(session: Session, rows: list[dict[str, Any]]) -> None:
    """Add the supersede marks to the memory rows among ``rows`` that are superseded (in place)."""
    ids = [int(r["id"]) for r in rows if r.get("type") == "memory"]
    if not ids:
        return
    links = session.supersede.successors(ids)
    for row in rows:
        if row.get("type") == "memory":
            annotate(row, links.get(int(row["id"])))
