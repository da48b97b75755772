"""Shapes of the everyday calls: store, recall, writes, listings, protection and deletion."""

# No ``from __future__ import annotations`` here: with string annotations Python 3.11 cannot see
# NotRequired at runtime, and the doc generator reads __optional_keys__.
from typing import Annotated, Literal, NotRequired, TypedDict

from cpersona.result_types.common import AgentNotice, ItemCount, Redacted, Success
from cpersona.result_types.links import AssociationOutcome
from cpersona.result_types.rows import EpisodeRow, MemoryRow, ProfileRow, RecallRow, StoredRow

# -- store -------------------------------------------------------------------------------------------


class StoreStored(TypedDict):
    """store: a new memory was written."""

    ok: Success
    result: Annotated[Literal["stored"], "Outcome."]
    id: Annotated[int, "The new row's id."]
    ref: Annotated[str, "'mem:<id>'."]
    embedded: Annotated[bool, "A vector was computed now (false: keyword-only until back-fill)."]
    truncated: NotRequired[Annotated[bool, "The content was cut to CPERSONA_MAX_CONTENT_LENGTH."]]
    original_length: NotRequired[Annotated[int, "Characters before the cut (with truncated)."]]
    associations: NotRequired[
        Annotated[list[AssociationOutcome], "With associations: one outcome per link declared with the row."]
    ]
    supersedes: NotRequired[Annotated[list[str], "The memories the new one superseded (with supersedes)."]]
    redacted: NotRequired[Redacted]
    expires_at: NotRequired[
        Annotated[
            str, "With ttl or expires_at: when it leaves recall (UTC ISO-8601); deleted after a grace period."
        ]
    ]


class StoreSkipped(TypedDict):
    """store: a duplicate (same msg_id, or identical content in the same scope); nothing written."""

    ok: Annotated[Literal[True], "Success (a duplicate is not an error)."]
    result: Annotated[Literal["skipped"], "Outcome."]
    id: Annotated[int, "The existing row's id."]
    ref: Annotated[str, "'mem:<id>' of the existing row."]
    reason: Annotated[str, "Which dedup rule matched."]


class StorePaused(TypedDict):
    """store while persistence is paused (pause_persistence): nothing written."""

    ok: Annotated[Literal[True], "Success (the pause is not an error)."]
    result: Annotated[Literal["skipped"], "Outcome."]
    persisted: Annotated[Literal[False], "Nothing was written."]
    reason: Annotated[str, "That persistence is paused, and until when."]


StoreResult = StoreStored | StoreSkipped | StorePaused


# -- recall --------------------------------------------------------------------------------------------


class RecallSearch(TypedDict):
    """Which channels a recall used."""

    vector: Annotated[bool, "The query was embedded and the vector channel ran."]
    keyword: Annotated[str, "Keyword method of the trigram memories channel: 'fts', 'like' or 'none'."]
    keyword_channels: Annotated[
        dict[str, str],
        "Each keyword channel that ran (fts_memories, fts_words, fts_episodes) → 'fts', 'like' or 'none'.",
    ]
    vector_weight: NotRequired[
        Annotated[
            float,
            "The vector channel's weight in fusion when the active model does not read all of the query "
            "(the share of its letters in scripts the model reads; 0: keyword-only). Absent at full weight.",
        ]
    ]
    language: NotRequired[Annotated[str, "Why vector_weight is below 1, in one sentence."]]
    keyword_weight: NotRequired[
        Annotated[
            float,
            "The memory keyword channels' weight in fusion when calibration found this agent's memories "
            "long (a quarter over 600 characters), or the question counts (CPERSONA_COUNT_KEYWORD_WEIGHT). "
            "Absent at full weight.",
        ]
    ]


class Advisory(TypedDict):
    """Present on recall while search is degraded (docs/models.md#embedding-health-and-the-recall-advisory)."""

    degraded: Annotated[bool, "Always true when present."]
    severity: Annotated[str, "'info' (loading, embeddings off) or 'critical' (fault)."]
    state: Annotated[str, "Health state: unknown, hint or fault."]
    kind: Annotated[str, "Machine-readable cause."]
    reason: Annotated[str, "What is wrong."]
    full: Annotated[bool, "True on the first degraded recall of an outage (evidence and runbook included)."]
    evidence: NotRequired[Annotated[str, "What was observed (full advisories)."]]
    runbook: NotRequired[Annotated[str, "How to fix it (full advisories)."]]
    reminder: NotRequired[Annotated[str, "Short text on later recalls of the same outage."]]


