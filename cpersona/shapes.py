"""Typed result shapes of the Python API (``cpersona.Memory``): one TypedDict per result and row kind.

These are the source of truth for docs/api-shapes.md: its tables are generated
from this module (``python scripts/gen_api_shapes.py``) and a test fails when
the committed file differs. Each key carries a one-line meaning in its
``Annotated`` metadata; ``NotRequired`` marks keys present only sometimes.

The MCP tools return the same dicts after response shaping (previews, budgets),
which adds keys such as ``content_truncated`` or ``deferred``; docs/tools.md
describes those.
"""

# No ``from __future__ import annotations`` here: with string annotations Python 3.11 cannot see
# NotRequired at runtime, and the doc generator reads __optional_keys__.
from typing import Annotated, Any, Literal, NotRequired, TypedDict

# -- rows -------------------------------------------------------------------------------------------


class MatchReason(TypedDict):
    """Why a scored row was returned (only rows recall ranked carry it)."""

    signal: Annotated[
        str, "What ranking keyed on (priority confidence > rsf > cosine > rrf): confidence, rsf, cosine (a list "
        "ranked by cosine alone), rrf or cascade."
    ]
    score: Annotated[float, "The final score rows are ordered by (after penalties), rounded to 6 places."]
    confidence: NotRequired[Annotated[float, "Confidence before penalties (CPERSONA_CONFIDENCE_ENABLED)."]]
    cosine: NotRequired[Annotated[float, "Cosine similarity to the query (the vector channel found the row)."]]
    rrf: NotRequired[Annotated[float, "Reciprocal-rank-fusion score before penalties."]]
    rsf: NotRequired[Annotated[float, "Relative-score-fusion score before penalties."]]
    gate: NotRequired[Annotated[str, "'exact_match': the row holds an identifier-like query token or the whole "
                                     "query verbatim, so the gate never cuts it."]]


class MemoryRow(TypedDict):
    """One stored memory."""

    ref: Annotated[str, "'mem:<id>', the handle get_contents takes."]
    type: Annotated[Literal["memory"], "Row kind."]
    id: Annotated[int, "Row id."]
    agent_id: Annotated[str, "Owner agent."]
    project_id: Annotated[str, "Project scope ('' = global pool)."]
    channel: Annotated[str, "Channel ('' = none)."]
    msg_id: Annotated[str, "The caller's message id ('' when none was given)."]
    content: Annotated[str, "The full text (the API never trims)."]
    source: Annotated[dict[str, Any] | None, "Who said it ({type, id, name}), as stored."]
    metadata: Annotated[dict[str, Any] | None, "Free-form JSON object, as stored."]
    timestamp: Annotated[str, "When it happened (UTC ISO-8601)."]
    created_at: Annotated[str, "When it was stored (UTC ISO-8601)."]
    locked: Annotated[bool, "Protected from update and delete."]
    recall_count: Annotated[int, "How often recall returned it."]
    last_recalled_at: Annotated[str | None, "When recall last returned it."]
    embedded: Annotated[bool, "A vector is stored for it."]
    embedding_model: Annotated[str | None, "The model the stored vector came from."]
    match_reason: NotRequired[Annotated[MatchReason, "On rows recall scored."]]
    gate_fallback: NotRequired[Annotated[Literal[True], "Below the gate, returned as a lexical match because "
                                         "every row was below it (only with confidence scoring on)."]]


class EpisodeRow(TypedDict):
    """One archived session summary."""

    ref: Annotated[str, "'ep:<id>', the handle get_contents takes."]
    type: Annotated[Literal["episode"], "Row kind."]
    id: Annotated[int, "Row id."]
    agent_id: Annotated[str, "Owner agent."]
    project_id: Annotated[str, "Project scope ('' = global pool)."]
    channel: Annotated[str, "Channel ('' = none)."]
    content: Annotated[str, "The summary (same as summary, so every row has content)."]
    summary: Annotated[str, "The summary text."]
    keywords: Annotated[list[str], "Search keywords."]
    start_time: Annotated[str | None, "Earliest history timestamp."]
    end_time: Annotated[str | None, "Latest history timestamp."]
    resolved: Annotated[bool, "The session's issue was resolved."]
    created_at: Annotated[str, "When it was archived (UTC ISO-8601)."]
    embedded: Annotated[bool, "A vector is stored for it."]
    embedding_model: Annotated[str | None, "The model the stored vector came from."]
    match_reason: NotRequired[Annotated[MatchReason, "On rows recall scored."]]
    gate_fallback: NotRequired[Annotated[Literal[True], "Below the gate, returned as a lexical match because "
                                         "every row was below it (only with confidence scoring on)."]]


