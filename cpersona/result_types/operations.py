"""Shapes of the operations calls: status, stats, re-embedding, health checks and portability."""

# No ``from __future__ import annotations`` here: with string annotations Python 3.11 cannot see
# NotRequired at runtime, and the doc generator reads __optional_keys__.
from typing import Annotated, Any, Literal, NotRequired, TypedDict

from cpersona.result_types.common import AgentNotice, RedactedKind, Success
from cpersona.result_types.everyday import QueueStatus, TableCounts

# -- health and administration -------------------------------------------------------------------------


class ModelSharing(TypedDict):
    """This process's part in sharing one loaded model between processes (onnx mode, sharing on)."""

    role: Annotated[str, "host (holds the model and serves it), client (embeds through the host) or none."]
    host_pid: Annotated[int | None, "Process id of the model host (null before the first load)."]
    socket: Annotated[str, "The host's Unix socket."]
    takeovers: Annotated[int, "Times this process took the model over from a host that went away."]


class QueryKernelStatus(TypedDict):
    """Which graph embeds recall queries (onnx mode): the model's float32 one or its int8 copy."""

    kernel: Annotated[str, "int8 (the int8 copy passed its check) or exact (the model's own graph)."]
    reason: Annotated[str, "Why this kernel: the check's outcome, or why it did not run."]
    min_cosine: NotRequired[
        Annotated[float, "Lowest cosine between the two graphs' vectors of the probe texts."]
    ]
    speedup: NotRequired[
        Annotated[float, "The float32 graph's median time over the int8 copy's, per probe text."]
    ]


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
    query_kernel: NotRequired[
        Annotated[QueryKernelStatus, "The recall queries' kernel (onnx, in the process holding the model)."]
    ]


class VectorWindow(TypedDict):
    """How much of the corpus the vector scan window covers."""

    size: Annotated[
        int | None, "CPERSONA_MAX_MEMORIES: rows scanned per table and scope (null: the whole corpus)."
    ]
    rows_outside: Annotated[dict[str, dict[str, int]], "Per agent and table, vector rows past the window."]


class StatsResult(TypedDict):
    """stats: counts, file, embedding and queue state."""

    ok: Success
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

    ok: Success
    queued: Annotated[int, "Embedding tasks waiting when the drain started (queued before or by this call)."]
    processed: Annotated[int, "Tasks handled in this call."]
    remaining: Annotated[int, "Embedding tasks still waiting afterwards (retried later)."]


class ReembedFailed(TypedDict):
    """reembed: the model could not be loaded; rows stay queued."""

    ok: Annotated[Literal[False], "Failure."]
    error: Annotated[str, "Why the model did not load, with the fix."]
    fault: Annotated[str, "The fault kind (model_missing, misconfigured, ...; see embedding_status)."]
    queued: Annotated[int, "Embedding tasks waiting (they stay queued)."]


ReembedResult = ReembedDone | ReembedFailed


# -- health ---------------------------------------------------------------------------------------------


class HealthFinding(TypedDict):
    """One issue a health check found (docs/health.md)."""

    check: Annotated[str, "The check's registry name."]
    severity: Annotated[Literal["critical", "warn", "info"], "info never degrades the verdict."]
    message: Annotated[str, "What is wrong, for a person."]
    fixable: Annotated[bool, "Whether fix=true (`cpersona checkup --fix`) repairs it; if not, follow fix."]
    count: NotRequired[Annotated[int, "How many rows are affected."]]
    refs: NotRequired[Annotated[list[str], "Some affected rows ('mem:<id>', 'ep:<id>')."]]
    fix: NotRequired[Annotated[str, "What fix=true does, or the command to run."]]


class CheckHealthResult(TypedDict):
    """check_health: the verdict, findings and repairs of the selected checks."""

    ok: Annotated[Literal[True], "Success (an unhealthy store is a result, not an error)."]
    status: Annotated[
        Literal["healthy", "degraded", "unhealthy"], "Worst severity found (info never degrades)."
    ]
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
    notice: NotRequired[AgentNotice]
    note: NotRequired[Annotated[str, "Why fix was downgraded."]]


