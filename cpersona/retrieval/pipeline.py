"""Recall, step by step: retrieve → fuse → hydrate → filter → penalise → gate → order → limit.

The pipeline reads; it never writes. ``Memory.recall`` wraps it with the
parts that touch process state (query embedding, advisory, recall
bookkeeping, profile injection, the final reversal).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from cpersona.config import Settings
from cpersona.retrieval import fusion
from cpersona.retrieval.match_query import query_terms
from cpersona.retrieval.penalties import episode_boundary_factor, recent_recall_factor
from cpersona.storage.interface import EPISODES, MEMORIES, KeywordHits, Session, VectorQuery
from cpersona.storage.scope import Scope
from cpersona.text import comparison_key, parse_ts


@dataclass(frozen=True)
class RecallRequest:
    """What the caller asked for, already validated."""

    scope: Scope
    query: str
    limit: int
    deep: bool = False
    exclude_contents: tuple[str, ...] = ()
    source_id: str | None = None


@dataclass
class ScoredRow:
    """A hydrated row with its fused score (``score`` is what ordering keys on)."""

    row: dict[str, Any]
    fused: fusion.Fused
    score: float

    def sort_key(self) -> tuple[float, int, int]:
        # Stable tie-break: memories before episodes, then newer ids first.
        return (-self.score, 0 if self.row["type"] == "memory" else 1, -int(self.row["id"]))

    def match_reason(self) -> dict[str, Any]:
        reason: dict[str, Any] = {"signal": self.fused.signal, "score": round(self.score, 6)}
        if self.fused.cosine is not None:
            reason["cosine"] = round(self.fused.cosine, 6)
        if self.fused.rrf is not None:
            reason["rrf"] = round(self.fused.rrf, 6)
        if self.fused.rsf is not None:
            reason["rsf"] = round(self.fused.rsf, 6)
        return reason


class GateStage(Protocol):
    """The quality-gate seam (SPEC §3 step 3–4). Calibration plugs a real gate in here."""

    def apply(self, rows: list[ScoredRow], request: RecallRequest) -> list[ScoredRow]:
        """Return the rows that pass, best first."""
        ...


class NoGate:
    """Passes every row. The calibrated fused gate is not built yet (see docs/retrieval.md)."""

    def apply(self, rows: list[ScoredRow], request: RecallRequest) -> list[ScoredRow]:
        return rows


@dataclass
class RecallOutcome:
    """Best-first rows (already cut to ``limit``) and how they were found."""

    rows: list[dict[str, Any]]
    keyword_method: str
    vector_used: bool


class RecallPipeline:
    """Stateless recall over a storage session (one read snapshot), configured by Settings."""

    def __init__(
        self,
        settings: Settings,
        gate: GateStage | None = None,
        channels: frozenset[str] = frozenset(fusion.CHANNEL_ORDER),
    ) -> None:
        self.settings = settings
        self.gate: GateStage = gate or NoGate()
        # Which retrievers run: all three in production; benchmarks measure each arm alone.
        self.channels = channels

    def run(
        self,
        session: Session,
        request: RecallRequest,
        *,
        query_vector: VectorQuery | None,
        now: datetime,
    ) -> RecallOutcome:
        """Run the pipeline; ``query_vector`` None means keyword-only.

        Vector search is the session's (``VectorSearch``): the pipeline never knows whether the
        engine scans an in-memory index or asks the database.
        """
        if not request.query.strip():
            return self._most_recent(session, request)
        depth = request.limit + len(request.exclude_contents)
        terms = query_terms(request.query)
        channels: dict[str, list[tuple[str, float]]] = {}
        include_episodes = request.source_id is None or bool(request.scope.channel)

        vector_used = query_vector is not None and fusion.VECTOR in self.channels
        if query_vector is not None and vector_used:
            search = session.vector_search
            window = self.settings.max_memories
            allowed = self._source_ids(session, request) if request.source_id is not None else None
            hits = [
                (f"mem:{i}", s)
                for i, s in search.nearest(
                    MEMORIES, query_vector, request.scope, depth, window=window, allowed_ids=allowed
                )
            ]
            if include_episodes:
                hits += [
                    (f"ep:{i}", s)
                    for i, s in search.nearest(EPISODES, query_vector, request.scope, depth, window=window)
                ]
                hits.sort(key=lambda h: (-h[1], h[0]))
            channels[fusion.VECTOR] = hits[:depth]

        mem_hits = KeywordHits([], "none")
        if fusion.FTS_MEMORIES in self.channels:
            mem_hits = session.keyword.memories(terms, request.scope, depth, source_id=request.source_id)
            channels[fusion.FTS_MEMORIES] = [(f"mem:{i}", s) for i, s in mem_hits.hits]
        if include_episodes and fusion.FTS_EPISODES in self.channels:
            ep_hits = session.keyword.episodes(terms, request.scope, depth)
            channels[fusion.FTS_EPISODES] = [(f"ep:{i}", s) for i, s in ep_hits.hits]

        fused = fusion.fuse(self.settings.recall_mode, channels, rrf_k=self.settings.rrf_k)
        scored = self._hydrate(session, request, fused)
        scored = self._penalise(session, request, scored, now)
        scored.sort(key=ScoredRow.sort_key)
        scored = self.gate.apply(scored, request)
        rows = []
        for item in scored[: request.limit]:
            row = dict(item.row)
            row["match_reason"] = item.match_reason()
            rows.append(row)
        return RecallOutcome(rows=rows, keyword_method=mem_hits.method, vector_used=vector_used)

    # -- stages ---------------------------------------------------------------------
    def _most_recent(self, session: Session, request: RecallRequest) -> RecallOutcome:
        rows = session.memories.list_recent(request.scope, request.limit * 2 + 50)
        rows = [r for r in rows if self._keep(r, request)]
        return RecallOutcome(rows=rows[: request.limit], keyword_method="none", vector_used=False)

    @staticmethod
    def _source_ids(session: Session, request: RecallRequest) -> list[int]:
        return session.memories.ids_with_source(request.scope, request.source_id or "")

    def _keep(self, row: dict[str, Any], request: RecallRequest) -> bool:
        if request.source_id is not None and row["type"] == "memory":
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

    def _hydrate(
        self, session: Session, request: RecallRequest, fused: dict[str, fusion.Fused]
    ) -> list[ScoredRow]:
        mem_ids = [int(ref[4:]) for ref in fused if ref.startswith("mem:")]
        ep_ids = [int(ref[3:]) for ref in fused if ref.startswith("ep:")]
        found: dict[str, dict[str, Any]] = {}
        for rid, mem in session.memories.get_many(mem_ids, request.scope).items():
            found[f"mem:{rid}"] = mem
        for rid, ep in session.episodes.get_many(ep_ids, request.scope).items():
            found[f"ep:{rid}"] = ep
        scored = []
        for ref, entry in fused.items():
            row = found.get(ref)
            if row is not None and self._keep(row, request):
                scored.append(ScoredRow(row=row, fused=entry, score=entry.score))
        return scored

    def _penalise(
        self, session: Session, request: RecallRequest, scored: list[ScoredRow], now: datetime
    ) -> list[ScoredRow]:
        s = self.settings
        boundary_text = None
        if s.episode_penalty_enabled and not request.deep:
            boundary_text = session.episodes.newest_boundary(request.scope)
        boundary = parse_ts(boundary_text) if boundary_text else None
        for item in scored:
            if item.row["type"] != "memory":
                continue
            if boundary is not None:
                item.score *= episode_boundary_factor(
                    parse_ts(item.row["created_at"]), boundary, s.episode_decay_rate, s.episode_decay_floor
                )
            last = item.row.get("last_recalled_at")
            item.score *= recent_recall_factor(
                parse_ts(last) if last else None, now, s.recent_recall_window_min, s.recent_recall_penalty
            )
        return scored