class ProfileRow(TypedDict):
    """A profile as recall injects it (scope pool of at least 50 rows); never scored."""

    type: Annotated[Literal["profile"], "Row kind."]
    agent_id: Annotated[str, "Owner agent."]
    project_id: Annotated[str, "Profile scope ('' = global)."]
    user_id: Annotated[str, "Whose profile ('' = default)."]
    content: Annotated[str, "The profile text."]
    updated_at: Annotated[str, "Last replaced (UTC ISO-8601)."]


RecallRow = MemoryRow | EpisodeRow | ProfileRow
StoredRow = MemoryRow | EpisodeRow


# -- store -------------------------------------------------------------------------------------------


class StoreStored(TypedDict):
    """store: a new memory was written."""

    ok: Annotated[Literal[True], "Success."]
    result: Annotated[Literal["stored"], "Outcome."]
    id: Annotated[int, "The new row's id."]
    ref: Annotated[str, "'mem:<id>'."]
    embedded: Annotated[bool, "A vector was computed now (false: keyword-only until back-fill)."]
    truncated: NotRequired[Annotated[bool, "The content was cut to CPERSONA_MAX_CONTENT_LENGTH."]]
    original_length: NotRequired[Annotated[int, "Characters before the cut (with truncated)."]]


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


class Advisory(TypedDict):
    """Present on recall while search is degraded (SPEC §7)."""

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
    """Which quality gate was in force for a recall, and its verdict (docs/retrieval.md)."""

    kind: Annotated[str, "'calibrated' (this agent's corpus), 'heuristic' (uncalibrated or stale: a fixed low "
                         "floor) or 'off' (disabled, keyword-only recall, empty query, limit 0)."]
    level: Annotated[str | None, "Precision level: strict, balanced or lenient (null when off)."]
    beta: Annotated[float | None, "Effective β (null when off)."]
    threshold: Annotated[float | None, "The cut on the cosine scale (null when off)."]
    top_cosine: Annotated[float | None, "The query's best cosine in scope (null without a query vector)."]
    passed: Annotated[bool, "The query passed (false: only exact lexical matches or fallbacks were kept)."]
    keyed_on: Annotated[str | None, "'top_cosine' (per query) or 'confidence' (per row); null when off."]
    reason: NotRequired[Annotated[str, "Why the gate is off or heuristic."]]
    stale: NotRequired[Annotated[bool, "The stored calibration is for another model/dimension/scoring version."]]
    cut: NotRequired[Annotated[int, "Candidate rows the gate removed."]]
    autocut: NotRequired[Annotated[int, "Rows removed by largest-gap autocut (similarity-scale lists only)."]]


class RecallResult(TypedDict):
    """recall: rows ordered worst to best; the LAST element is the best match."""

    ok: Annotated[Literal[True], "Success."]
    results: Annotated[list[RecallRow], "Memory, episode and profile rows, worst to best."]
    count: Annotated[int, "len(results)."]
    mode: Annotated[str, "Fusion mode (CPERSONA_RECALL_MODE)."]
    search: NotRequired[Annotated[RecallSearch, "Channels used (absent when limit is 0)."]]
    gate: Annotated[RecallGate, "Which quality gate was in force and whether the query passed."]
    advisory: NotRequired[Annotated[Advisory, "Present while search is degraded."]]
    storage: NotRequired[
        Annotated[str, "Present when the database could not record recall statistics (read_only / storage_full)."]
    ]


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

    ok: Annotated[Literal[True], "Success."]
    items: Annotated[list[MergedItem], "Chronological; undated entries last, in the order given."]
    count: Annotated[int, "len(items)."]
    mode: Annotated[str, "Fusion mode (CPERSONA_RECALL_MODE)."]
    context_filter_only: NotRequired[Annotated[list[str], "Roles that only filtered (not merged)."]]
    gate: Annotated[RecallGate, "The recall's quality gate (as in recall)."]
    advisory: NotRequired[Annotated[Advisory, "Present while search is degraded."]]