class DeepCheckResult(TypedDict):
    """deep_check: the semantic review of one agent (every deep check reports only)."""

    ok: Success
    status: Annotated[Literal["healthy", "degraded", "unhealthy"], "Worst severity found."]
    agent_id: Annotated[str, "The agent reviewed."]
    fix: Annotated[bool, "Whether fix was requested and allowed (deep checks never change rows)."]
    fixed: Annotated[int, "Always 0: deep checks report only."]
    checks_run: Annotated[list[str], "The checks that ran."]
    counts: Annotated[dict[str, int], "Findings per severity."]
    findings: Annotated[list[HealthFinding], "Every finding (near-duplicates carry both refs)."]
    checks: Annotated[dict[str, Any], "Per check: status, findings and details."]
    note: NotRequired[Annotated[str, "Why fix was downgraded (persistence paused)."]]
    notice: NotRequired[AgentNotice]


# -- portability ------------------------------------------------------------------------------------------


class ExportResult(TypedDict):
    """export_memories: the JSONL file written (format: docs/tools.md)."""

    ok: Success
    path: Annotated[str, "The file written (atomically)."]
    bytes: Annotated[int, "Its size."]
    agent_id: Annotated[str | None, "The agent exported (None: every agent, CLI only)."]
    include_embeddings: Annotated[bool, "Whether vectors were written (base64 float32 with model id)."]
    counts: Annotated[dict[str, int], "Records written per type."]
    notice: NotRequired[AgentNotice]
    redacted: NotRequired[
        Annotated[
            list[RedactedKind],
            "Credentials written as '[redacted: <kind>]' (absent with include_secrets): kind and count; those "
            "rows carry no vector.",
        ]
    ]


class ImportTally(TypedDict):
    """What an import read and wrote so far (import_memories' counts; a cancelled import reports them)."""

    dry_run: Annotated[bool, "Nothing was written."]
    lines: Annotated[int, "Lines read."]
    counts: Annotated[dict[str, dict[str, int]], "Per type: inserted / duplicate / ... counts."]
    truncated: Annotated[int, "Records whose text was cut to the caps."]
    vectors_dropped: Annotated[
        int, "Vectors not kept: their length contradicts the registry's dimension for their model."
    ]
    queued_for_embedding: Annotated[int, "Rows queued for back-fill."]
    error_count: Annotated[int, "Bad lines (skipped)."]
    errors: Annotated[list[dict[str, Any]], "The first bad lines: line number and why."]
    redacted: Annotated[
        list[RedactedKind],
        "Credentials replaced by '[redacted: <kind>]' (CPERSONA_SECRETS=redact; refuse makes such a line an "
        "error): kind and count, never the value; those rows are embedded again.",
    ]


class ImportResult(ImportTally):
    """import_memories: what was (or, with dry_run, would be) imported."""

    ok: Annotated[Literal[True], "Success (bad lines are reported, not fatal)."]
    path: Annotated[str, "The file read."]
    target_agent_id: Annotated[str | None, "The agent rows were rewritten to, if any."]
    header: Annotated[dict[str, Any], "The file's header fields."]


class MergeResult(TypedDict):
    """merge_memories: copy or move one agent's rows into another, in one transaction."""

    ok: Success
    dry_run: Annotated[bool, "The transaction was rolled back."]
    source_agent_id: Annotated[str, "Rows came from here."]
    target_agent_id: Annotated[str, "Rows went here."]
    mode: Annotated[Literal["copy", "move"], "move empties the source agent."]
    strategy: Annotated[Literal["skip"], "Duplicates in the target are skipped."]
    counts: Annotated[dict[str, dict[str, int]], "Per table: copied / moved / skipped."]
    redacted: NotRequired[
        Annotated[
            list[RedactedKind],
            "CPERSONA_SECRETS=redact: credentials in the target's rows after the merge, replaced by "
            "'[redacted: <kind>]' (kind and count).",
        ]
    ]


class MigrateChannelAxisResult(TypedDict):
    """migrate_channel_axis: rows moved off bridge channels (docs/decisions.md "Portability")."""

    ok: Success
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
    examples: Annotated[
        dict[str, list[dict[str, Any]]],
        "A few rows per counted kind (e.g. unrecoverable: [{ref, ...}]), for review.",
    ]
    note: NotRequired[Annotated[str, "Why dry_run was forced (persistence paused)."]]
