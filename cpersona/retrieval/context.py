"""The context channel: neighbouring turns of a strong hit (issue 19, point 6).

A conversation answers a question over several turns: "Did you go to the support group?" /
"Yes, last Friday — it was so powerful". The second turn holds the answer but shares no word and
little meaning with a question about the support group; its neighbour does. So after fusion the
rows next to the best hits — the memory stored just before or just after, by the same agent in the
same project and channel, within one session (timestamps at most an hour apart, the calibration's
session rule) — get a share of their neighbour's fused score.

Neighbours are found by id (insertion order) through ``get_many``, so both engines serve it with
the hydration query they already have: the ``reach`` ids each side of each parent first (rows
already hydrated are not read again), then, where some were not in scope, up to ``id_window ×
reach`` ids that side — which steps over other agents' (or projects', channels') rows
interleaved in one file, up to ``id_window`` of them per step; a neighbour farther away is not
found.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cpersona.core.text import parse_ts
from cpersona.retrieval.candidates import CONTEXT, MEMORY, Fused, Key

if TYPE_CHECKING:
    from cpersona.storage.interface import MemoryRows
    from cpersona.storage.scope import Scope

#: Rows more than this many seconds apart are not one session (as in calibration.session_keys).
SESSION_GAP_SECONDS = 3600.0
#: With ``above_parent`` off, a neighbour's score stops at this share of its strongest parent's: below
#: it, so the parent stays first.
BELOW_PARENT = 0.999
__all__ = ["CONTEXT", "ContextPolicy", "neighbours", "policy_for", "row_seconds", "same_session", "spread"]


@dataclass(frozen=True)
class ContextPolicy:
    """How the channel spreads score: from the ``parents`` best fused memories to ``reach`` rows each side.

    Defaults as measured (docs/research/held-out-2026-12.md): 6 parents, 2 rows each side, weight
    0.6 (``CPERSONA_CONTEXT_WEIGHT``), a share divided by the distance in rows. The grid there chose
    4 to 7 parents in every rotation; 5 shipped, and 6 since the rules after fusion
    (docs/research/recall-round-three/replies-and-context.md#the-context-channels-parents-again).
    """

    parents: int = 6
    weight: float = 0.6
    reach: int = 2
    before: bool = True
    after: bool = True
    id_window: int = 4  # ids looked at per step each side of a parent (steps over other scopes' rows)
    combine: str = "max"  # "max" | "sum" when several parents share a neighbour
    add_new: bool = True  # a neighbour no retriever found enters the list (False: only boost candidates)
    #: Only short turns share: a parent or neighbour longer than this (characters) is a record that holds
    #: its own context (a long assistant answer, a document), not a chat turn whose answer is the next one.
    max_chars: int = 600
    #: False: a neighbour rises at most to just below the strongest parent that lent it a share. Keyword-only
    #: ranking sets it (``scoring.hydrate``): there a page of paragraphs that all hold the query's words lift
    #: one another above the paragraph that holds them best (docs/retrieval.md#the-context-channel).
    above_parent: bool = True


def policy_for(mode: str, weight: float) -> ContextPolicy | None:
    """The channel for these settings: rsf only (measured there; rrf and cascade scores are ranks),
    and off at weight 0."""
    if mode != "rsf" or weight <= 0:
        return None
    return ContextPolicy(weight=weight)


def row_seconds(row: dict[str, Any]) -> float | None:
    """The row's time in Unix seconds (its ``timestamp``, else ``created_at``; None when unreadable)."""
    when = row.get("timestamp") or row.get("created_at")
    if not isinstance(when, str):
        return None
    try:
        return parse_ts(when).timestamp()
    except ValueError:
        return None


def same_session(a: dict[str, Any], b: dict[str, Any], a_seconds: float | None = None) -> bool:
    """Same agent, project and channel, timestamps within SESSION_GAP_SECONDS (``a_seconds``: a's
    timestamp already parsed)."""
    if any(a.get(k) != b.get(k) for k in ("agent_id", "project_id", "channel")):
        return False
    ta = a_seconds if a_seconds is not None else row_seconds(a)
    tb = row_seconds(b)
    return ta is not None and tb is not None and abs(ta - tb) <= SESSION_GAP_SECONDS


def neighbours(
    rows: MemoryRows,
    scope: Scope,
    parents: Sequence[dict[str, Any]],
    policy: ContextPolicy,
    known: dict[int, dict[str, Any]] | None = None,
) -> tuple[dict[int, list[tuple[int, int]]], dict[int, dict[str, Any]]]:
    """For each neighbour id: [(parent id, distance)] over ``parents`` (hydrated memory rows); and
    the rows read on the way (neighbours among them).

    Ids are read in two rounds: the ``reach`` ids each side of every parent (all that a file written
    by one agent needs), then, only for a side where some of them were not in scope, the rest of its
    window (``id_window × reach`` ids). ``known`` rows (already hydrated) are not read again.
    """
    span = policy.id_window * policy.reach
    found: dict[int, dict[str, Any]] = {}
    seen: set[int] = set(known or {})
    sides = [(-1, policy.before), (1, policy.after)]

    def read(ids: set[int]) -> None:
        fresh = sorted(i for i in ids if i > 0 and i not in seen)
        seen.update(fresh)
        if fresh:
            found.update(rows.get_many(fresh, scope))

    if known:
        found.update(known)
    read({int(p["id"]) + d * k for p in parents for d, on in sides if on for k in range(1, policy.reach + 1)})
    wider = {
        int(p["id"]) + d * k
        for p in parents
        for d, on in sides
        if on and any(int(p["id"]) + d * k not in found for k in range(1, policy.reach + 1))
        for k in range(policy.reach + 1, span + 1)
    }
    read(wider)
    out: dict[int, list[tuple[int, int]]] = {}
    for parent in parents:
        if _long(parent, policy):
            continue
        pid = int(parent["id"])
        when = row_seconds(parent)
        for direction, enabled in sides:
            if not enabled:
                continue
            steps = 0
            for offset in range(1, span + 1):
                candidate = found.get(pid + direction * offset)
                if candidate is None:
                    continue
                if not same_session(parent, candidate, when):
                    break
                steps += 1
                if not _long(candidate, policy):
                    out.setdefault(pid + direction * offset, []).append((pid, steps))
                if steps >= policy.reach:
                    break
    return out, found


def _long(row: dict[str, Any], policy: ContextPolicy) -> bool:
    content = row.get("content")
    return isinstance(content, str) and len(content) > policy.max_chars


def spread(
    fused: dict[Key, Fused],
    hydrated: dict[Key, dict[str, Any]],
    rows: MemoryRows,
    scope: Scope,
    policy: ContextPolicy,
) -> dict[Key, dict[str, Any]]:
    """Add the context channel to ``fused`` in place; return the neighbour rows it hydrated.

    A neighbour gets ``weight × parent score / distance`` (the best parent's, or the sum; with
    ``above_parent`` off, no more than lifts it to ``BELOW_PARENT`` of its strongest parent's score); a
    row already in the list adds it to its score, a new one enters with it alone. ``Fused.rsf`` stays the
    retrievers' sum; ``channels["context"]`` holds the bonus (score = rsf + context).
    """
    ranked = sorted(
        (key for key in fused if key.kind == MEMORY and key in hydrated),
        key=lambda key: (-fused[key].score, key.ref),  # ties by the ref's text, as always
    )[: policy.parents]
    if not ranked or policy.weight <= 0:
        return {}
    parent_rows = [hydrated[key] for key in ranked]
    known = {key.id: row for key, row in hydrated.items() if key.kind == MEMORY}
    links, extra = neighbours(rows, scope, parent_rows, policy, known)
    if not links:
        return {}
    base = {int(hydrated[key]["id"]): fused[key].score for key in ranked}
    added: dict[Key, dict[str, Any]] = {}
    for nid in sorted(links):
        shares = [policy.weight * base[pid] / distance for pid, distance in links[nid]]
        bonus = sum(shares) if policy.combine == "sum" else max(shares)
        key = Key(MEMORY, nid)
        entry = fused.get(key)
        if not policy.above_parent:
            ceiling = BELOW_PARENT * max(base[pid] for pid, _ in links[nid])
            bonus = min(bonus, max(0.0, ceiling - (entry.score if entry is not None else 0.0)))
            if bonus <= 0.0:  # already at or above its parent: no share to record
                continue
        if entry is None:
            row = extra.get(nid)
            if row is None or not policy.add_new:
                continue
            entry = fused[key] = Fused(key, 0.0, next(iter(fused.values())).signal)
            added[key] = row
            if entry.signal == "rsf":
                entry.rsf = 0.0  # found by no retriever: its whole score is context
        entry.score += bonus
        entry.channels[CONTEXT] = bonus
    return added