class GetContentsResult(TypedDict):
    """get_contents: full rows in request order (the MCP layer adds the batch budget: deferred)."""

    ok: Annotated[Literal[True], "Success."]
    items: Annotated[list[StoredRow], "Found rows, in request order."]
    missing: Annotated[list[str], "Refs that do not exist or belong to another agent."]


# -- writes ----------------------------------------------------------------------------------------------


class ArchiveEpisodeResult(TypedDict):
    """archive_episode: the new episode."""

    ok: Annotated[Literal[True], "Success."]
    id: Annotated[int, "The new episode's id."]
    ref: Annotated[str, "'ep:<id>'."]
    embedded: Annotated[bool, "A vector was computed now."]
    start_time: Annotated[str | None, "Earliest history timestamp."]
    end_time: Annotated[str | None, "Latest history timestamp."]
    truncated: NotRequired[Annotated[bool, "The summary was cut to CPERSONA_MAX_CONTENT_LENGTH."]]


class UpdateMemoryResult(TypedDict):
    """update_memory: the memory now holds the new text."""

    ok: Annotated[Literal[True], "Success."]
    id: Annotated[int, "The memory's id."]
    ref: Annotated[str, "'mem:<id>'."]
    embedded: Annotated[bool, "The new text was embedded now."]
    truncated: NotRequired[Annotated[bool, "The content was cut to CPERSONA_MAX_CONTENT_LENGTH."]]


class GetProfileResult(TypedDict):
    """get_profile."""

    ok: Annotated[Literal[True], "Success."]
    agent_id: Annotated[str, "The agent asked about."]
    profile: Annotated[str | None, "The profile text; null when none is stored."]
    updated_at: Annotated[str | None, "Last replaced; null when none is stored."]


class UpdateProfileResult(TypedDict):
    """update_profile: the profile was replaced."""

    ok: Annotated[Literal[True], "Success."]
    agent_id: Annotated[str, "The agent."]
    updated_at: Annotated[str, "Now (UTC ISO-8601)."]
    length: Annotated[int, "Characters stored."]
    truncated: NotRequired[Annotated[bool, "The text was cut to CPERSONA_MAX_PROFILE_LENGTH."]]


# -- browsing --------------------------------------------------------------------------------------------


class ListMemoriesResult(TypedDict):
    """list_memories: newest first."""

    ok: Annotated[Literal[True], "Success."]
    items: Annotated[list[MemoryRow], "Up to limit rows."]
    count: Annotated[int, "len(items)."]
    total: Annotated[int, "Rows in the scope."]


class ListEpisodesResult(TypedDict):
    """list_episodes: newest first."""

    ok: Annotated[Literal[True], "Success."]
    items: Annotated[list[EpisodeRow], "Up to limit rows."]
    count: Annotated[int, "len(items)."]
    total: Annotated[int, "Rows in the scope."]


class QueueStatus(TypedDict):
    """The background task queue."""

    depth: Annotated[int, "Tasks waiting."]
    retrying: Annotated[int, "Tasks that failed at least once."]
    oldest_task: Annotated[str | None, "created_at of the oldest task."]
    by_kind: Annotated[dict[str, int], "Depth per task kind."]
    last_error: Annotated[str | None, "The newest recorded task error."]


class QueueStatusResult(QueueStatus):
    """get_queue_status: the queue plus the worker's view."""

    ok: Annotated[Literal[True], "Success."]
    model_ready: Annotated[bool, "The embedding model is loaded."]
    processed: Annotated[int, "Tasks this process has handled."]