class RecallGate(TypedDict):
    """Which quality gate was in force for a recall, and its verdict (docs/quality-gate.md)."""

    kind: Annotated[
        str,
        "'calibrated' (this agent's corpus), 'heuristic' (uncalibrated or stale: a fixed low "
        "floor) or 'off' (disabled, keyword-only recall, empty query, limit 0).",
    ]
    level: Annotated[
        str | None,
        "Precision level: strict, balanced or lenient (null when no gate applies: disabled, empty query, "
        "limit 0; a keyword-only recall, kind 'off', still names the agent's level).",
    ]
    beta: Annotated[float | None, "Effective β (null exactly when level is)."]
    threshold: Annotated[
        float | None, "The cut on the scale of keyed_on: evidence, top cosine or confidence (null when off)."
    ]
    top_cosine: Annotated[float | None, "The query's best cosine in scope (null without a query vector)."]
    evidence: NotRequired[
        Annotated[
            float,
            "keyed_on 'evidence': the best candidate's cosine + its coverage of the query's words "
            "(the corpus's frequent names left out), at least top_cosine.",
        ]
    ]
    coverage: NotRequired[
        Annotated[
            float, "keyed_on 'evidence': that candidate's idf-weighted share of the query's words (0..1)."
        ]
    ]
    passed: Annotated[bool, "The query passed (false: only exact lexical matches or fallbacks were kept)."]
    keyed_on: Annotated[
        str | None,
        "'evidence' (per query, calibrated), 'top_cosine' (per query: heuristic, or a calibration from "
        "before scoring version 2) or 'confidence' (per row); null when off.",
    ]
    reason: NotRequired[Annotated[str, "Why the gate is off or heuristic."]]
    stale: NotRequired[
        Annotated[bool, "The stored calibration is for another model/dimension/scoring version."]
    ]
    cut: NotRequired[Annotated[int, "Candidate rows the gate removed."]]
    autocut: NotRequired[Annotated[int, "Rows removed by largest-gap autocut (similarity-scale lists only)."]]


class TraceChannel(TypedDict):
    """One retriever's hits in a recall trace."""

    method: Annotated[str, "'vector', 'fts', 'like' or 'none'."]
    total: Annotated[int, "Hits the channel returned."]
    hits: Annotated[list[dict[str, object]], "Up to 30 {ref, score} best first (score: the raw value)."]
    content: NotRequired[
        Annotated[
            str, "vector only: a question that counts also searched by its content, the frame taken out."
        ]
    ]


class TraceFusion(TypedDict):
    """The fused candidates in a recall trace."""

    mode: Annotated[str, "rrf, rsf or cascade."]
    rrf_k: NotRequired[Annotated[int, "k of rrf."]]
    total: Annotated[int, "Candidates after fusion."]
    candidates: Annotated[
        list[dict[str, object]], "Up to 30 {ref, score, channels: {channel: raw score}} best first."
    ]


class TraceRefs(TypedDict):
    """Candidates dropped before scoring (gone, out of scope, excluded, source filter)."""

    total: Annotated[int, "How many."]
    refs: Annotated[list[str], "Up to 30 refs."]


class TraceScored(TypedDict):
    """Candidates after penalties (and confidence), before the gate."""

    total: Annotated[int, "How many."]
    rows: Annotated[list[dict[str, object]], "Up to 30 {ref, signal, score, factors} best first."]


class RecallTrace(TypedDict):
    """recall(trace=true): each stage's candidates and scores (docs/retrieval.md "Trace")."""

    depth: Annotated[int, "Rows each retriever was asked for."]
    channels: Annotated[
        dict[str, TraceChannel], "Per retriever that ran: vector, fts_memories, fts_words, fts_episodes."
    ]
    fusion: Annotated[TraceFusion, "The fused candidates."]
    filtered_out: Annotated[TraceRefs, "Fused but dropped before scoring."]
    scored: Annotated[TraceScored, "After penalties, before the gate."]
    gate: Annotated[dict[str, object], "The response's gate plus kept (rows it let through) and cut_refs."]
    returned: Annotated[list[str], "Refs returned, best first (after limit)."]
    time_cue: NotRequired[Annotated[dict[str, object], "The time cue that acted, as in the response."]]


class RecallTimeCue(TypedDict):
    """The time cue that acted on a recall: the caller's time_cue, or a date phrase read from the query."""

    start: Annotated[str | None, "Period start, ISO-8601 UTC (null: open)."]
    end: Annotated[str | None, "Period end, exclusive, ISO-8601 UTC (null: open)."]
    certainty: Annotated[Literal["sure", "likely", "vague"], "sure filters; likely / vague boost."]
    origin: Annotated[Literal["caller", "query"], "Your time_cue, or a phrase found in the query."]
    phrase: NotRequired[Annotated[str, "The phrase read (a caller's phrase, or the one found in the query)."]]
    boosted: NotRequired[Annotated[int, "Rows the boost lifted (likely / vague)."]]
    kept_best: NotRequired[
        Annotated[str, "Ref kept in the answer as the plain ranking's best, which the boost had pushed out."]
    ]


