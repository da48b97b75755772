"""Recall as a service: query embedding, pipeline, advisory, bookkeeping writes (vector search is storage's)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Annotated, Any, cast

from cpersona import arguments as arg
from cpersona.core.limits import (
    MAX_QUERY_CHARS,
    PROFILE_INJECTION_MIN_POOL,
    PROFILE_INJECTION_ROWS,
    RECALL_LIMIT_DEFAULT,
    RECALL_LIMIT_MAX,
)
from cpersona.core.public import public
from cpersona.core.text import clean_text, format_ts, utc_now
from cpersona.core.validation import agent_set, boolean, bounded_int, optional_str, string_list
from cpersona.embed.runtime.service import EmbeddingService
from cpersona.errors import StorageFault
from cpersona.health.agent_notice import agent_notice
from cpersona.result_types.everyday import (
    MergedItem,
    RecallGate,
    RecallResult,
    RecallTimeCue,
    RecallTrace,
    RecallWithContextResult,
)
from cpersona.result_types.rows import RecallRow
from cpersona.retrieval import language, query_form
from cpersona.retrieval import time_cue as time_cues
from cpersona.retrieval.explain import explain
from cpersona.retrieval.gate import gate_off
from cpersona.retrieval.pending_vector import PendingQueryVector, QueryVectorThreads
from cpersona.retrieval.pipeline import RecallPipeline, RecallRequest
from cpersona.runtime import persistence
from cpersona.runtime.health_state import HealthState
from cpersona.services import context_merge, supersede
from cpersona.storage.interface import Session, Store
from cpersona.storage.scope import Scope
from cpersona.storage.values import VectorQuery


class Recaller:
    """Runs recall for a ``Memory``."""

    def __init__(
        self,
        store: Store,
        embeddings: EmbeddingService,
        health: HealthState,
        pipeline: RecallPipeline,
        keyword_weight: Callable[[str | None], float] | None = None,
    ) -> None:
        self.store = store
        # An agent's memory keyword weight (the calibrator's: lower on a corpus of long records).
        self.keyword_weight = keyword_weight or (lambda _agent: 1.0)
        self.embeddings = embeddings
        self.health = health
        self.pipeline = pipeline
        self.settings = pipeline.settings
        # CPERSONA_EMBED_QUERY_OVERLAP: the query is embedded here while the keyword channels run.
        self.query_vectors = QueryVectorThreads()

    def close(self) -> None:
        """Wait for query embeddings in flight and end their threads (``Memory.close``)."""
        self.query_vectors.close()

    def _vector_query(self, text: str, content: str | None) -> VectorQuery | None:
        vector = self.embeddings.embed_query(text)
        if vector is None or not self.embeddings.ready:
            return None
        content_vector = self.embeddings.embed_query(content) if content is not None else None
        if content_vector is None:
            return VectorQuery(vector, self.embeddings.model_id, self.embeddings.dimension)
        # A question that counts: its content's vector beside its own (retrieval/query_form.py).
        vector = query_form.blend(vector, content_vector, self.settings.count_query_content)
        return VectorQuery(vector, self.embeddings.model_id, self.embeddings.dimension, content)

    def _query_vector(self, text: str, content: str | None) -> VectorQuery | PendingQueryVector | None:
        """The query's vector now, or (overlap on, model ready) one being computed beside the pipeline.

        A model still on its first load (a server just started: about half a second for MiniLM) is
        waited for, up to ``CPERSONA_RECALL_MODEL_WAIT`` seconds, so the first recall of a client that
        starts a server per call is not keyword-only; past that bound it is, with the advisory. A load
        that has settled (ready or faulted) is never waited for.
        """
        if self.embeddings.loading and self.settings.recall_model_wait > 0:
            self.embeddings.wait_settled(self.settings.recall_model_wait)
        if self.settings.query_overlap and self.embeddings.ready:
            return self.query_vectors.start(lambda: self._vector_query(text, content))
        return self._vector_query(text, content)

    @public
    def recall(
        self,
        agent_id: str | None,
        query: Annotated[str, arg.Field(description="Empty: the most recent.")] = "",
        *,
        limit: arg.RecallLimit = RECALL_LIMIT_DEFAULT,
        deep: Annotated[bool, arg.Field(description="Ignore time decay.")] = False,
        channel: arg.ChannelRead = None,
        project_id: arg.ProjectRead = None,
        exclude_contents: Sequence[str] | None = None,
        source_id: Annotated[
            str | None, arg.Field(description="Only rows whose source.id starts with this.")
        ] = None,
        record: Annotated[bool, arg.API_ONLY] = True,
        trace: Annotated[
            bool, arg.Field(description="Also return each stage's candidates and scores.")
        ] = False,
        time_cue: arg.TimeCueArg = None,
        include_superseded: bool = False,
        include_retired: bool = False,
        visible_agents: Collection[str] | None = None,
    ) -> RecallResult:
        """Hybrid recall; ``results`` ordered worst → best (the last element is the best match).

        ``record=False`` leaves recall_count / last_recalled_at alone (a person previewing
        what recall returns, e.g. in ``cpersona ui`` or ``cpersona recall``, must not feed the
        recent-recall penalty). ``trace=True`` adds ``trace``: each stage's candidates and scores
        (docs/retrieval.md "Trace"). An empty or shortened answer carries ``explanation`` (one
        sentence: which gate, its threshold, the best similarity, what to try); an agent that owns
        no rows at all adds ``notice`` naming the known agents (only ``visible_agents`` when given:
        an ACL client's readable agents, which the MCP layer passes).

        ``time_cue`` ``{start?, end?, phrase?, certainty?, now?}`` says when the memory happened
        (its own ``timestamp``): ``sure`` keeps only rows in the period, ``likely`` / ``vague`` boost
        rows near it and never hide the plain ranking's best row (docs/retrieval.md "Time cues").
        Without one, an unambiguous date phrase in the query acts as a ``likely`` cue
        (``CPERSONA_QUERY_DATES``). The cue that acted is echoed as ``time_cue``.

        Superseded memories are no candidates unless ``include_superseded``; then each one returned
        says ``superseded_by`` (its successor's ref) and ``superseded_at``. Retired memories likewise,
        unless ``include_retired``; then each one returned says ``retired_at`` and ``retire_reason``.
        """
        request = _request(
            agent_id,
            query,
            limit,
            deep,
            channel,
            project_id,
            exclude_contents,
            source_id,
            trace,
            time_cue,
            include_superseded,
            include_retired,
        )
        visible = agent_set(visible_agents, "visible_agents")
        partial = self._vector_weight(request)
        if partial is not None:
            request = replace(request, vector_weight=partial[0], vector_scripts=partial[1])
        wants_vector = request.limit > 0 and bool(request.query.strip()) and request.vector_weight > 0
        # A question that counts: searched by its content too, its own words weigh less (query_form.py);
        # keyword-only (no model, or none coming), its words are all there is and keep their weight.
        model_on = self.embeddings.ready or self.embeddings.loading
        counting = self.settings.count_query_content > 0.0 and wants_vector and model_on
        content = query_form.content_form(request.query) if counting else None
        # The corpus's weight is below 1 exactly when its rows are long records (calibration service).
        corpus_weight = self.keyword_weight(request.scope.agent_id)
        keyword_weight = corpus_weight * query_form.keyword_share(
            request.query, content, self.settings.count_keyword_weight
        )
        if keyword_weight != 1.0 or corpus_weight != 1.0:
            request = replace(request, keyword_weight=keyword_weight, long_records=corpus_weight != 1.0)
        query_vector = self._query_vector(request.query, content) if wants_vector else None
        if request.limit == 0:
            return self._nothing()
        now = utc_now()
        try:
            with self.store.recall_read() as session:
                outcome = self.pipeline.run(session, request, query_vector=query_vector, now=now)
                # Shaped once by the pipeline (RecallRow); profiles and supersede marks are added here.
                rows = cast("list[dict[str, Any]]", outcome.rows)
                scored = len(rows)
                # A sure cue returns the period's rows only: profiles have no time, so none are appended.
                filtered = outcome.time_cue is not None and outcome.time_cue.get("certainty") == "sure"
                if len(rows) < request.limit and not filtered:
                    rows = rows + self._profiles_for(session, request.scope)[: request.limit - len(rows)]
                notice = agent_notice(session.admin, request.scope.agent_id, visible) if not rows else None
                if request.include_superseded:
                    supersede.mark_rows(session, rows)
                if request.include_retired:
                    supersede.mark_retired(session, rows)
        finally:
            if isinstance(query_vector, PendingQueryVector):
                # Never leave an embedding running behind an answer (or a failure); the pipeline
                # has usually waited for it already.
                query_vector = query_vector.resolve()
        # Read the health state after embedding, so a failure of this very query is already counted.
        advisory = self.health.advisory()
        storage_note = self._record(rows, now) if record else None
        rows.reverse()  # worst → best: the last element is the best match
        response: RecallResult = {
            "ok": True,
            "results": cast("list[RecallRow]", rows),
            "count": len(rows),
            "mode": self.settings.recall_mode,
            "search": {
                "vector": outcome.vector_used,
                "keyword": outcome.keyword_method,
                "keyword_channels": outcome.keyword_methods,
            },
            "gate": cast("RecallGate", outcome.gate),
        }
        if keyword_weight != 1.0:
            response["search"]["keyword_weight"] = keyword_weight
        if partial is not None:
            weight = outcome.vector_weight if outcome.vector_used else request.vector_weight
            why = self._language_sentence(request, request.vector_weight, weight)
            response["search"]["vector_weight"] = weight
            response["search"]["language"] = why
            if request.vector_weight == 0 and outcome.gate.get("kind") == "off":
                outcome.gate["reason"] = why
        if advisory is not None:
            response["advisory"] = advisory
        if storage_note is not None:
            response["storage"] = storage_note
        sentence = explain(
            outcome.gate,
            scored,
            request.limit,
            keyword_only=query_vector is None and bool(request.query.strip()),
            empty_query=not request.query.strip(),
        )
        if sentence:
            response["explanation"] = sentence
        if notice:
            response["notice"] = notice
        if outcome.time_cue is not None:
            response["time_cue"] = cast("RecallTimeCue", outcome.time_cue)
        if outcome.trace is not None:
            response["trace"] = cast("RecallTrace", outcome.trace)
        return response

    def _nothing(self) -> RecallResult:
        """``limit`` 0: no rows, nothing gated (the advisory still says how the model is)."""
        nothing: RecallResult = {
            "ok": True,
            "results": [],
            "count": 0,
            "mode": self.settings.recall_mode,
            "gate": gate_off("limit 0: nothing to gate"),
        }
        advisory = self.health.advisory()
        if advisory is not None:
            nothing["advisory"] = advisory
        return nothing

    def _record(self, rows: list[dict[str, Any]], now: datetime) -> str | None:
        """Count the returned memories as recalled (recall_count, last_recalled_at); the storage note
        when that could not be written. Bookkeeping is a write too (docs/tools.md#pause_persistence)."""
        recalled = [r["id"] for r in rows if r.get("type") == "memory"]
        if not recalled or persistence.is_paused():
            return None
        try:
            with self.store.write() as ws:
                ws.memories.mark_recalled(recalled, format_ts(now))
        except StorageFault as fault:  # a read-only or full file must not cost the reader its results
            return f"{fault.code}: recall statistics were not recorded ({fault.path})"
        return None

    def _vector_weight(self, request: RecallRequest) -> tuple[float, frozenset[str] | None] | None:
        """The vector channel's weight for this query and the scripts the model reads, when it does not
        read all of the query (None: full weight, nothing to say)."""
        if not request.query.strip() or not self.embeddings.ready:
            return None
        scripts = language.scripts_read(self.embeddings.languages)
        weight = language.readable_share(request.query, scripts)
        return None if weight >= 1.0 else (weight, scripts)

    def _language_sentence(self, request: RecallRequest, query_share: float, weight: float) -> str:
        """Why the vector channel weighs ``weight``: the query's unread share, and the best candidates'
        when they lowered it further (retrieval/vector_channel.py)."""
        unread = ", ".join(language.unread_scripts(request.query, request.vector_scripts)) or "other"
        model = self.embeddings.model_id
        if query_share == 0:
            return (
                f"the query is written in a script {model} does not read ({unread}): ranked by keywords "
                "only (a multilingual model such as jina-v5-nano reads it)"
            )
        letters = f"{round((1 - query_share) * 100)}% of the query's letters"
        if weight < query_share:
            letters += f" and {round((1 - weight / query_share) * 100)}% of its best candidates'"
        return f"{letters} are in a script {model} does not read ({unread}): the vector channel weighs {weight:g} in fusion"

    def _profiles_for(self, session: Session, scope: Scope) -> list[dict[str, Any]]:
        if scope.agent_id is None:
            return []
        # Only whether the pool reaches the threshold matters: count up to it (a whole count of a 1M-row scope
        # was a PostgreSQL recall's slowest statement whenever the gate returned a short list).
        pool = session.memories.count(scope, cap=PROFILE_INJECTION_MIN_POOL)
        if pool < PROFILE_INJECTION_MIN_POOL:
            pool += session.episodes.count(scope, cap=PROFILE_INJECTION_MIN_POOL - pool)
        if pool < PROFILE_INJECTION_MIN_POOL:
            return []
        return session.profiles.newest_in_scope(scope, PROFILE_INJECTION_ROWS)

    @public
    def recall_with_context(
        self,
        agent_id: str,
        query: Annotated[str, arg.Field(description="Empty: the most recent.")],
        external_context: Annotated[
            Sequence[arg.ConversationEntry], arg.Field(description="Recent conversation entries.")
        ],
        *,
        limit: arg.RecallLimit = RECALL_LIMIT_DEFAULT,
        deep: Annotated[bool, arg.Field(description="Ignore time decay.")] = False,
        channel: arg.ChannelRead = None,
        project_id: arg.ProjectRead = None,
        record: Annotated[bool, arg.API_ONLY] = True,
        time_cue: arg.TimeCueArg = None,
        include_superseded: bool = False,
        visible_agents: Collection[str] | None = None,
    ) -> RecallWithContextResult:
        """Recall merged with conversation entries, deduplicated, in chronological order.

        Every entry's content filters the recall (the agent already has it);
        only user/assistant entries are merged into the output.
        """
        entries = context_merge.validate_entries(external_context)
        recalled = self.recall(
            agent_id,
            query,
            limit=limit,
            deep=deep,
            channel=channel,
            project_id=project_id,
            exclude_contents=[e["content"] for e in entries if e["content"].strip()],
            record=record,
            time_cue=time_cue,
            include_superseded=include_superseded,
            visible_agents=visible_agents,
        )
        merged = context_merge.merge_chronologically(recalled["results"], entries)
        items = cast("list[MergedItem]", merged["items"])  # recalled rows tagged with origin, and entries
        response: RecallWithContextResult = {
            "ok": True,
            "items": items,
            "count": len(items),
            "mode": recalled["mode"],
            "gate": recalled["gate"],
        }
        if "context_filter_only" in merged:
            response["context_filter_only"] = merged["context_filter_only"]
        if "advisory" in recalled:
            response["advisory"] = recalled["advisory"]
        if "explanation" in recalled:
            response["explanation"] = recalled["explanation"]
        if "notice" in recalled:
            response["notice"] = recalled["notice"]
        if "time_cue" in recalled:
            response["time_cue"] = recalled["time_cue"]
        return response


def _request(
    agent_id: Any,
    query: Any,
    limit: Any,
    deep: Any,
    channel: Any,
    project_id: Any,
    exclude_contents: Any,
    source_id: Any,
    trace: Any,
    time_cue: Any,
    include_superseded: Any,
    include_retired: Any,
) -> RecallRequest:
    """recall's arguments checked (InvalidInput names the first bad one) and read into a request."""
    return RecallRequest(
        scope=Scope(
            optional_str(agent_id, "agent_id"),
            optional_str(project_id, "project_id"),
            optional_str(channel, "channel"),
        ),
        query=clean_text(optional_str(query, "query", max_len=10**9, free_text=True) or "")[:MAX_QUERY_CHARS],
        limit=bounded_int(limit, "limit", 0, RECALL_LIMIT_MAX),
        deep=boolean(deep, "deep"),
        exclude_contents=string_list(exclude_contents, "exclude_contents"),
        source_id=optional_str(source_id, "source_id"),
        trace=boolean(trace, "trace"),
        time_cue=time_cues.parse(time_cue, utc_now()),
        include_superseded=boolean(include_superseded, "include_superseded"),
        include_retired=boolean(include_retired, "include_retired"),
    )