# -- protection and deletion ---------------------------------------------------------------------------


class LockResult(TypedDict):
    """lock_memory / unlock_memory."""

    ok: Annotated[Literal[True], "Success."]
    id: Annotated[int, "The memory's id."]
    ref: Annotated[str, "'mem:<id>'."]
    locked: Annotated[bool, "The new lock state."]


class DeleteResult(TypedDict):
    """delete_memory / delete_episode."""

    ok: Annotated[Literal[True], "Success."]
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

    ok: Annotated[Literal[True], "Success."]
    agent_id: Annotated[str, "The agent erased."]
    deleted: Annotated[TableCounts, "Rows deleted per table."]
    calibration_discarded: Annotated[bool, "The agent had a calibration or precision setting, now removed."]


# -- health and administration -------------------------------------------------------------------------


class ModelSharing(TypedDict):
    """This process's part in sharing one loaded model between processes (onnx mode, sharing on)."""

    role: Annotated[str, "host (holds the model and serves it), client (embeds through the host) or none."]
    host_pid: Annotated[int | None, "Process id of the model host (null before the first load)."]
    socket: Annotated[str, "The host's Unix socket."]
    takeovers: Annotated[int, "Times this process took the model over from a host that went away."]


class EmbeddingStatus(TypedDict):
    """embedding_status: the degradation state (no ok key)."""

    state: Annotated[str, "unknown, healthy, hint or fault."]
    mode: Annotated[str, "CPERSONA_EMBEDDING_MODE: onnx, http or none."]
    kind: NotRequired[Annotated[str, "Cause (not healthy)."]]
    reason: NotRequired[Annotated[str, "What is wrong (not healthy)."]]
    evidence: NotRequired[Annotated[str, "What was observed (not healthy)."]]
    runbook: NotRequired[Annotated[str, "How to fix it (not healthy)."]]
    model_id: NotRequired[Annotated[str, "The loaded model (healthy)."]]
    dimension: NotRequired[Annotated[int, "Its vector dimension (healthy)."]]
    sharing: NotRequired[Annotated[ModelSharing, "Model sharing between processes (onnx with sharing on)."]]


class VectorWindow(TypedDict):
    """How much of the corpus the vector scan window covers."""

    size: Annotated[int | None, "CPERSONA_MAX_MEMORIES: rows scanned per table and scope (null: the whole corpus)."]
    rows_outside: Annotated[dict[str, dict[str, int]], "Per agent and table, vector rows past the window."]


class StatsResult(TypedDict):
    """stats: counts, file, embedding and queue state."""

    ok: Annotated[Literal[True], "Success."]
    db_path: Annotated[str, "The database file."]
    db_bytes: Annotated[int, "Size of the file plus its WAL/SHM side files."]
    counts: Annotated[TableCounts, "Rows per table."]
    memories_with_active_vectors: Annotated[int, "Memories with a vector from the active model."]
    vector_window: Annotated[VectorWindow, "Vector window coverage."]
    recall_mode: Annotated[str, "CPERSONA_RECALL_MODE."]
    embedding: Annotated[EmbeddingStatus, "As embedding_status."]
    queue: Annotated[QueueStatus, "The background queue."]


class ReembedDone(TypedDict):
    """reembed: stale vectors cleared, queue drained."""

    ok: Annotated[Literal[True], "Success."]
    queued: Annotated[int, "Rows queued for embedding."]
    processed: Annotated[int, "Tasks handled in this call."]


class ReembedFailed(TypedDict):
    """reembed: the model could not be loaded; rows stay queued."""

    ok: Annotated[Literal[False], "Failure."]
    error: Annotated[str, "Why the model did not load."]
    queued: Annotated[int, "Rows queued for embedding."]


ReembedResult = ReembedDone | ReembedFailed


# -- health ---------------------------------------------------------------------------------------------