class RecallResult(TypedDict):
    """recall: rows ordered worst to best; the LAST element is the best match."""

    ok: Success
    results: Annotated[list[RecallRow], "Memory, episode and profile rows, worst to best."]
    count: Annotated[int, "len(results)."]
    mode: Annotated[str, "Fusion mode (CPERSONA_RECALL_MODE)."]
    search: NotRequired[Annotated[RecallSearch, "Channels used (absent when limit is 0)."]]
    gate: Annotated[RecallGate, "Which quality gate was in force and whether the query passed."]
    advisory: NotRequired[Annotated[Advisory, "Present while search is degraded."]]
    storage: NotRequired[
        Annotated[
            str, "Present when the database could not record recall statistics (read_only / storage_full)."
        ]
    ]
    explanation: NotRequired[
        Annotated[
            str,
            "An empty or shortened answer: one sentence saying which gate cut it, its threshold, the best "
            "candidate's similarity and what to try.",
        ]
    ]
    notice: NotRequired[AgentNotice]
    time_cue: NotRequired[
        Annotated[RecallTimeCue, "The time cue that acted (a time_cue or a date in the query)."]
    ]
    trace: NotRequired[Annotated[RecallTrace, "With trace=true: each stage's candidates and scores."]]


class RecalledMemory(MemoryRow):
    """A memory row in recall_with_context output."""

    origin: Annotated[Literal["memory"], "Came from recall."]


class RecalledEpisode(EpisodeRow):
    """An episode row in recall_with_context output."""

    origin: Annotated[Literal["memory"], "Came from recall."]


class RecalledProfile(ProfileRow):
    """A profile row in recall_with_context output."""

    origin: Annotated[Literal["memory"], "Came from recall."]


class ContextEntry(TypedDict):
    """One of the caller's own user/assistant entries in recall_with_context output."""

    origin: Annotated[Literal["context"], "Came from external_context."]
    role: Annotated[str, "'user' or 'assistant'."]
    content: Annotated[str, "The entry's text."]
    name: NotRequired[Annotated[str, "As given."]]
    user_id: NotRequired[Annotated[str, "As given."]]
    timestamp: NotRequired[Annotated[str, "As given, normalised to UTC ISO-8601."]]


MergedItem = RecalledMemory | RecalledEpisode | RecalledProfile | ContextEntry


class RecallWithContextResult(TypedDict):
    """recall_with_context: recalled rows and conversation entries, deduplicated, oldest first."""

    ok: Success
    items: Annotated[list[MergedItem], "Chronological; undated entries last, in the order given."]
    count: ItemCount
    mode: Annotated[str, "Fusion mode (CPERSONA_RECALL_MODE)."]
    context_filter_only: NotRequired[Annotated[list[str], "Roles that only filtered (not merged)."]]
    gate: Annotated[RecallGate, "The recall's quality gate (as in recall)."]
    advisory: NotRequired[Annotated[Advisory, "Present while search is degraded."]]
    explanation: NotRequired[Annotated[str, "As in recall: why the answer is empty or shortened."]]
    notice: NotRequired[AgentNotice]
    time_cue: NotRequired[Annotated[RecallTimeCue, "As in recall."]]


class GetContentsResult(TypedDict):
    """get_contents: full rows in request order (the MCP layer adds the batch budget: deferred)."""

    ok: Success
    items: Annotated[list[StoredRow], "Found rows, in request order."]
    missing: Annotated[list[str], "Refs that do not exist or belong to another agent."]


class GetHistoryResult(TypedDict):
    """get_history: the supersede chain a memory belongs to, oldest to newest."""

    ok: Annotated[Literal[True], "Success."]
    ref: Annotated[str, "The memory asked about."]
    current: Annotated[str, "'mem:<id>' of the chain's current (unsuperseded) memory."]
    history: Annotated[
        list[MemoryRow],
        "Every memory of the chain, oldest to newest (a row before the one that superseded it); "
        "each superseded one with superseded_by and superseded_at, the current one last.",
    ]
    count: Annotated[int, "len(history)."]
    truncated: NotRequired[
        Annotated[Literal[True], "Present when the chain is longer than the history's bound (1,000 rows)."]
    ]
    cut_at: NotRequired[
        Annotated[
            list[str],
            "With truncated: 'mem:<id>' of listed rows next to which rows were left out (at most 20).",
        ]
    ]


# -- writes ----------------------------------------------------------------------------------------------


