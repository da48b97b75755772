"""Candidates into scored rows: hydrate (with the context channel), keep, penalise.

The pipeline's middle stages (retrieval/pipeline.py): what fusion ranked becomes stored rows with
their final score, before confidence, the gate and ordering.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, cast

from cpersona.config import Settings
from cpersona.core.text import comparison_key, parse_ts
from cpersona.retrieval import context
from cpersona.retrieval.candidates import EPISODE, MEMORY, Fused, Key, RecallRequest, ScoredRow
from cpersona.retrieval.gate import LEXICAL_CHANNELS
from cpersona.retrieval.penalties import episode_boundary_factor, recent_recall_factor
from cpersona.storage.interface import MemoryRows, Session
from cpersona.storage.scope import Scope
from cpersona.storage.values import Row


def keep(row: dict[str, Any], request: RecallRequest) -> bool:
    """Whether a candidate row stays: inside a sure cue's period, under the ``source_id`` prefix, not
    one of the texts the caller already has (``exclude_contents``)."""
    cue = request.time_cue
    if cue is not None and cue.filters and not cue.admits_row(row):
        return False  # a sure cue: outside the period (this also covers context neighbours)
    if request.source_id is not None and row["type"] == MEMORY:
        source_id = (row.get("source") or {}).get("id")
        if not isinstance(source_id, str) or not source_id.startswith(request.source_id):
            return False
    if request.exclude_contents:
        key = comparison_key(row["content"])
        for excluded in request.exclude_contents:
            other = comparison_key(excluded)
            if other and (key.startswith(other) or other.startswith(key)):
                return False
    return True


def hydrate(
    session: Session,
    request: RecallRequest,
    fused: dict[Key, Fused],
    context_policy: context.ContextPolicy | None,
    vector_used: bool,
    hidden: frozenset[int] = frozenset(),
    read: Mapping[int, Row] | None = None,
) -> list[ScoredRow]:
    """The fused candidates' rows (in scope, kept), with the context channel's neighbours, as
    ``ScoredRow``s in fusion's order. ``read``: memory rows already read in ``request.scope`` this
    recall (the best passage's), by id; only the others are read."""
    mem_ids = [key.id for key in fused if key.kind == MEMORY]
    ep_ids = [key.id for key in fused if key.kind == EPISODE]
    found: dict[Key, dict[str, Any]] = {}
    read = read or {}
    for rid in mem_ids:
        if rid in read:
            found[Key(MEMORY, rid)] = read[rid]
    for rid, mem in session.memories.get_many([i for i in mem_ids if i not in read], request.scope).items():
        found[Key(MEMORY, rid)] = mem
    for rid, ep in session.episodes.get_many(ep_ids, request.scope).items():
        found[Key(EPISODE, rid)] = ep
    if context_policy is not None:
        kept = {key: row for key, row in found.items() if keep(row, request)}
        # Keyword-only recall returns what matched: neighbours then only lift candidates, and never above
        # the row that lent them the share (rows that share the query's words would lift one another).
        policy = context_policy if vector_used else replace(context_policy, add_new=False, above_parent=False)
        rows = session.memories if not hidden else cast("MemoryRows", _Unsuperseded(session.memories, hidden))
        found.update(context.spread(fused, kept, rows, request.scope, policy))
    scored = []
    for key, entry in fused.items():
        row = found.get(key)
        if row is not None and keep(row, request):
            scored.append(ScoredRow(row=row, fused=entry, score=entry.score))
    return scored


def penalise(
    settings: Settings, session: Session, request: RecallRequest, scored: list[ScoredRow], now: datetime
) -> list[ScoredRow]:
    """The memory rows' factors after fusion (episode boundary, recent recall) and the score they make."""
    s = settings
    boundary_text = None
    if s.episode_penalty_enabled and not request.deep:
        boundary_text = session.episodes.newest_boundary(request.scope)
    boundary = parse_ts(boundary_text) if boundary_text else None
    for item in scored:
        if item.row["type"] != MEMORY:
            continue
        if boundary is not None:
            factor = episode_boundary_factor(
                parse_ts(item.row["created_at"]), boundary, s.episode_decay_rate, s.episode_decay_floor
            )
            if factor != 1.0:
                item.factors["episode_boundary_penalty"] = factor
        last = item.row.get("last_recalled_at")
        factor = recent_recall_factor(
            parse_ts(last) if last else None, now, s.recent_recall_window_min, s.recent_recall_penalty
        )
        if factor != 1.0:
            item.factors["recent_recall_penalty"] = factor
        item.score = item.base[1] * math.prod(item.factors.values())
    return scored


def has_evidence(item: ScoredRow) -> bool:
    """No filler: a candidate with a fused score of 0 and no keyword match is never returned, gate or no
    gate. The vector channel ranks every row in scope, and rsf puts each channel's weakest hit at 0: such
    a row matched nothing. A keyword match is evidence even as its channel's weakest hit (a rsf share
    of 0 there): it holds the query's words."""
    return item.fused.score > 0 or any(c in item.fused.channels for c in LEXICAL_CHANNELS)


class _Unsuperseded:
    """The memory rows with the superseded ones absent, so the context channel steps over them
    as it steps over another scope's rows (a neighbour is never a superseded row)."""

    def __init__(self, rows: MemoryRows, hidden: frozenset[int]) -> None:
        self.rows = rows
        self.hidden = hidden

    def get_many(self, ids: Sequence[int], scope: Scope | None = None) -> dict[int, dict[str, Any]]:
        """``get_many`` of the wrapped rows, without the hidden ids."""
        return self.rows.get_many([i for i in ids if i not in self.hidden], scope)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.rows, name)