class HealthFinding(TypedDict):
    """One issue a health check found (docs/health.md)."""

    check: Annotated[str, "The check's registry name."]
    severity: Annotated[Literal["critical", "warn", "info"], "info never degrades the verdict."]
    message: Annotated[str, "What is wrong, for a person."]
    count: NotRequired[Annotated[int, "How many rows are affected."]]
    refs: NotRequired[Annotated[list[str], "Some affected rows ('mem:<id>', 'ep:<id>')."]]
    fix: NotRequired[Annotated[str, "What fix=true does, or the command to run."]]


class CheckHealthResult(TypedDict):
    """check_health: the verdict, findings and repairs of the selected checks."""

    ok: Annotated[Literal[True], "Success (an unhealthy store is a result, not an error)."]
    status: Annotated[Literal["healthy", "degraded", "unhealthy"], "Worst severity found (info never degrades)."]
    agent_id: Annotated[str | None, "The agent the row checks were scoped to (None: every agent)."]
    fix: Annotated[bool, "Whether repairs ran."]
    checks_run: Annotated[list[str], "The checks that ran, in registry order."]
    counts: Annotated[dict[str, int], "Findings per severity."]
    findings: Annotated[list[HealthFinding], "Every finding."]
    checks: Annotated[dict[str, Any], "Per check: status, findings and the check's own details."]
    repairs: Annotated[dict[str, Any], "Per check: what fix=true repaired and what remains."]
    max_repairs_per_check: Annotated[int, "The bound on repairs per check per run."]
    stats: Annotated[dict[str, Any], "Rows per agent/project/channel, database and WAL size, queue depth."]
    fix_downgraded: NotRequired[Annotated[Literal[True], "fix=true ran report-only (persistence is paused)."]]
    note: NotRequired[Annotated[str, "Why fix was downgraded."]]


class DeepCheckResult(TypedDict):
    """deep_check: the semantic review of one agent (every deep check reports only)."""

    ok: Annotated[Literal[True], "Success."]
    status: Annotated[Literal["healthy", "degraded", "unhealthy"], "Worst severity found."]
    agent_id: Annotated[str, "The agent reviewed."]
    fix: Annotated[bool, "Whether fix was requested and allowed (deep checks never change rows)."]
    fixed: Annotated[int, "Always 0: deep checks report only."]
    checks_run: Annotated[list[str], "The checks that ran."]
    counts: Annotated[dict[str, int], "Findings per severity."]
    findings: Annotated[list[HealthFinding], "Every finding (near-duplicates carry both refs)."]
    checks: Annotated[dict[str, Any], "Per check: status, findings and details."]
    note: NotRequired[Annotated[str, "Why fix was downgraded (persistence paused)."]]


# -- portability ------------------------------------------------------------------------------------------


class ExportResult(TypedDict):
    """export_memories: the JSONL file written (format: docs/tools.md)."""

    ok: Annotated[Literal[True], "Success."]
    path: Annotated[str, "The file written (atomically)."]
    bytes: Annotated[int, "Its size."]
    agent_id: Annotated[str | None, "The agent exported (None: every agent, CLI only)."]
    include_embeddings: Annotated[bool, "Whether vectors were written (base64 float32 with model id)."]
    counts: Annotated[dict[str, int], "Records written per type."]


class ImportResult(TypedDict):
    """import_memories: what was (or, with dry_run, would be) imported."""

    ok: Annotated[Literal[True], "Success (bad lines are reported, not fatal)."]
    dry_run: Annotated[bool, "Nothing was written."]
    path: Annotated[str, "The file read."]
    target_agent_id: Annotated[str | None, "The agent rows were rewritten to, if any."]
    header: Annotated[dict[str, Any], "The file's header fields."]
    lines: Annotated[int, "Lines read."]
    counts: Annotated[dict[str, dict[str, int]], "Per type: inserted / duplicate / ... counts."]
    truncated: Annotated[int, "Records whose text was cut to the caps."]
    queued_for_embedding: Annotated[int, "Rows queued for back-fill."]
    error_count: Annotated[int, "Bad lines (skipped)."]
    errors: Annotated[list[dict[str, Any]], "The first bad lines: line number and why."]


