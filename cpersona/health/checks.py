"""The built-in checks, registered in run order (repairs depend on it); the registry itself and the run
are ``registry.py``, whose names this module re-exports for the callers that knew them here.
Checks contributed by other features register themselves after these (``health/__init__.py``).
"""

from __future__ import annotations

from cpersona.health.file_checks import (
    check_embedding,
    check_fts,
    check_integrity,
    check_operating_context,
    check_schema,
)
from cpersona.health.registry import (
    CRITICAL,
    INFO,
    MAX_REPAIRS_PER_CHECK,
    REGISTRY,
    SAMPLE_REFS,
    STALE_TASK_ATTEMPTS,
    STALE_TASK_HOURS,
    WARN,
    Check,
    Finding,
    HealthContext,
    Outcome,
    Severity,
    check_names,
    register,
    run_checks,
    select_checks,
    storage_stats,
    verdict,
)
from cpersona.health.row_checks import (
    check_dimensions,
    check_duplicates,
    check_empty,
    check_invalid_json,
    check_oversized,
    check_tasks,
    check_timestamps,
    check_vectors,
    check_window,
)

__all__ = [
    "CRITICAL",
    "Check",
    "Finding",
    "HealthContext",
    "INFO",
    "MAX_REPAIRS_PER_CHECK",
    "Outcome",
    "REGISTRY",
    "SAMPLE_REFS",
    "STALE_TASK_ATTEMPTS",
    "STALE_TASK_HOURS",
    "Severity",
    "WARN",
    "check_names",
    "register",
    "run_checks",
    "select_checks",
    "storage_stats",
    "verdict",
]


for _check in (
    Check(
        "integrity",
        "the engine's structural check (SQLite integrity_check; PostgreSQL amcheck)",
        check_integrity,
        row_level=False,
    ),
    Check(
        "embedding", "the embedding model's state (a fault carries its fix)", check_embedding, row_level=False
    ),
    Check("duplicates", "identical memories in one scope", check_duplicates, "deletes newer unlocked copies"),
    Check(
        "schema",
        "schema version, triggers, indexes and extensions",
        check_schema,
        "recreates missing triggers and indexes",
        row_level=False,
    ),
    Check("oversized", "content / profile over the caps", check_oversized, "cuts unlocked rows to the cap"),
    Check("empty_content", "memories or episodes with empty text", check_empty),
    Check(
        "invalid_json",
        "source/metadata that is not a JSON object",
        check_invalid_json,
        'wraps the text as {"invalid_json": ...}',
    ),
    Check(
        "timestamps", "timestamps not in the stored UTC form", check_timestamps, "normalises parseable ones"
    ),
    Check(
        "fts",
        "trigram and word indexes vs their tables (count and text)",
        check_fts,
        "rebuilds the index",
        row_level=False,
    ),
    Check("vectors", "rows without a vector of the active model", check_vectors, "queues them for embedding"),
    Check("dimensions", "vector dimension drift and malformed vectors", check_dimensions),
    Check("vector_window", "rows beyond the CPERSONA_MAX_MEMORIES scan window", check_window),
    Check("tasks", "orphaned and long-failing queue tasks", check_tasks, "removes orphaned tasks"),
):
    register(_check)
register(
    Check(
        "operating_context",
        "the operator's context file parses",
        check_operating_context,
        row_level=False,
    )
)
