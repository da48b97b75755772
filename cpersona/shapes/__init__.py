"""Typed result shapes of the Python API (``cpersona.Memory``): one TypedDict per result and row kind.

These are the source of truth for docs/api-shapes.md: its tables are generated
from this module (``python scripts/gen_api_shapes.py``) and a test fails when
the committed file differs. Each key carries a one-line meaning in its
``Annotated`` metadata; ``NotRequired`` marks keys present only sometimes.

The MCP tools return the same dicts after response shaping (previews, budgets),
which adds keys such as ``content_truncated`` or ``deferred``; docs/tools.md
describes those.
"""

# The shapes are split by tool group; every name is re-exported here, so ``cpersona.shapes.X`` is
# the one way to refer to a shape.
from cpersona.shapes.browsing import (  # noqa: F401 - re-exported: the public names live here
    AgentAxis,
    AgentSummary,
    BrowseEpisodesResult,
    BrowseMemoriesResult,
    ListAgentsResult,
    ListProfilesResult,
    MemoryTimelineResult,
    StoredProfile,
    TimelineDay,
)
from cpersona.shapes.everyday import (  # noqa: F401 - re-exported: the public names live here
    Advisory,
    ArchiveEpisodeResult,
    ContextEntry,
    DeleteAgentDataResult,
    DeleteResult,
    GetContentsResult,
    GetHistoryResult,
    GetProfileResult,
    ListEpisodesResult,
    ListMemoriesResult,
    LockResult,
    QueueStatus,
    QueueStatusResult,
    RecalledEpisode,
    RecalledMemory,
    RecalledProfile,
    RecallGate,
    RecallResult,
    RecallSearch,
    RecallTrace,
    RecallWithContextResult,
    StorePaused,
    StoreSkipped,
    StoreStored,
    TableCounts,
    TraceChannel,
    TraceFusion,
    TraceRefs,
    TraceScored,
    UpdateMemoryResult,
    UpdateProfileResult,
)
from cpersona.shapes.operations import (  # noqa: F401 - re-exported: the public names live here
    CheckHealthResult,
    DeepCheckResult,
    EmbeddingStatus,
    ExportResult,
    HealthFinding,
    ImportResult,
    MergeResult,
    MigrateChannelAxisResult,
    ModelSharing,
    ReembedDone,
    ReembedFailed,
    StatsResult,
    VectorWindow,
)
from cpersona.shapes.process import (  # noqa: F401 - re-exported: the public names live here
    CheckUpdateResult,
    OperatingContextResult,
    PauseResult,
    PersistenceState,
    ResumeResult,
    ToolError,
)
from cpersona.shapes.quality import (  # noqa: F401 - re-exported: the public names live here
    CalibrateResult,
    CalibrateThresholdResult,
    CalibrationState,
    Fingerprint,
    GateCalibration,
    GlobalPrecision,
    PrecisionSetting,
    RecallPrecisionResult,
    VectorCalibration,
)
from cpersona.shapes.resources import (  # noqa: F401 - re-exported: the public names live here
    CompletionResult,
    ResourceInfo,
    ResourceListResult,
    ResourceReadResult,
    ResourceTemplateInfo,
    ResourceTemplatesResult,
)
from cpersona.shapes.rows import (  # noqa: F401 - re-exported: the public names live here
    EpisodeRow,
    MatchReason,
    MemoryRow,
    ProfileRow,
    RecallRow,
    StoredRow,
)

#: Every public ``Memory`` method that returns a result dict, with the shapes it may return.
METHOD_RESULTS: dict[str, tuple[type, ...]] = {
    "store": (StoreStored, StoreSkipped, StorePaused),
    "recall": (RecallResult,),
    "recall_with_context": (RecallWithContextResult,),
    "get_contents": (GetContentsResult,),
    "get_history": (GetHistoryResult,),
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
    "resource_templates": (ResourceTemplatesResult,),
    "list_resources": (ResourceListResult,),
    "read_resource": (ResourceReadResult,),
    "complete_agent_id": (CompletionResult,),
    "complete_project_id": (CompletionResult,),
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
    "calibrate": (CalibrateResult,),
    "set_recall_precision": (RecallPrecisionResult,),
    "get_recall_precision": (RecallPrecisionResult,),
}

#: The MCP tools that are not ``Memory`` methods (the other tools return their method's shapes).
TOOL_ONLY_RESULTS: dict[str, tuple[type, ...]] = {
    "pause_persistence": (PauseResult,),
    "resume_persistence": (ResumeResult,),
    "persistence_status": (PersistenceState,),
    "get_operating_context": (OperatingContextResult,),
    "check_update": (CheckUpdateResult,),
}

#: Row shapes, documented before the results.
ROW_SHAPES: tuple[type, ...] = (MemoryRow, EpisodeRow, ProfileRow, MatchReason)