class MergeResult(TypedDict):
    """merge_memories: copy or move one agent's rows into another, in one transaction."""

    ok: Annotated[Literal[True], "Success."]
    dry_run: Annotated[bool, "The transaction was rolled back."]
    source_agent_id: Annotated[str, "Rows came from here."]
    target_agent_id: Annotated[str, "Rows went here."]
    mode: Annotated[Literal["copy", "move"], "move empties the source agent."]
    strategy: Annotated[Literal["skip"], "Duplicates in the target are skipped."]
    counts: Annotated[dict[str, dict[str, int]], "Per table: copied / moved / skipped."]


class MigrateChannelAxisResult(TypedDict):
    """migrate_channel_axis: rows moved off bridge channels (docs/decisions.md "Portability")."""

    ok: Annotated[Literal[True], "Success."]
    dry_run: Annotated[bool, "Nothing was changed."]
    agent_id: Annotated[str | None, "The agent repaired (None: every agent)."]
    bridge_channels: Annotated[list[str], "Channel names treated as bridges."]
    scanned: Annotated[int, "Rows on bridge channels."]
    moved: Annotated[int, "Rows moved to the channel named in their session id."]
    globalized: Annotated[int, "Unrecoverable rows moved to channel '' (globalize_unrecoverable)."]
    unrecoverable: Annotated[int, "Rows whose channel could not be recovered."]
    collisions: Annotated[int, "Moves refused because the target already holds the row."]
    locked: Annotated[int, "Locked rows left alone."]
    targets: Annotated[dict[str, int], "Rows per target channel."]
    examples: Annotated[list[dict[str, Any]], "A few moves, for review."]
    note: NotRequired[Annotated[str, "Why dry_run was forced (persistence paused)."]]


# -- browsing (cpersona ui) ------------------------------------------------------------------------------


class AgentAxis(TypedDict):
    """One (project, channel) pair an agent has rows on."""

    project_id: Annotated[str, "Project ('' = global pool)."]
    channel: Annotated[str, "Channel ('' = none)."]
    memories: Annotated[int, "Memories on this pair."]
    episodes: Annotated[int, "Episodes on this pair."]


class AgentSummary(TypedDict):
    """One agent and what it holds."""

    agent_id: Annotated[str, "The agent."]
    memories: Annotated[int, "Its memories."]
    episodes: Annotated[int, "Its episodes."]
    embedded_memories: Annotated[int, "Memories holding a vector (any model)."]
    locked_memories: Annotated[int, "Locked memories."]
    profiles: Annotated[int, "Profiles (per project and user)."]
    axes: Annotated[list[AgentAxis], "Rows per (project, channel), sorted."]


class ListAgentsResult(TypedDict):
    """list_agents: every agent with counts, sorted by id."""

    ok: Annotated[Literal[True], "Success."]
    agents: Annotated[list[AgentSummary], "One entry per agent."]
    count: Annotated[int, "len(agents)."]


class BrowseMemoriesResult(TypedDict):
    """browse_memories: one page of memories newest first (exact axis, lock and vector filters)."""

    ok: Annotated[Literal[True], "Success."]
    items: Annotated[list[MemoryRow], "This page, newest first."]
    count: Annotated[int, "len(items)."]
    total: Annotated[int, "Rows matching the filters."]
    offset: Annotated[int, "Where this page starts."]


class BrowseEpisodesResult(TypedDict):
    """browse_episodes: one page of episodes newest first."""

    ok: Annotated[Literal[True], "Success."]
    items: Annotated[list[EpisodeRow], "This page, newest first."]
    count: Annotated[int, "len(items)."]
    total: Annotated[int, "Rows matching the filters."]
    offset: Annotated[int, "Where this page starts."]


class StoredProfile(TypedDict):
    """A stored profile as list_profiles returns it."""

    type: Annotated[Literal["profile"], "Row kind."]
    agent_id: Annotated[str, "Owner agent."]
    project_id: Annotated[str, "Profile scope ('' = global)."]
    user_id: Annotated[str, "Whose profile ('' = default)."]
    content: Annotated[str, "The profile text."]
    updated_at: Annotated[str, "Last update (UTC ISO-8601)."]