class ArchiveEpisodeResult(TypedDict):
    """archive_episode: the new episode."""

    ok: Success
    id: Annotated[int, "The new episode's id."]
    ref: Annotated[str, "'ep:<id>'."]
    embedded: Annotated[bool, "A vector was computed now."]
    start_time: Annotated[str | None, "Earliest history timestamp."]
    end_time: Annotated[str | None, "Latest history timestamp."]
    truncated: NotRequired[Annotated[bool, "The summary was cut to CPERSONA_MAX_CONTENT_LENGTH."]]
    redacted: NotRequired[Redacted]


class UpdateMemoryResult(TypedDict):
    """update_memory: the memory now holds the new text."""

    ok: Success
    id: Annotated[int, "The memory's id."]
    ref: Annotated[str, "'mem:<id>'."]
    embedded: Annotated[bool, "The new text was embedded now (without content: the row has a vector)."]
    truncated: NotRequired[Annotated[bool, "The content was cut to CPERSONA_MAX_CONTENT_LENGTH."]]
    supersedes: NotRequired[Annotated[list[str], "The memories this one now supersedes (with supersedes)."]]
    redacted: NotRequired[Redacted]


class GetProfileResult(TypedDict):
    """get_profile."""

    ok: Success
    agent_id: Annotated[str, "The agent asked about."]
    profile: Annotated[str | None, "The profile text; null when none is stored."]
    updated_at: Annotated[str | None, "Last replaced; null when none is stored."]


class UpdateProfileResult(TypedDict):
    """update_profile: the profile was replaced."""

    ok: Success
    agent_id: Annotated[str, "The agent."]
    updated_at: Annotated[str, "Now (UTC ISO-8601)."]
    length: Annotated[int, "Characters stored."]
    truncated: NotRequired[Annotated[bool, "The text was cut to CPERSONA_MAX_PROFILE_LENGTH."]]
    redacted: NotRequired[Redacted]


# -- browsing --------------------------------------------------------------------------------------------


class ListMemoriesResult(TypedDict):
    """list_memories: newest first."""

    ok: Success
    items: Annotated[list[MemoryRow], "Up to limit rows."]
    count: ItemCount
    total: Annotated[int, "Rows in the scope."]
    notice: NotRequired[AgentNotice]


class ListEpisodesResult(TypedDict):
    """list_episodes: newest first."""

    ok: Success
    items: Annotated[list[EpisodeRow], "Up to limit rows."]
    count: ItemCount
    total: Annotated[int, "Rows in the scope."]
    notice: NotRequired[AgentNotice]


class QueueStatus(TypedDict):
    """The background task queue."""

    depth: Annotated[int, "Tasks waiting."]
    retrying: Annotated[int, "Tasks that failed at least once."]
    oldest_task: Annotated[str | None, "created_at of the oldest task."]
    by_kind: Annotated[dict[str, int], "Depth per task kind."]
    last_error: Annotated[str | None, "The newest recorded task error."]


class QueueStatusResult(QueueStatus):
    """get_queue_status: the queue plus the worker's view."""

    ok: Success
    model_ready: Annotated[bool, "The embedding model is loaded."]
    processed: Annotated[int, "Tasks this process has handled."]


# -- protection and deletion ---------------------------------------------------------------------------


class LockResult(TypedDict):
    """lock_memory / unlock_memory."""

    ok: Success
    id: Annotated[int, "The memory's id."]
    ref: Annotated[str, "'mem:<id>'."]
    locked: Annotated[bool, "The new lock state."]


class RetireResult(TypedDict):
    """retire_memory / unretire_memory."""

    ok: Success
    id: Annotated[int, "The memory's id."]
    ref: Annotated[str, "'mem:<id>'."]
    retired: Annotated[bool, "The new state: true, out of recall (kept for get_history); false, back in it."]
    was_retired: Annotated[
        bool, "The state before the call (retiring a retired memory keeps its first time)."
    ]
    retired_at: NotRequired[Annotated[str, "When it was retired (UTC ISO-8601), with retired: true."]]
    retire_reason: NotRequired[Annotated[str | None, "The reason given, with retired: true."]]


class DeleteResult(TypedDict):
    """delete_memory / delete_episode."""

    ok: Success
    id: Annotated[int, "The deleted row's id."]
    ref: Annotated[str, "'mem:<id>' or 'ep:<id>'."]
    deleted: Annotated[Literal[True], "Always true."]


class TableCounts(TypedDict):
    """Rows per table."""

    memories: Annotated[int, "Memories."]
    episodes: Annotated[int, "Episodes."]
    profiles: Annotated[int, "Profiles."]


class DeleteAgentDataResult(TypedDict):
    """delete_agent_data: everything of one agent is gone."""

    ok: Success
    agent_id: Annotated[str, "The agent erased."]
    deleted: Annotated[TableCounts, "Rows deleted per table."]
    calibration_discarded: Annotated[bool, "The agent had a calibration or precision setting, now removed."]
