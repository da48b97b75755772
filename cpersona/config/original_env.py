"""The original CPersona's environment variables (PyPI ``cpersona`` 2.5 / 2.6), for a host entry moved over.

Where its name for a setting differs from ours, ours reads it as an alias (``config/settings.py``: ``EMBEDDING_MODE``,
``EMBEDDING_HTTP_URL``; its ``EMBEDDING_MODEL`` names the model of its vectors when its database moves in:
portability/move_in.py); the names below are its settings that have no counterpart here (its own
retrieval tuning, block index, OAuth, remote index, ...). A server started with them runs, and says once
which of them it ignores, so nobody believes a setting is in force that is not.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

log = logging.getLogger("cpersona.config")

#: Its variables with no counterpart in this edition (facts: the names its 2.5.12 and 2.6.14 read).
ORIGINAL_ONLY = frozenset(
    [
        "CPERSONA_ALIAS_LEDGER_FILE",
        "CPERSONA_AUTOCUT_ENABLED",
        "CPERSONA_AUTOCUT_MIN_GAP_RATIO",
        "CPERSONA_BLOCK_BUILD_ENABLED",
        "CPERSONA_BLOCK_INDEX",
        "CPERSONA_BLOCK_RETRIEVAL_ENABLED",
        "CPERSONA_BOOST_DECAY_RATE",
        "CPERSONA_CALIBRATE_FLOOR",
        "CPERSONA_CALIBRATE_MAX_SAMPLE",
        "CPERSONA_CALIBRATE_METHOD",
        "CPERSONA_CALIBRATE_ON_MODEL_CHANGE",
        "CPERSONA_CALIBRATE_PERCENTILE",
        "CPERSONA_CALIBRATE_SAMPLE_SIZE",
        "CPERSONA_CALIBRATE_TEMPORAL_WINDOW_MIN",
        "CPERSONA_CALIBRATE_Z_FACTOR",
        "CPERSONA_CONFIDENCE_ORDERING",
        "CPERSONA_COSINE_CEIL",
        "CPERSONA_COSINE_FLOOR",
        "CPERSONA_CUE_COARSE_ENABLED",
        "CPERSONA_DECAY_CEIL",
        "CPERSONA_DECAY_FLOOR",
        "CPERSONA_DECAY_RATE",
        "CPERSONA_DECLARED_FOLDERS",
        "CPERSONA_EMBEDDING_API_KEY",
        "CPERSONA_EMBEDDING_API_URL",
        "CPERSONA_EMBEDDING_MODEL_MODE",
        "CPERSONA_FAR_SEATS_ENABLED",
        "CPERSONA_FOLDER_MAX_DEPTH",
        "CPERSONA_FTS_ENABLED",
        "CPERSONA_FUSED_GATE_CALIBRATION_DRAWS",
        "CPERSONA_FUSED_GATE_SAMPLE_QUERIES",
        "CPERSONA_FUTURE_TIMESTAMP_SKEW_SECONDS",
        "CPERSONA_HTTP_BODY_LIMIT_MODE",
        "CPERSONA_HTTP_MAX_BODY_BYTES",
        "CPERSONA_INVALID_SOURCE_CLASSIFY_CAP",
        "CPERSONA_LOGICAL_DIRECTORY",
        "CPERSONA_MAX_IMPORT_BYTES",
        "CPERSONA_MAX_METADATA_LENGTH",
        "CPERSONA_MIN_TIME_RANGE_HOURS",
        "CPERSONA_NEAR_DUPLICATE_ROW_CAP",
        "CPERSONA_NORMALIZATION_SCAN_CAP",
        "CPERSONA_OAUTH_AUTHORIZATION_SERVERS",
        "CPERSONA_OAUTH_JWKS_URI",
        "CPERSONA_OAUTH_RESOURCE",
        "CPERSONA_OAUTH_SCOPES",
        "CPERSONA_PRIOR_AGE_ANCHOR",
        "CPERSONA_PRIOR_AGE_FLOOR",
        "CPERSONA_PRIOR_AGE_RATE",
        "CPERSONA_PRIOR_FAR_WEIGHT",
        "CPERSONA_PROXY_MAX_INFLIGHT",
        "CPERSONA_RECALL_BOOST",
        "CPERSONA_RECALL_CUE_TIME_LIMIT_MS",
        "CPERSONA_RECALL_DEPTH_FLOOR",
        "CPERSONA_RECALL_EXCERPT_CHARS",
        "CPERSONA_RECALL_LIBRARY_MAX_LIMIT",
        "CPERSONA_RECALL_PROPAGATION_SEAT",
        "CPERSONA_RECONSTRUCT_ADJACENCY_SECONDS",
        "CPERSONA_RECONSTRUCT_DEFAULT_COUNT",
        "CPERSONA_RECONSTRUCT_FULL_QUOTES",
        "CPERSONA_RECONSTRUCT_MAX_BUDGET",
        "CPERSONA_RECONSTRUCT_MAX_COUNT",
        "CPERSONA_RECONSTRUCT_MAX_EVIDENCE",
        "CPERSONA_RECONSTRUCT_MAX_HOPS",
        "CPERSONA_RECONSTRUCT_QUOTE_CHARS",
        "CPERSONA_RECONSTRUCT_SEQUENCE",
        "CPERSONA_RECONSTRUCT_TAIL_QUOTE_CHARS",
        "CPERSONA_RECONSTRUCT_TOP_K",
        "CPERSONA_REEMBED_ROW_CAP",
        "CPERSONA_REFERENCE_HOURS",
        "CPERSONA_REMOTE_INDEX_TIMEOUT_SECS",
        "CPERSONA_REMOTE_SEARCH_TIMEOUT_SECS",
        "CPERSONA_REMOTE_URL",
        "CPERSONA_RESOLVED_DECAY_FACTOR",
        "CPERSONA_RRF_THRESHOLD_FACTOR",
        "CPERSONA_SCOPE_STATS_CACHE",
        "CPERSONA_SCOPE_STATS_TTL_SECONDS",
        "CPERSONA_STORE_BLOB",
        "CPERSONA_TASK_MAX_RETRIES",
        "CPERSONA_TASK_QUEUE_ENABLED",
        "CPERSONA_UPDATE_CHECK_INTERVAL_SECONDS",
        "CPERSONA_VECTOR_FAR_LIMIT",
        "CPERSONA_VECTOR_INDEX_MAX_EXCLUDED_IDS",
        "CPERSONA_VECTOR_MIN_SIMILARITY",
        "CPERSONA_VECTOR_REACH",
        "CPERSONA_VECTOR_SCAN_CHUNK_ROWS",
        "CPERSONA_VECTOR_SEARCH_MODE",
        "EMBEDDING_API_KEY",
        "EMBEDDING_API_URL",
    ]
)


def ignored(env: Mapping[str, str]) -> list[str]:
    """The original's variables set in ``env`` that this edition does not read."""
    return sorted(name for name in ORIGINAL_ONLY if env.get(name, "").strip())


_NOTICED: set[str] = set()


def notice_names(env: Mapping[str, str], names: Sequence[tuple[str, tuple[str, ...]]]) -> None:
    """One line, once per process, for each alias in use (naming ours) and for the original CPersona's
    variables this edition ignores (docs/moving-from-cpersona.md#environment-variables). ``names``: each
    setting's canonical name and its aliases."""
    for name, aliases in names:
        if first_set(env, (name,)) is not None:
            continue
        for alias in aliases:
            if first_set(env, (alias,)) is not None and alias not in _NOTICED:
                _NOTICED.add(alias)
                log.warning("%s is read as %s (this edition's name; set that instead)", alias, name)
                break
    unread = [name for name in ignored(env) if name not in _NOTICED]
    if unread:
        _NOTICED.update(unread)
        log.warning("the original CPersona's settings %s have no effect in this edition", ", ".join(unread))


def first_set(env: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    """The value of the first of ``names`` set (not blank) in ``env``: the canonical CPERSONA_ name comes
    first, so it overrides its aliases."""
    for name in names:
        value = env.get(name)
        if value is not None and value.strip() != "":
            return value.strip()
    return None