class ListProfilesResult(TypedDict):
    """list_profiles: every profile of one agent, newest first."""

    ok: Annotated[Literal[True], "Success."]
    agent_id: Annotated[str, "The agent."]
    items: Annotated[list[StoredProfile], "Its profiles."]
    count: Annotated[int, "len(items)."]


class TimelineDay(TypedDict):
    """Memories stored on one UTC day."""

    day: Annotated[str, "YYYY-MM-DD (from created_at)."]
    stored: Annotated[int, "Memories stored that day (still present)."]
    embedded: Annotated[int, "Of those, how many hold a vector now."]


class MemoryTimelineResult(TypedDict):
    """memory_timeline: memories stored per day, oldest day first (days without rows are absent)."""

    ok: Annotated[Literal[True], "Success."]
    agent_id: Annotated[str | None, "The agent (None: every agent)."]
    days: Annotated[list[TimelineDay], "One entry per day with rows."]
    stored: Annotated[int, "Sum of stored."]
    embedded: Annotated[int, "Sum of embedded."]

# -- retrieval quality ------------------------------------------------------------------------------------


class VectorCalibration(TypedDict):
    """The row-pair calibration: random pairs (null) against adjacent same-session pairs (positives)."""

    threshold: Annotated[float, "The vector threshold the method chose (reported; the gate uses the probes)."]
    null_mean: Annotated[float, "Mean cosine of random row pairs."]
    null_sd: Annotated[float, "Their standard deviation."]
    positive_mean: Annotated[float, "Mean cosine of the positive pairs."]
    positive_sd: Annotated[float, "Their standard deviation."]
    null_pairs: Annotated[int, "Random pairs sampled."]
    positive_pairs: Annotated[int, "Positive pairs used."]
    positive_source: Annotated[str, "'adjacent' (same session) or 'nearest' (nearest-neighbour fallback)."]


class GateCalibration(TypedDict):
    """The query gate's calibration from the probe questions."""

    enabled: Annotated[bool, "CPERSONA_FUSED_GATE_ENABLED."]
    kind: NotRequired[Annotated[str, "'query_top_cosine'."]]
    probes: NotRequired[Annotated[int, "Probe questions embedded."]]
    threshold: NotRequired[Annotated[float, "The gate's top-cosine cut at the agent's effective precision."]]
    thresholds: NotRequired[Annotated[dict[str, float], "The cut at strict, balanced and lenient."]]
    probe_top_cosine: NotRequired[Annotated[dict[str, float], "p50 / p75 / p90 of the probes' top cosines."]]


class Fingerprint(TypedDict):
    """What a calibration is valid for; a change triggers background recalibration."""

    scoring_version: Annotated[int, "Version of the gate's scoring."]
    model_id: Annotated[str, "Embedding model id."]
    dimension: Annotated[int, "Vector dimension."]


class PrecisionSetting(TypedDict):
    """An agent's effective precision."""

    level: Annotated[str, "strict, balanced or lenient."]
    beta: Annotated[float, "Effective β."]
    overridden: Annotated[bool, "Set for this agent (else the global CPERSONA_RECALL_PRECISION)."]


class CalibrateThresholdResult(TypedDict):
    """calibrate_threshold: the agent's thresholds, persisted to the sidecar."""

    ok: Annotated[Literal[True], "Success."]
    agent_id: Annotated[str, "The agent calibrated."]
    method: Annotated[str, "separation, percentile or zscore."]
    sample_size: Annotated[int, "Random pairs sampled."]
    rows: Annotated[int, "The agent's memories with vectors of the active model."]
    vector: Annotated[VectorCalibration, "Row-pair calibration."]
    gate: Annotated[GateCalibration, "Query-gate calibration (probes)."]
    precision: Annotated[PrecisionSetting, "The precision the thresholds were computed for."]
    fingerprint: Annotated[Fingerprint, "Scoring version, model id, dimension."]
    created_at: Annotated[str, "When (UTC ISO-8601)."]
    sidecar: Annotated[str, "Path of <db>.calibration.json."]


