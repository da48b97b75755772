"""Typed result shapes of the Python API (``cpersona.Memory``): one TypedDict per result and row kind.

These are the source of truth for docs/api-shapes.md: its tables are generated
from this module (``python scripts/gen_api_shapes.py``) and a test fails when
the committed file differs. Each key carries a one-line meaning in its
``Annotated`` metadata; ``NotRequired`` marks keys present only sometimes.

The MCP tools return the same dicts after response shaping (previews, budgets),
which adds keys such as ``content_truncated`` or ``deferred``; docs/tools.md
describes those.
"""

# The shapes are split by tool group; every name is re-exported here, so ``cpersona.result_types.X`` is
# the one way to refer to a shape.
from cpersona.result_types.browsing import (  # noqa: F401 - re-exported: the public names live here
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
from cpersona.result_types.context_pack import (  # noqa: F401 - re-exported: the public names live here
    EntityMention,
    PackItem,
    ReconstructResult,
)
from cpersona.result_types.everyday import (  # noqa: F401 - re-exported: the public names live here
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
    RetireResult,
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
from cpersona.result_types.links import (  # noqa: F401 - re-exported: the public names live here
    AssociationOutcome,
    DeclareAssociationsResult,
    PathStep,
    TraversedEntity,
    TraversedMemory,
    TraverseResult,
)
from cpersona.result_types.operations import (  # noqa: F401 - re-exported: the public names live here
    CheckHealthResult,
    DeepCheckResult,
    EmbeddingStatus,
    ExportResult,
    HealthFinding,
    ImportResult,
    MergeResult,
    MigrateChannelAxisResult,
    ModelSharing,
    QueryKernelStatus,
    ReembedDone,
    ReembedFailed,
    StatsResult,
    VectorWindow,
)
from cpersona.result_types.process import (  # noqa: F401 - re-exported: the public names live here
    CheckUpdateResult,
    OperatingContextResult,
    PauseResult,
    PersistenceState,
    ResumeResult,
    ToolError,
)
from cpersona.result_types.quality import (  # noqa: F401 - re-exported: the public names live here
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
from cpersona.result_types.resources import (  # noqa: F401 - re-exported: the public names live here
    CompletionResult,
    ResourceInfo,
    ResourceLinkInfo,
    ResourceListResult,
    ResourceReadResult,
    ResourceTemplateInfo,
    ResourceTemplatesResult,
)
from cpersona.result_types.rows import (  # noqa: F401 - re-exported: the public names live here
    EpisodeRow,
    MatchReason,
    MemoryRow,
    ProfileRow,
    RecallRow,
    StoredRow,
)

#: The result shapes of the ``Memory`` methods whose return annotation does not name them yet
#: (``dict[str, Any]``). A method annotated with its TypedDict(s) needs no entry here; a test fails
#: when an entry disagrees with the annotation. ``cpersona.memory.method_results()`` joins both (it reads
#: the services, which import these shapes: it lives above them, not here).
DECLARED_RESULTS: dict[str, tuple[type, ...]] = {}


#: Row shapes, documented before the results.
ROW_SHAPES: tuple[type, ...] = (MemoryRow, EpisodeRow, ProfileRow, MatchReason)
