"""Recall, step by step: retrieve → fuse → hydrate → filter → penalise → gate → order → limit.

The pipeline reads; it never writes. ``Memory.recall`` wraps it with the
parts that touch process state (query embedding, advisory, recall
bookkeeping, profile injection, the final reversal). The channels it retrieves
from are the registered retrievers (retrieval/channels.py); the candidate types
every stage reads live in retrieval/candidates.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Protocol, cast

from cpersona.config import Settings
from cpersona.core.text import format_ts
from cpersona.result_types.rows import RecallRow
from cpersona.retrieval import (
    confidence,
    context,
    date_phrases,
    diversity,
    fusion,
    recency,
    replies,
    role,
    scoring,
    trace,
)
from cpersona.retrieval.candidates import MEMORY, Fused, Key, RecallRequest, ScoredRow
from cpersona.retrieval.channels import RETRIEVERS
from cpersona.retrieval.gate import GateDecision, GateEvidence, gate_off
from cpersona.retrieval.keyword_channels import FTS_MEMORIES
from cpersona.retrieval.match_query import query_terms
from cpersona.retrieval.pending_vector import PendingQueryVector
from cpersona.retrieval.retriever import ChannelHits, ChannelQuery, Retriever
from cpersona.retrieval.time_cue import FACTOR as TIME_FACTOR
from cpersona.retrieval.time_cue import QUERY_CERTAINTY, TimeCue, row_time
from cpersona.retrieval.vector_channel import VECTOR
from cpersona.storage.interface import Session, VectorQuery
from cpersona.storage.values import Row

__all__ = ["GateStage", "NoGate", "RecallOutcome", "RecallPipeline", "RecallRequest", "ScoredRow"]

#: Under a ``sure`` time cue each keyword channel reads this many rows, then keeps those in the
#: period: the keyword row budget (storage/keyword_prune.py), so a filtered channel costs no more.
SURE_KEYWORD_DEPTH = 300
#: The vector channel's weight from which it leads the ranking beside the keyword channels (weight 1
#: each): below it, a query or candidates the model reads in part are ranked as keyword-only recall
#: ranks (the context channel's ceiling: docs/retrieval.md#the-context-channel).
VECTOR_LEADS = 0.5


class GateStage(Protocol):
    """The quality-gate seam (docs/quality-gate.md): ``cpersona.retrieval.gate.QualityGate`` in production."""

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

    rows: list[RecallRow]
    keyword_method: str
    vector_used: bool
    keyword_methods: dict[str, str] = field(default_factory=dict)  # channel → "fts" | "like" | "none"
    gate: dict[str, Any] = field(default_factory=dict)
    trace: dict[str, Any] | None = None  # each stage's candidates when the request asked for it
    time_cue: dict[str, Any] | None = None  # the cue that acted (the caller's, or read from the query)
    vector_weight: float = 1.0  # the vector channel's weight in fusion, as it acted (retrieval/language.py)


class RecallPipeline:
    """Stateless recall over a storage session (one read snapshot), configured by Settings."""

    def __init__(
        self,
        settings: Settings,
        gate: GateStage | None = None,
        channels: frozenset[str] | None = None,
        context_policy: context.ContextPolicy | None | str = "settings",
        retrievers: Sequence[Retriever] = RETRIEVERS,
    ) -> None:
        self.settings = settings
        self.gate: GateStage = gate or NoGate()
        # Which retrievers run (``channels``: those of these names): all registered ones in
        # production; benchmarks measure each arm alone.
        self.retrievers = tuple(r for r in retrievers if channels is None or r.name in channels)
        self.order = tuple(r.name for r in self.retrievers)  # fusion sums the channels in this order
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
        hidden = self._hidden(session, request, now)
        if not request.query.strip():
            return self._most_recent(session, request, hidden)
        query = self._channel_query(session, request, hidden, query_vector)
        found = self._retrieve(session, query)
        if isinstance(query_vector, PendingQueryVector):
            query_vector = query_vector.resolve()  # computed beside the keyword channels
        vector_used = VECTOR in found
        channels = {name: hits.hits for name, hits in found.items()}
        methods = {name: hits.method for name, hits in found.items() if hits.method is not None}
        weights = {name: hits.weight for name, hits in found.items()}
        fused = fusion.fuse(
            self.settings.recall_mode, channels, rrf_k=self.settings.rrf_k, weights=weights, order=self.order
        )
        # A vector channel weighing under half a keyword channel (a query or candidates in a script the
        # model does not read) leaves the ranking to the keywords: the context channel then acts as there.
        vector_weight = weights.get(VECTOR, request.vector_weight)
        vector_leads = vector_used and vector_weight >= VECTOR_LEADS
        scored = self._score(session, request, fused, vector_leads, hidden, query_vector, now, query.rows)
        decision = self._gate(session, request, scored, channels.get(VECTOR), query_vector, vector_used)
        cue_info = cue.describe() if cue is not None else None
        returned = self._order(request, decision, scored, cue, cue_info)
        blocks_for = query_vector if vector_used and isinstance(query_vector, VectorQuery) else None
        rows = self._rows(session, request, returned, decision.info, blocks_for, vector_weight)
        stages = trace.Stages(
            mode=self.settings.recall_mode,
            rrf_k=self.settings.rrf_k,
            depth=query.depth,
            channels=channels,
            methods=methods,
            fused=fused,
            scored=scored,
            gate=decision.info,
            kept=[id(r) for r in decision.rows],
            returned=[item.key for item in returned],
            time_cue=cue_info,
            vector_content=query_vector.content if vector_used and query_vector is not None else None,
        )
        return RecallOutcome(
            rows=rows,
            keyword_method=methods.get(FTS_MEMORIES, "none"),
            vector_used=vector_used,
            keyword_methods=methods,
            gate=decision.info,
            trace=trace.build(stages) if request.trace else None,
            time_cue=cue_info,
            vector_weight=vector_weight,
        )

    # -- stages ---------------------------------------------------------------------
    @staticmethod
    def _hidden(session: Session, request: RecallRequest, now: datetime) -> frozenset[int]:
        """Superseded, retired and expired memories: they leave the candidate pool of every channel.
        Expiry needs no sweep: a row past its time is hidden from this recall on."""
        return frozenset(
            session.supersede.hidden_ids(
                request.scope,
                superseded=not request.include_superseded,
                retired=not request.include_retired,
                now=format_ts(now),
            )
        )

    def _channel_query(
        self,
        session: Session,
        request: RecallRequest,
        hidden: frozenset[int],
        query_vector: VectorQuery | PendingQueryVector | None,
    ) -> ChannelQuery:
        """What every retriever is asked: how deep, which rows are out, the sure cue's period."""
        depth = fusion.channel_depth(self.settings.recall_mode, request.limit) + len(request.exclude_contents)
        cue = request.time_cue
        # A sure cue: only rows in the period are candidates (the vector channel searches only them) ...
        in_period = frozenset(self._period_ids(session, request)) if cue is not None and cue.filters else None
        # ... and the keyword channels filter the period in their statements, before their row budget
        # (2,000 newer matches of a common word would otherwise fill it: issue 36 point 4).
        return ChannelQuery(
            request=request,
            terms=query_terms(request.query),
            depth=depth,
            keyword_depth=max(depth, SURE_KEYWORD_DEPTH) if in_period is not None else depth,
            hidden=hidden,
            in_period=in_period,
            period=self._period_bounds(request) if in_period is not None else None,
            vector=query_vector,
            window=self.settings.max_memories,
        )

    def _retrieve(self, session: Session, query: ChannelQuery) -> dict[str, ChannelHits]:
        """Every retriever's hits, by channel in registry order. All start before any is collected:
        the vector search runs on another thread (where the engine can) while the keyword channels read."""
        started = [(r.name, r.search(session, query)) for r in self.retrievers]
        found: dict[str, ChannelHits] = {}
        for name, searching in started:
            hits = searching() if searching is not None else None
            if hits is not None:
                found[name] = hits
        return found

    def _score(
        self,
        session: Session,
        request: RecallRequest,
        fused: dict[Key, Fused],
        vector_leads: bool,
        hidden: frozenset[int],
        query_vector: VectorQuery | None,
        now: datetime,
        read: dict[int, Row] | None = None,
    ) -> list[ScoredRow]:
        """The fused candidates as rows with their final score, best first: hydrated (with the context
        channel, as keyword-only recall has it unless ``vector_leads``), those with evidence, penalised,
        then keyed on confidence or cosine."""
        scored = scoring.hydrate(session, request, fused, self.context_policy, vector_leads, hidden, read)
        scored = [item for item in scored if scoring.has_evidence(item)]
        scored = scoring.penalise(self.settings, session, request, scored, now)
        if self.settings.confidence_enabled and query_vector is not None:
            confidence.apply(scored, query_vector, session.vector_search, now, deep=request.deep)
        else:
            confidence.key_on_cosine(scored)
        scored.sort(key=ScoredRow.sort_key)
        return scored

    def _gate(
        self,
        session: Session,
        request: RecallRequest,
        scored: list[ScoredRow],
        vector_hits: list[tuple[Key, float]] | None,
        query_vector: VectorQuery | None,
        vector_used: bool,
    ) -> GateDecision:
        evidence = GateEvidence(
            top_cosine=max(s for _, s in vector_hits) if vector_hits else None,
            query_vector=query_vector,
            search=session.vector_search,
        )
        decision = self.gate.apply(scored, request, evidence)
        if vector_used and not vector_hits and decision.info.get("kind") == "off":
            # A query vector existed but nothing in scope has a vector to compare it with.
            decision.info["reason"] = "nothing in this scope has a vector of the active model to compare with"
        return decision

    def _order(
        self,
        request: RecallRequest,
        decision: GateDecision,
        scored: list[ScoredRow],
        cue: TimeCue | None,
        cue_info: dict[str, Any] | None,
    ) -> list[ScoredRow]:
        """The gate's rows in answer order, cut to ``limit``. After the gate (which judges the query, not
        the order): a question in the first person prefers the user's rows, one about what the assistant
        said the assistant's, one naming a speaker that speaker's; a stored turn that asks gives way to its reply; a question about the
        present prefers the newer of rows that match about equally, other sessions' best rows get room,
        and a time cue that boosts reorders (never filters)."""
        decision.rows = role.prefer_role(decision.rows, request.query, self.settings.role_weight)
        decision.rows = role.prefer_speaker(decision.rows, request.query, self.settings.speaker_weight)
        decision.rows = replies.prefer_replies(decision.rows, request.query, self.settings.reply_weight)
        decision.rows = recency.prefer_newest(
            decision.rows, request.query, self.settings.recency_weight, self.settings.recency_margin
        )
        decision.rows = diversity.arrange(
            decision.rows,
            request.query,
            self.settings.session_diversity,
            self.settings.session_free_rows,
            self.settings.aggregate_diversity,
        )
        if cue is None or cue_info is None or cue.filters:
            return decision.rows[: request.limit]
        # After the gate, so the boost never changes what the gate keeps: it only reorders it.
        returned = self._boost(cue, decision.rows, request.limit, cue_info)
        scored.sort(key=ScoredRow.sort_key)
        return returned

    @staticmethod
    def _rows(
        session: Session,
        request: RecallRequest,
        returned: list[ScoredRow],
        gate_info: dict[str, Any],
        query_vector: VectorQuery | None,
        vector_weight: float,
    ) -> list[RecallRow]:
        """The returned candidates as recall's rows, each shaped once (``ScoredRow.result_row``)."""
        blocks = _blocks(session, query_vector, returned) if query_vector is not None else {}
        return [item.result_row(gate_info, vector_weight, blocks.get(item.key)) for item in returned]

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
        rows = [r for r in rows if r["id"] not in hidden and scoring.keep(r, request)]
        gate = dict(gate_off("empty query: the most recent memories, ungated"))
        return RecallOutcome(
            rows=cast("list[RecallRow]", rows[: request.limit]),  # stored rows, unscored
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
                item.scale(TIME_FACTOR, factor)
                boosted += 1
        kept.sort(key=ScoredRow.sort_key)
        returned = kept[:limit]
        if all(item is not plain_best for item in returned):
            returned = [*returned[: limit - 1], plain_best]
            info["kept_best"] = plain_best.key.ref
        info["boosted"] = boosted
        return returned


def _blocks(session: Session, query: VectorQuery, returned: list[ScoredRow]) -> dict[Key, dict[str, Any]]:
    """``match_reason.block`` of each returned long memory whose best vector is a block's
    (docs/retrieval.md#long-records): the preview then shows that part."""
    ids = [item.key.id for item in returned if item.key.kind == MEMORY and item.fused.cosine is not None]
    if not ids:
        return {}
    found = session.vector_search.best_blocks(query, ids)
    return {Key(MEMORY, rid): hit.describe() for rid, hit in found.items()}