class GlobalPrecision(TypedDict):
    """CPERSONA_RECALL_PRECISION."""

    level: Annotated[str, "strict, balanced or lenient."]
    beta: Annotated[float, "Its β."]


class CalibrationState(TypedDict):
    """What recall would use for the agent now."""

    calibrated: Annotated[bool, "A calibration is stored."]
    gate: Annotated[str, "calibrated, heuristic or off."]
    threshold: NotRequired[Annotated[float, "The gate's cut now (absent when off)."]]
    stale: NotRequired[Annotated[bool, "The stored calibration is for another fingerprint (recalibration pending)."]]
    fingerprint: NotRequired[Annotated[Fingerprint, "Of the stored calibration."]]
    created_at: NotRequired[Annotated[str | None, "When it was made."]]
    method: NotRequired[Annotated[str | None, "Its method."]]
    rows: NotRequired[Annotated[int | None, "Rows it saw."]]


# Functional form: the key "global" is a Python keyword.
RecallPrecisionResult = TypedDict(
    "RecallPrecisionResult",
    {
        "ok": Annotated[Literal[True], "Success."],
        "agent_id": Annotated[str, "The agent."],
        "level": Annotated[str, "Effective level."],
        "beta": Annotated[float, "Effective β (a raw β when one was set)."],
        "overridden": Annotated[bool, "Set for this agent (else the global one applies)."],
        "global": Annotated[GlobalPrecision, "CPERSONA_RECALL_PRECISION and its β."],
        "calibration": Annotated[CalibrationState, "The agent's calibration state."],
        "recalibrated": NotRequired[Annotated[bool, "set_recall_precision: the thresholds were recomputed now."]],
        "note": NotRequired[
            Annotated[str, "set_recall_precision: why it was not recalibrated (no model, too few rows)."]
        ],
    },
)
RecallPrecisionResult.__doc__ = "get_recall_precision / set_recall_precision: the agent's effective precision."


#: Every public ``Memory`` method that returns a result dict, with the shapes it may return.
METHOD_RESULTS: dict[str, tuple[type, ...]] = {
    "store": (StoreStored, StoreSkipped, StorePaused),
    "recall": (RecallResult,),
    "recall_with_context": (RecallWithContextResult,),
    "get_contents": (GetContentsResult,),
    "archive_episode": (ArchiveEpisodeResult,),
    "update_memory": (UpdateMemoryResult,),
    "get_profile": (GetProfileResult,),
    "update_profile": (UpdateProfileResult,),
    "list_memories": (ListMemoriesResult,),
    "list_episodes": (ListEpisodesResult,),
    "list_agents": (ListAgentsResult,),
    "browse_memories": (BrowseMemoriesResult,),
    "browse_episodes": (BrowseEpisodesResult,),
    "list_profiles": (ListProfilesResult,),
    "memory_timeline": (MemoryTimelineResult,),
    "get_queue_status": (QueueStatusResult,),
    "lock_memory": (LockResult,),
    "unlock_memory": (LockResult,),
    "delete_memory": (DeleteResult,),
    "delete_episode": (DeleteResult,),
    "delete_agent_data": (DeleteAgentDataResult,),
    "embedding_status": (EmbeddingStatus,),
    "stats": (StatsResult,),
    "reembed": (ReembedDone, ReembedFailed),
    "check_health": (CheckHealthResult,),
    "deep_check": (DeepCheckResult,),
    "export_memories": (ExportResult,),
    "import_memories": (ImportResult,),
    "merge_memories": (MergeResult,),
    "migrate_channel_axis": (MigrateChannelAxisResult,),
    "calibrate_threshold": (CalibrateThresholdResult,),
    "set_recall_precision": (RecallPrecisionResult,),
    "get_recall_precision": (RecallPrecisionResult,),
}

#: Row shapes, documented before the results.
ROW_SHAPES: tuple[type, ...] = (MemoryRow, EpisodeRow, ProfileRow, MatchReason)
