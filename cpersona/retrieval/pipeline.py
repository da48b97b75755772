"""Recall, step by step: retrieve → fuse → hydrate → filter → penalise → gate → order → limit.

The pipeline reads; it never writes. ``Memory.recall`` wraps it with the
parts that touch process state (query embedding, advisory, recall
bookkeeping, profile injection, the final reversal).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Protocol, cast

from cpersona.config import Settings
from cpersona.core.text import comparison_key, format_ts, parse_ts
from cpersona.retrieval import confidence, context, date_phrases, diversity, fusion, language, recency, trace
from cpersona.retrieval.gate import LEXICAL_CHANNELS, GateDecision, GateEvidence, gate_off
from cpersona.retrieval.match_query import query_terms
from cpersona.retrieval.penalties import episode_boundary_factor, recent_recall_factor
from cpersona.retrieval.pending_vector import PendingQueryVector, nearest_when_ready
from cpersona.retrieval.time_cue import FACTOR as TIME_FACTOR
from cpersona.retrieval.time_cue import QUERY_CERTAINTY, TimeCue, row_time
from cpersona.storage.interface import (
    EPISODES,
    MEMORIES,
    KeywordHits,
    MemoryRows,
    Session,
    VectorQuery,
)
from cpersona.storage.scope import Scope

#: Under a ``sure`` time cue each keyword channel reads this many rows, then keeps those in the
#: period: the keyword row budget (storage/keyword_prune.py), so a filtered channel costs no more.
SURE_KEYWORD_DEPTH = 300


@dataclass(frozen=True)
class RecallRequest:
    """What the caller asked for, already validated."""

    scope: Scope
    query: str
    limit: int
    deep: bool = False
    exclude_contents: tuple[str, ...] = ()
    source_id: str | None = None
    trace: bool = False  # return each stage's candidates and scores (RecallOutcome.trace)
    time_cue: TimeCue | None = None  # the caller's cue (retrieval/time_cue.py), already resolved
    include_superseded: bool = False  # superseded memories stay candidates (docs/decisions.md "Supersede")
    include_retired: bool = False  # retired memories stay candidates (docs/secrets-and-forgetting.md)
    # The vector channel's weight in fusion: the share of the query the model can read (retrieval/language.py).
    vector_weight: float = 1.0


@dataclass
class ScoredRow:
    """A hydrated row with its fused score (``score`` is what ordering keys on)."""

    row: dict[str, Any]
    fused: fusion.Fused
    score: float
    confidence: float | None = None  # set by the confidence stage (CPERSONA_CONFIDENCE_ENABLED)
    cosine_keyed: bool = False  # the whole list was ranked by cosine alone (no keyword evidence)
    gate: str | None = None  # "exact_match" when the gate's exact-match rule applies to the row
    gate_fallback: bool = False  # a below-gate lexical match returned under confidence
    # What ``score`` is made of: base (name, value) × every factor applied after fusion, in order.
    base: tuple[str, float] = ("", 0.0)
    factors: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.base[0]:
            # The context channel adds to the retrievers' sum (rsf): the base then says so.
            name = self.fused.signal
            if self.fused.channels.get(context.CONTEXT):
                name = f"{name}+context"
            self.base = (name, self.fused.score)

    def sort_key(self) -> tuple[float, int, int]:
        # Stable tie-break: memories before episodes, then newer ids first.
        return (-self.score, 0 if self.row["type"] == "memory" else 1, -int(self.row["id"]))

    def signal(self) -> str:
        """What ranking keyed on, by the priority confidence > rsf > cosine > rrf (docs/retrieval.md#after-fusion)."""
        if self.confidence is not None:
            return "confidence"
        if self.cosine_keyed and self.fused.signal == "rrf":
            return "cosine"
        return self.fused.signal

    def similarity(self) -> float | None:
        """The score on a similarity scale (confidence or cosine-keyed), or None (rrf/rsf/cascade)."""
        return self.score if self.signal() in ("confidence", "cosine") else None

    def match_reason(self, gate: str | None = None) -> dict[str, Any]:
        """``{signal, score, confidence?, cosine?, rrf?, rsf?, factors, gate?}``: ``factors`` names the
        base score and each factor applied after fusion, in order; their product is ``score``."""
        reason: dict[str, Any] = {"signal": self.signal(), "score": round(self.score, 6)}
        if self.confidence is not None:
            reason["confidence"] = round(self.confidence, 6)
        if self.fused.cosine is not None:
            reason["cosine"] = round(self.fused.cosine, 6)
        if self.fused.rrf is not None:
            reason["rrf"] = round(self.fused.rrf, 6)
        if self.fused.rsf is not None:
            reason["rsf"] = round(self.fused.rsf, 6)
        if context.CONTEXT in self.fused.channels:
            reason["context"] = round(self.fused.channels[context.CONTEXT], 6)
        reason["factors"] = {
            self.base[0]: round(self.base[1], 6),
            **{name: round(value, 6) for name, value in self.factors.items()},
        }
        verdict = gate if gate is not None else self.gate
        if verdict is not None:
            reason["gate"] = verdict
        return reason

    def verdict(self, gate_info: dict[str, Any]) -> str | None:
        """What the gate said about this row: exact_match, fallback, passed (None: no gate ran)."""
        if self.gate is not None:
            return self.gate
        if self.gate_fallback:
            return "fallback"
        return None if gate_info.get("kind") == "off" or gate_info.get("threshold") is None else "passed"


class GateStage(Protocol):
    """The quality-gate seam (docs/retrieval.md#quality-gate): ``cpersona.retrieval.gate.QualityGate`` in production."""

    def apply(self, rows: list[ScoredRow], request: RecallRequest, evidence: GateEvidence) -> GateDecision:
        """Return the rows that pass (best first) and what the response says about the gate."""
        ...


class NoGate:
    """Passes every row (CPERSONA_FUSED_GATE_ENABLED=false, and benchmarks measuring gate-off)."""

    def __init__(
        self, reason: str = "the quality gate is disabled (CPERSONA_FUSED_GATE_ENABLED=false)"
    ) -> None:
        self.reason = reason

    def apply(self, rows: list[ScoredRow], request: RecallRequest, evidence: GateEvidence) -> GateDecision:
        top = None if evidence.top_cosine is None else round(evidence.top_cosine, 6)
        return GateDecision(rows, dict(gate_off(self.reason, top)))


@dataclass
class RecallOutcome:
    """Best-first rows (already cut to ``limit``), how they were found and the gate's verdict."""

    rows: list[dict[str, Any]]
    keyword_method: str
    vector_used: bool
    keyword_methods: dict[str, str] = field(default_factory=dict)  # channel → "fts" | "like" | "none"
    gate: dict[str, Any] = field(default_factory=dict)
    trace: dict[str, Any] | None = None  # each stage's candidates when the request asked for it
    time_cue: dict[str, Any] | None = None  # the cue that acted (the caller's, or read from the query)


class RecallPipeline:
    """Stateless recall over a storage session (one read snapshot), configured by Settings."""

    def __init__(
        self,
        settings: Settings,
        gate: GateStage | None = None,
        channels: frozenset[str] = frozenset(fusion.CHANNEL_ORDER),
        context_policy: context.ContextPolicy | None | str = "settings",
    ) -> None:
        self.settings = settings
        self.gate: GateStage = gate or NoGate()
        # Which retrievers run: all four in production; benchmarks measure each arm alone.
        self.channels = channels
        # The context channel (neighbouring turns of the best hits): from the settings unless given.
        self.context_policy = (
            context.policy_for(settings.recall_mode, settings.context_weight)
            if isinstance(context_policy, str)
            else context_policy
        )

    def run(
        self,
        session: Session,
        request: RecallRequest,
        *,
        query_vector: VectorQuery | PendingQueryVector | None,
        now: datetime,
    ) -> RecallOutcome:
        """Run the pipeline; ``query_vector`` None means keyword-only.

        A ``PendingQueryVector`` (still being computed: ``CPERSONA_EMBED_QUERY_OVERLAP``) is waited
        for after the keyword channels, which run meanwhile; the answer is the one the vector given
        at once gets (resolved to None: keyword-only).

        Vector search is the session's (``VectorSearch``): the pipeline never knows whether the
        engine scans an in-memory index or asks the database.
        """
        cue = self._cue(request, now)
        if cue is not request.time_cue:
            request = replace(request, time_cue=cue)
        # Superseded, retired and expired memories leave the candidate pool of every channel: each
        # reads ``len(hidden)`` more rows and drops them, so the pool is what it would be without
        # them. Expiry needs no sweep: a row past its time is hidden from this recall on.
        hidden = frozenset(
            session.supersede.hidden_ids(
                request.scope,
                superseded=not request.include_superseded,
                retired=not request.include_retired,
                now=format_ts(now),
            )
        )
        if not request.query.strip():
            return self._most_recent(session, request, hidden)
        depth = fusion.channel_depth(self.settings.recall_mode, request.limit) + len(request.exclude_contents)
        extra = len(hidden)
        # A sure cue: only rows in the period are candidates (the vector channel searches only them).
        in_period = self._period_ids(session, request) if cue is not None and cue.filters else None
        keyword_depth = max(depth, SURE_KEYWORD_DEPTH) if in_period is not None else depth
        # ... and the keyword channels filter the period in their statements, before their row budget
        # (2,000 newer matches of a common word would otherwise fill it: issue 36 point 4).
        period = self._period_bounds(request) if in_period is not None else None
        terms = query_terms(request.query)
        channels: dict[str, list[tuple[str, float]]] = {}
        include_episodes = request.source_id is None or bool(request.scope.channel)

        vector_used = query_vector is not None and fusion.VECTOR in self.channels
        # The vector searches start first and are collected after the keyword channels: an engine
        # that can (SQLite) scans its index on another thread meanwhile (storage.deferred_vectors.nearest_soon).
        nearest_memories: Callable[[], list[tuple[int, float]]] | None = None
        nearest_episodes: Callable[[], list[tuple[int, float]]] | None = None
        if query_vector is not None and vector_used:
            search = session.vector_search
            window = self.settings.max_memories
            allowed = self._source_ids(session, request) if request.source_id is not None else None
            if in_period is not None:
                allowed = sorted(in_period if allowed is None else in_period.intersection(allowed))
            if allowed is not None and hidden:
                allowed = [i for i in allowed if i not in hidden]
            nearest_memories = nearest_when_ready(
                search,
                MEMORIES,
                query_vector,
                request.scope,
                depth + extra,
                window=window,
                allowed_ids=allowed,
            )
            if include_episodes:
                nearest_episodes = nearest_when_ready(
                    search, EPISODES, query_vector, request.scope, depth, window=window
                )
            channels[fusion.VECTOR] = []  # filled below; the channel keeps its place in the order

        methods: dict[str, str] = {}
        mem_hits = KeywordHits([], "none")
        if fusion.FTS_MEMORIES in self.channels:
            mem_hits = session.keyword.memories(
                terms, request.scope, keyword_depth + extra, source_id=request.source_id, period=period
            )
            channels[fusion.FTS_MEMORIES] = _within(mem_hits.hits, in_period, depth, hidden)
            methods[fusion.FTS_MEMORIES] = mem_hits.method
        if fusion.FTS_WORDS in self.channels:
            word_hits = session.keyword.memories_words(
                terms, request.scope, keyword_depth + extra, source_id=request.source_id, period=period
            )
            channels[fusion.FTS_WORDS] = _within(word_hits.hits, in_period, depth, hidden)
            methods[fusion.FTS_WORDS] = word_hits.method
        if include_episodes and fusion.FTS_EPISODES in self.channels:
            ep_hits = session.keyword.episodes(terms, request.scope, depth)
            channels[fusion.FTS_EPISODES] = [(f"ep:{i}", s) for i, s in ep_hits.hits]
            methods[fusion.FTS_EPISODES] = ep_hits.method

        if isinstance(query_vector, PendingQueryVector):
            query_vector = query_vector.resolve()  # computed beside the keyword channels
            if query_vector is None:  # not available after all: keyword-only, the vector channel absent
                nearest_memories = nearest_episodes = None
                channels.pop(fusion.VECTOR, None)
                vector_used = False
        if nearest_memories is not None:
            hits = [(f"mem:{i}", s) for i, s in nearest_memories() if i not in hidden][:depth]
            if nearest_episodes is not None:
                hits += [(f"ep:{i}", s) for i, s in nearest_episodes()]
                hits.sort(key=lambda h: (-h[1], h[0]))
            channels[fusion.VECTOR] = hits[:depth]

        # The word channel weighs the share of the query written with spaces (retrieval/language.py):
        # a Japanese question's words are runs the word index holds only by accident.
        weights = {
            fusion.VECTOR: request.vector_weight,
            fusion.FTS_WORDS: language.spaced_share(request.query),
        }
        fused = fusion.fuse(self.settings.recall_mode, channels, rrf_k=self.settings.rrf_k, weights=weights)
        scored = self._hydrate(session, request, fused, vector_used, hidden)
        scored = [item for item in scored if _has_evidence(item)]
        scored = self._penalise(session, request, scored, now)
        if self.settings.confidence_enabled and query_vector is not None:
            confidence.apply(scored, query_vector, session.vector_search, now, deep=request.deep)
        else:
            confidence.key_on_cosine(scored)
        scored.sort(key=ScoredRow.sort_key)
        vector_hits = channels.get(fusion.VECTOR)
        evidence = GateEvidence(
            top_cosine=max(s for _, s in vector_hits) if vector_hits else None,
            query_vector=query_vector,
            search=session.vector_search,
        )
        decision = self.gate.apply(scored, request, evidence)
        if vector_used and not vector_hits and decision.info.get("kind") == "off":
            # A query vector existed but nothing in scope has a vector to compare it with.
            decision.info["reason"] = "nothing in this scope has a vector of the active model to compare with"
        # After the gate (which judges the query, not the order): a question about the present prefers
        # the newer of rows that match about equally, and other sessions' best rows get room.
        decision.rows = recency.prefer_newest(decision.rows, request.query, self.settings.recency_weight)
        decision.rows = diversity.diversify(
            decision.rows, self.settings.session_diversity, self.settings.session_free_rows
        )
        returned = decision.rows[: request.limit]
        cue_info = None
        if cue is not None:
            cue_info = cue.describe()
        if cue is not None and cue_info is not None and not cue.filters:
            # After the gate, so the boost never changes what the gate keeps: it only reorders it.
            returned = self._boost(cue, decision.rows, request.limit, cue_info)
            scored.sort(key=ScoredRow.sort_key)
        rows = []
        for item in returned:
            row = dict(item.row)
            row["match_reason"] = item.match_reason(item.verdict(decision.info))
            if request.vector_weight < 1.0:
                # The model does not read (all of) the query's script: the response's search.language says why.
                row["match_reason"]["vector_weight"] = request.vector_weight
            if item.gate_fallback:
                row["gate_fallback"] = True
            rows.append(row)
        if vector_used and isinstance(query_vector, VectorQuery):
            _name_blocks(session, query_vector, rows)
        traced = None
        if request.trace:
            traced = trace.build(
                trace.Stages(
                    mode=self.settings.recall_mode,
                    rrf_k=self.settings.rrf_k,
                    depth=depth,
                    channels=channels,
                    methods=methods,
                    fused=fused,
                    scored=scored,
                    gate=decision.info,
                    kept=[id(r) for r in decision.rows],
                    returned=[r["ref"] for r in rows],
                    time_cue=cue_info,
                )
            )
        return RecallOutcome(
            rows=rows,
            keyword_method=mem_hits.method,
            vector_used=vector_used,
            keyword_methods=methods,
            gate=decision.info,
            trace=traced,
            time_cue=cue_info,
        )

    # -- stages ---------------------------------------------------------------------
    def _most_recent(self, session: Session, request: RecallRequest, hidden: frozenset[int]) -> RecallOutcome:
        cue = request.time_cue
        wanted = request.limit * 2 + 50 + len(hidden)
        if cue is not None and cue.filters:
            # The period's newest memories (by insertion), then ordered as list_recent orders them.
            ids = sorted(self._period_ids(session, request))[-wanted:]
            found = session.memories.get_many(ids, request.scope).values()
            rows = sorted(found, key=lambda r: (r["created_at"], r["id"]), reverse=True)
        else:
            rows = session.memories.list_recent(request.scope, wanted)
        rows = [r for r in rows if r["id"] not in hidden and self._keep(r, request)]
        gate = dict(gate_off("empty query: the most recent memories, ungated"))
        return RecallOutcome(
            rows=rows[: request.limit],
            keyword_method="none",
            vector_used=False,
            gate=gate,
            time_cue=cue.describe() if cue is not None and cue.filters else None,
        )

    def _cue(self, request: RecallRequest, now: datetime) -> TimeCue | None:
        """The caller's cue; else, with CPERSONA_QUERY_DATES, one unambiguous date phrase in the query
        read as a ``likely`` cue (a boost, never a filter)."""
        if request.time_cue is not None or not self.settings.query_dates or not request.query.strip():
            return request.time_cue
        found = date_phrases.find_in_query(request.query, now)
        if found is None:
            return None
        return TimeCue(found[0], QUERY_CERTAINTY, "query", found[1])

    @staticmethod
    def _period_bounds(request: RecallRequest) -> tuple[str | None, str | None]:
        """The cue's period in stored timestamp form, [start, end)."""
        cue = request.time_cue
        assert cue is not None
        start, end = cue.period.start, cue.period.end
        return (None if start is None else format_ts(start), None if end is None else format_ts(end))

    @classmethod
    def _period_ids(cls, session: Session, request: RecallRequest) -> set[int]:
        return set(session.memories.ids_in_period(request.scope, *cls._period_bounds(request)))

    @staticmethod
    def _boost(cue: TimeCue, kept: list[ScoredRow], limit: int, info: dict[str, Any]) -> list[ScoredRow]:
        """Multiply each kept row by its closeness to the period, re-sort, cut to ``limit``; the best
        row of the plain ranking stays in the answer (the boost never hides a strong match)."""
        if not kept or limit <= 0:
            return kept[:limit]
        plain_best = kept[0]  # the gate's list is best first, before any boost
        boosted = 0
        for item in kept:
            factor = cue.factor(row_time(item.row))
            if factor != 1.0:
                item.factors[TIME_FACTOR] = factor
                item.score *= factor
                boosted += 1
        kept.sort(key=ScoredRow.sort_key)
        returned = kept[:limit]
        if all(item is not plain_best for item in returned):
            returned = [*returned[: limit - 1], plain_best]
            info["kept_best"] = str(plain_best.row.get("ref"))
        info["boosted"] = boosted
        return returned

    @staticmethod
    def _source_ids(session: Session, request: RecallRequest) -> list[int]:
        return session.memories.ids_with_source(request.scope, request.source_id or "")

    def _keep(self, row: dict[str, Any], request: RecallRequest) -> bool:
        cue = request.time_cue
        if cue is not None and cue.filters and not cue.admits_row(row):
            return False  # a sure cue: outside the period (this also covers context neighbours)
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
        self,
        session: Session,
        request: RecallRequest,
        fused: dict[str, fusion.Fused],
        vector_used: bool,
        hidden: frozenset[int] = frozenset(),
    ) -> list[ScoredRow]:
        mem_ids = [int(ref[4:]) for ref in fused if ref.startswith("mem:")]
        ep_ids = [int(ref[3:]) for ref in fused if ref.startswith("ep:")]
        found: dict[str, dict[str, Any]] = {}
        for rid, mem in session.memories.get_many(mem_ids, request.scope).items():
            found[f"mem:{rid}"] = mem
        for rid, ep in session.episodes.get_many(ep_ids, request.scope).items():
            found[f"ep:{rid}"] = ep
        if self.context_policy is not None:
            kept = {ref: row for ref, row in found.items() if self._keep(row, request)}
            # Keyword-only recall returns what matched: neighbours then only lift candidates.
            policy = self.context_policy if vector_used else replace(self.context_policy, add_new=False)
            rows = (
                session.memories
                if not hidden
                else cast("MemoryRows", _Unsuperseded(session.memories, hidden))
            )
            found.update(context.spread(fused, kept, rows, request.scope, policy))
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


def _has_evidence(item: ScoredRow) -> bool:
    """No filler: a candidate with a fused score of 0 and no keyword match is never returned, gate or no
    gate. The vector channel ranks every row in scope, and rsf puts each channel's weakest hit at 0: such
    a row matched nothing. A keyword match is evidence even as its channel's weakest hit (a rsf share
    of 0 there): it holds the query's words."""
    return item.fused.score > 0 or any(c in item.fused.channels for c in LEXICAL_CHANNELS)


def _within(
    hits: list[tuple[int, float]], allowed: set[int] | None, depth: int, hidden: frozenset[int] = frozenset()
) -> list[tuple[str, float]]:
    """A memory channel's hits as refs; under a sure cue only those in the period, never a superseded
    one (``hidden``), at most ``depth``."""
    if allowed is not None:
        hits = [h for h in hits if h[0] in allowed][:depth]
    if hidden:
        hits = [h for h in hits if h[0] not in hidden][:depth]
    return [(f"mem:{i}", s) for i, s in hits]


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


def _name_blocks(session: Session, query: VectorQuery, rows: list[dict[str, Any]]) -> None:
    """``match_reason.block`` on each returned long memory whose best vector is a block's
    (docs/retrieval.md#long-records): the preview then shows that part."""
    ids = [
        int(r["id"])
        for r in rows
        if str(r.get("ref", "")).startswith("mem:") and "cosine" in r["match_reason"]
    ]
    if not ids:
        return
    found = session.vector_search.best_blocks(query, ids)
    for row in rows:
        hit = found.get(int(row["id"]))
        if hit is not None:
            row["match_reason"]["block"] = hit.describe()
