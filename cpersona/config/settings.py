"""Every setting the server reads, in one typed place: the settings table.

Each field of ``Settings`` is one row of the table: its type (a ``Literal`` for a choice), its default,
and a ``setting(...)`` that names the environment variable, its bounds and its one-line doc. Everything
else is derived from those rows: reading the environment (``Settings.from_env``), the checks (both on an
environment value and on a ``Settings(...)`` built in code), and the README's configuration table
(``scripts/gen_config_table.py``; tests/config/test_config.py fails when the README and the table
disagree). Nothing else in the package reads ``os.environ`` for configuration. Adding a setting is
adding one field: docs/architecture.md, "Configuration".
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, get_type_hints

from cpersona.config import original_env
from cpersona.config.fields import (
    _VAR,
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_QUERY_CACHE_SIZE,
    DEFAULT_QUERY_CACHE_TTL,
    ConfigError,
    EmbeddingMode,
    ModelSharing,
    OutputSchemaDetail,
    PgVectorIndex,
    QueryKernel,
    RecallMode,
    RecallPrecision,
    Row,
    SecretsPolicy,
    Transport,
    VectorFloat32,
    _auto_or_boolean,
    _postgres_url,
    _url_base,
    default_data_dir,
    default_runtime_dir,
    describe_hint,
    setting,
    setting_computed,
)
from cpersona.config.settings_file import SettingsFileError, read_settings_file, settings_file_path


@dataclass(frozen=True)
class Settings:
    """Typed configuration: one field per setting, in the README's order."""

    # Storage
    db_path: Path = setting_computed(
        "CPERSONA_DB_PATH",
        lambda: default_data_dir() / "memory.db",
        "the SQLite file",
        default_text="`<user data dir>/memory.db` (Linux: `~/.local/share/cpersona/memory.db`)",
    )
    db_url: str | None = setting(
        "CPERSONA_DB_URL",
        None,
        "`postgresql://...`: use a shared PostgreSQL database instead of the SQLite file "
        '(see "Sharing one memory between machines")',
        check=_postgres_url,
        secret=True,
        default_text="unset",
        value_text="`postgresql://` URL",
    )
    pg_vector_index: PgVectorIndex = setting(
        "CPERSONA_PG_VECTOR_INDEX",
        "hnsw",
        "PostgreSQL vector search: `hnsw` (pgvector HNSW index, cosine) or `exact` (the scan window scored "
        "in the server process per recall, for pgvector builds that cannot run on your CPU)",
    )
    vector_float32: VectorFloat32 = setting(
        "CPERSONA_VECTOR_FLOAT32",
        "memory",
        "SQLite vector search scans int8 codes of every row, then rescores the best few hundred exactly in "
        "float32: `memory` keeps those float32 rows in RAM too (fastest), `file` reads them from the database "
        "file per recall (the index then takes a quarter of the RAM: 100k × 384 dims ≈ 40 MB instead of "
        "≈ 200 MB)",
    )
    export_dir: Path | None = setting(
        "CPERSONA_EXPORT_DIR",
        None,
        "the only directory the export/import MCP tools may read or write (created on first use; under an "
        "ACL each client gets `clients/<name>/` in it)",
        default_text="`<db dir>/exports`",
    )

    # Retrieval
    max_memories: int | None = setting(
        "CPERSONA_MAX_MEMORIES",
        None,
        "vector scan window: most recent N rows per table in scope (not a storage cap). Unset, every vector "
        "is searched; the SQLite in-memory index costs about 1.1 × 5 × dimension bytes per vector row "
        "(float32 + int8 codes: 100k rows × 384 dims ≈ 210 MB; × 768 dims ≈ 420 MB), or 1.1 × dimension "
        "bytes with `CPERSONA_VECTOR_FLOAT32=file`",
        minimum=1,
        default_text="unset (whole corpus)",
    )
    recall_mode: RecallMode = setting(
        "CPERSONA_RECALL_MODE",
        "rsf",  # not the spec's rrf: a measured departure (docs/decisions.md)
        "fusion: `rsf` (min-max score fusion; each channel read `max(limit, 30)` deep), `rrf` (reciprocal "
        "rank; depth = `limit`) or `cascade` — see docs/retrieval.md",
    )
    rrf_k: int = setting("CPERSONA_RRF_K", 60, "RRF constant", minimum=1)
    context_weight: float = setting(
        "CPERSONA_CONTEXT_WEIGHT",
        0.6,
        "context channel (rsf only): the memories stored just before and after each of the 6 best hits, in "
        "the same session, get this share of that hit's score — a conversation's answer is often the turn "
        "after the question's topic ([docs/retrieval.md](docs/retrieval.md#the-context-channel)); `0` turns "
        "it off",
        minimum=0.0,
        maximum=1.0,
    )
    session_diversity: float = setting(
        "CPERSONA_SESSION_DIVERSITY",
        0.7,  # with 7 free rows: LoCoMo +3/-0 (26 +2, 41 +1, 30 unchanged); the long histories unchanged
        "session diversity: after the gate, each row of a session beyond its best `CPERSONA_SESSION_FREE_ROWS` "
        "gets this factor once more (1: off), so the best rows of other sessions get room "
        "([docs/retrieval.md](docs/retrieval.md#after-fusion))",
        minimum=0.05,
        maximum=1.0,
    )
    aggregate_diversity: float = setting(
        "CPERSONA_AGGREGATE_DIVERSITY",
        0.2,  # chosen and confirmed on the long histories, comparisons on longchat-compare
        # (docs/research/recall-round-three/figures.md#the-figures-and-how-they-moved)
        'session diversity for a question that counts ("how many", "in total", "how often did", 何回 …), '
        'orders events ("which first, A or B", "before or after", どちらが先) or compares amounts ("which '
        'cost more, A or B", "the longest"): each row of a session beyond its best gets this factor once '
        "more, so every session's best row comes before any session's second ([docs/retrieval.md]"
        "(docs/retrieval.md#after-fusion)); `1`: such a question gets the ordinary rule",
        minimum=0.05,
        maximum=1.0,
    )
    recency_weight: float = setting(
        "CPERSONA_RECENCY_WEIGHT",
        0.45,  # chosen on the long histories' choose half (newest first .2 -> .4, nothing lost; 0.6 lost a
        # question), confirmed on the other (.3 -> .5); LoCoMo unchanged. 0.6-0.9, measured again on nine
        # sets, push an old value's session out of the top 10
        # (docs/research/recall-round-three/not-kept.md#the-newest-statement-a-heavier-recency-weight-not-kept)
        'a question about the present ("now", "currently", "these days", 今, 現在 …, no word of the past): '
        "the rows kept are ranked by time and the oldest loses this share of its score, so the newest "
        "statement of a changing fact comes first ([docs/retrieval.md](docs/retrieval.md#after-fusion)); "
        "`0` turns it off",
        minimum=0.0,
        maximum=0.9,
    )
    recency_margin: float = setting(
        "CPERSONA_RECENCY_MARGIN",
        0.04,  # chosen on the long histories' choose halves (newest first 23 -> 25 of 40; 0.02 and 0.08
        # tried), confirmed on the others (21 -> 22); LoCoMo unchanged
        # (docs/research/recall-round-three/figures.md#the-figures-and-how-they-moved)
        "a question about the present: the rows kept whose cosine is within this of the best of theirs "
        "match it equally by meaning, and trade places newest first, so an update worded unlike the "
        "question still comes first ([docs/retrieval.md](docs/retrieval.md#after-fusion)); `0` turns it off",
        minimum=0.0,
        maximum=0.5,
    )
    role_weight: float = setting(
        "CPERSONA_ROLE_WEIGHT",
        0.3,  # the long histories' choose halves (0.1 / 0.2 / 0.3), confirmed
        # (docs/research/recall-round-three/whose-words.md#whose-words-the-role-of-a-row)
        "a question in the first person scales the assistant's rows by 1 minus this, one about what the "
        "assistant said the user's ([docs/retrieval.md](docs/retrieval.md#whose-words)); `0`: off",
        minimum=0.0,
        maximum=0.9,
    )
    speaker_weight: float = setting(
        "CPERSONA_SPEAKER_WEIGHT",
        0.2,  # LoCoMo 26 and 30, capped by the adversarial questions; confirmed on 41
        # (docs/research/recall-round-three/whose-words.md#whose-words-named-speakers)
        "a question naming one of the speakers whose labels open the rows ('Caroline: …') scales the other "
        "speakers' rows by 1 minus this ([docs/retrieval.md](docs/retrieval.md#whose-words)); `0`: off",
        minimum=0.0,
        maximum=0.9,
    )
    reply_weight: float = setting(
        "CPERSONA_REPLY_WEIGHT",
        0.5,  # LoCoMo 26 and 30 (0.1 to 0.7; ties 0.7, the milder ships), confirmed on 41
        # (docs/research/recall-round-three/replies-and-context.md#a-question-gives-way-to-its-reply)
        "a stored turn that mostly asks a question is scaled by 1 minus this when its reply is a candidate "
        "too, and one that only speaks to the other person when the turn it reacts to is "
        "([docs/retrieval.md](docs/retrieval.md#a-question-gives-way-to-its-reply)); `0`: off",
        minimum=0.0,
        maximum=0.9,
    )
    count_query_content: float = setting(
        "CPERSONA_COUNT_QUERY_CONTENT",
        0.5,  # the long histories' choose halves (0.5 / 0.7), confirmed; LoCoMo unchanged
        # (docs/research/recall-round-three/question-forms.md#the-query-vector-of-a-count)
        'a question that counts ("how many books did I finish?") or asks how long between two events: the share '
        "of its content (the question without the counting frame) in the query vector, so the statements it "
        "counts outrank other questions ([docs/retrieval.md](docs/retrieval.md#the-query-vector-of-a-count)); "
        "`0` turns it off",
        minimum=0.0,
        maximum=1.0,
    )
    count_keyword_weight: float = setting(
        "CPERSONA_COUNT_KEYWORD_WEIGHT",
        0.5,  # the long histories' choose halves (0.5 / 0), confirmed; 0 cost LoCoMo
        # (docs/research/recall-round-three/question-forms.md#the-query-vector-of-a-count)
        "a question that counts, its content blended in (`CPERSONA_COUNT_QUERY_CONTENT`), that does not ask "
        "the order of events: the memory keyword channels' weight in fusion is multiplied by this, since "
        "the statements it counts seldom share its words; `1` turns it off",
        minimum=0.0,
        maximum=1.0,
    )
    session_free_rows: int = setting(
        "CPERSONA_SESSION_FREE_ROWS",
        7,  # LoCoMo +3/-0 questions on both query kernels (6: one adversarial question lost on int8)
        "session diversity: how many rows of one session keep their score before the diversity factor applies",
        minimum=1,
        maximum=100,
    )
    query_dates: bool = setting(
        "CPERSONA_QUERY_DATES",
        True,
        'read one unambiguous date phrase in the query ("in May 2023", "yesterday", "last week", "先週", '
        '"2023年5月") as a `likely` time cue: memories near that period get a bounded boost, nothing is '
        "filtered ([docs/retrieval.md](docs/retrieval.md#time-cues)); `false` turns it off",
    )
    episode_penalty_enabled: bool = setting(
        "CPERSONA_EPISODE_PENALTY_ENABLED", True, "multiply memories older than the newest episode by a decay"
    )
    episode_decay_rate: float = setting("CPERSONA_EPISODE_DECAY_RATE", 0.01, "per hour before the boundary")
    episode_decay_floor: float = setting(
        "CPERSONA_EPISODE_DECAY_FLOOR", 0.5, "the decay never goes below this"
    )
    recent_recall_window_min: float = setting(
        "CPERSONA_RECENT_RECALL_WINDOW_MIN", 5.0, "rows returned within this many minutes …"
    )
    recent_recall_penalty: float = setting(
        "CPERSONA_RECENT_RECALL_PENALTY",
        1.0,  # not the spec's 0.7: it cost every corpus measured (docs/decisions.md "Recent-recall penalty")
        "… are multiplied by this (`1`: off, the default; the spec's `0.7` demotes rows an agent just "
        "recalled, which cost recall whenever two questions share their evidence)",
    )
    fused_gate_enabled: bool = setting(
        "CPERSONA_FUSED_GATE_ENABLED",
        True,
        "the per-query quality gate: a query nothing in memory resembles returns only exact lexical matches "
        "(else nothing); `false` turns it off ([docs/quality-gate.md](docs/quality-gate.md))",
    )
    confidence_enabled: bool = setting(
        "CPERSONA_CONFIDENCE_ENABLED",
        False,
        "confidence scoring (cosine × time decay × resolved × recall count); re-sorts by confidence and gates "
        "per row",
    )
    autocut_min_results: int = setting(
        "CPERSONA_AUTOCUT_MIN_RESULTS",
        3,
        "autocut (largest-gap truncation on similarity-scale lists) never leaves fewer rows",
        minimum=1,
    )
    recall_preview_chars: int = setting(
        "CPERSONA_RECALL_PREVIEW_CHARS",
        500,
        "recall rows longer than this come back as previews with a `ref`",
        minimum=1,
    )

    # Content caps
    max_content_length: int = setting(
        "CPERSONA_MAX_CONTENT_LENGTH", 16000, "longer content is truncated (`truncated: true`)", minimum=1
    )
    max_profile_length: int = setting("CPERSONA_MAX_PROFILE_LENGTH", 2000, "profile cap", minimum=1)
    max_metadata_bytes: int = setting(
        "CPERSONA_MAX_METADATA_BYTES", 8192, "source/metadata JSON cap: refused, not cut", minimum=2
    )
    secrets: SecretsPolicy = setting(
        "CPERSONA_SECRETS",
        "redact",
        "credentials in written text: `redact` (replaced by `[redacted: <kind>]`), `refuse` "
        "(`secret_detected`, nothing stored) or `allow` (kept; docs/secrets-and-forgetting.md)",
    )

    # Embeddings
    embedding_mode: EmbeddingMode = setting(
        "CPERSONA_EMBEDDING_MODE",
        "onnx",
        "`onnx` (in-process model), `http` (an /embed endpoint) or `none` (keyword search only)",
        aliases=("EMBEDDING_MODE",),
    )
    embedding_model: str = setting(
        "CPERSONA_EMBEDDING_MODEL",
        DEFAULT_EMBEDDING_MODEL,
        "model name (a manifest in `cpersona/embed/manifests/`)",
    )
    models_dir: Path = setting_computed(
        "CPERSONA_MODELS_DIR",
        lambda: default_data_dir() / "models",
        "one sub-folder per model",
        default_text="`<user data dir>/models`",
    )
    embedding_dim: int | None = setting(
        "CPERSONA_EMBEDDING_DIM",
        None,
        "Matryoshka truncation (re-normalised)",
        minimum=1,
        default_text="model's",
    )
    embed_max_tokens: int | None = setting(
        "CPERSONA_EMBED_MAX_TOKENS", None, "token cap per text", minimum=1, default_text="manifest's"
    )
    embed_threads: int | None = setting(
        "CPERSONA_EMBED_THREADS",
        None,
        "ONNX Runtime intra-op threads",
        minimum=1,
        default_text="`min(4, cores)`",
    )
    embed_query_overlap: bool | None = setting(
        "CPERSONA_EMBED_QUERY_OVERLAP",
        None,
        "recall embeds its query on a thread of its own while the keyword channels run (the same answer). "
        "`auto`: on with PostgreSQL, whose keyword statements run in the database server beside the "
        "embedding, off with the SQLite file (docs/decisions.md); `true` / `false`: always / never",
        parse=_auto_or_boolean,
        default_text="`auto`",
        value_text="`auto`, `true`, `false`",
    )
    embedding_cache_size: int = setting(
        "CPERSONA_EMBEDDING_CACHE_SIZE",
        DEFAULT_QUERY_CACHE_SIZE,
        "recent recall query texts whose vectors are kept, so a query asked again is not embedded again "
        "(the original CPersona's name and default; the vectors are cleared whenever the model or its "
        "query kernel changes; `0`: none)",
        minimum=0,
    )
    embedding_cache_ttl: float = setting(
        "CPERSONA_EMBEDDING_CACHE_TTL",
        DEFAULT_QUERY_CACHE_TTL,
        "`http` mode: seconds a query vector from the embedding server is kept (that server may be "
        "restarted with another model; the original CPersona's name and default). In-process vectors "
        "never expire: they are cleared when the model changes",
        minimum=0.0,
    )
    embed_query_kernel: QueryKernel = setting(
        "CPERSONA_EMBED_QUERY_KERNEL",
        "auto",
        "`auto`: a model whose weights are stored as int8 embeds recall queries with int8 arithmetic once a "
        "check at load shows it agrees with the float32 graph (cosine ≥ 0.998) and is faster; stored texts "
        "always use the float32 graph ([docs/models.md](docs/models.md#the-query-kernel)). `exact`: queries too. "
        "`int8`: queries take the int8 copy whenever it agrees, however fast (tests and measurements)",
    )
    embed_batch_size: int = setting(
        "CPERSONA_EMBED_BATCH_SIZE",
        16,
        "texts per inference batch (small batches bound the ONNX arena's memory)",
        minimum=1,
    )
    embedding_url: str | None = setting(
        "CPERSONA_EMBEDDING_URL",
        None,
        "/embed endpoint for `http` mode",
        aliases=("EMBEDDING_HTTP_URL",),
        default_text="—",
        value_text="URL",
    )
    embedding_timeout: float = setting("CPERSONA_EMBEDDING_TIMEOUT", 30.0, "seconds per /embed request")
    auto_fetch_model: bool = setting(
        "CPERSONA_AUTO_FETCH_MODEL", True, "`serve` fetches a missing default model before starting"
    )
    model_sharing: ModelSharing = setting(
        "CPERSONA_MODEL_SHARING",
        "auto",
        "`auto`: the processes of one user that load the same `onnx` model share one copy — the first loads "
        "it and serves the others over a Unix socket in `$XDG_RUNTIME_DIR/cpersona` (else "
        "`<tmp>/cpersona-<uid>`, mode 0700); when it exits another takes over "
        "([docs/models.md](docs/models.md#one-model-per-machine)). `off`: every process loads its own copy",
    )
    # Not a setting of its own: where model sharing keeps its lock and socket (from XDG_RUNTIME_DIR).
    runtime_dir: Path = field(default_factory=default_runtime_dir)
    # Not settings either: the user settings file read (cpersona/config/settings_file.py) and, per field set
    # from outside the code, where its value came from ("environment" or the file's path): doctor says.
    settings_file: Path | None = field(default=None, compare=False)
    origins: Mapping[str, str] = field(default_factory=dict, compare=False)
    degraded_advisory: bool = setting(
        "CPERSONA_DEGRADED_ADVISORY", True, "`false` removes `advisory` from recall responses"
    )
    recall_model_wait: float = setting(
        "CPERSONA_RECALL_MODEL_WAIT",
        3.0,
        "seconds a recall waits for a model still loading (a server just started) before it answers "
        "keyword-only with an `advisory`; `0`: never waits",
        minimum=0,
        maximum=60,
    )

    # Queue
    task_retry_delay: float = setting(
        "CPERSONA_TASK_RETRY_DELAY",
        30.0,
        "seconds before a failed back-fill task is retried (tasks are retried until they succeed or their "
        "row is gone)",
    )
    expiry_grace: float = setting(
        "CPERSONA_EXPIRY_GRACE",
        86400.0,
        "seconds an expired memory (`store` `ttl` / `expires_at`) stays in the file, out of recall, before the "
        "queue worker deletes it (docs/secrets-and-forgetting.md#expiry)",
        minimum=0,
    )

    # Transport
    transport: Transport = setting("CPERSONA_TRANSPORT", "stdio", "how MCP clients connect")
    http_host: str = setting("CPERSONA_HTTP_HOST", "127.0.0.1", "HTTP bind address")
    http_port: int = setting("CPERSONA_HTTP_PORT", 8402, "HTTP port", minimum=0)
    auth_token: str | None = setting(
        "CPERSONA_AUTH_TOKEN",
        None,
        "bearer token (at least 16 characters; the `Bearer` scheme is case-insensitive); HTTP refuses to "
        "start without it …",
        secret=True,
        default_text="—",
    )
    allow_unauthenticated_http: bool = setting(
        "CPERSONA_ALLOW_UNAUTHENTICATED_HTTP", False, "… unless this is `true`"
    )
    ui_host: str = setting(
        "CPERSONA_UI_HOST",
        "127.0.0.1",
        "where `cpersona ui` (the browser view) listens; beyond loopback it needs `CPERSONA_AUTH_TOKEN`",
    )
    ui_port: int = setting("CPERSONA_UI_PORT", 8403, "the browser view's port", minimum=0)
    # Host / Origin headers accepted besides the loopback names and the bound host (DNS-rebinding guard).
    http_allowed_hosts: tuple[str, ...] = setting(
        "CPERSONA_HTTP_ALLOWED_HOSTS",
        (),
        "extra `Host` header values HTTP accepts (`name`, `name:port` or `name:*`); every other Host is "
        "refused with 421 (DNS-rebinding guard, on for every bind). Needed when bound beyond loopback: e.g. "
        "`memory.lan:*`",
        default_text="— (loopback names and the bound host)",
    )
    http_allowed_origins: tuple[str, ...] = setting(
        "CPERSONA_HTTP_ALLOWED_ORIGINS",
        (),
        "extra `Origin` values accepted (`https://app.example`, `http://name:*`); a request with any other "
        "Origin is refused with 403; requests without Origin are not browser-initiated and pass",
        default_text="— (`http://` loopback names and the bound host)",
    )
    acl_file: Path | None = setting(
        "CPERSONA_ACL_FILE",
        None,
        "HTTP clients with their own tokens and per-agent `read`/`write`/`admin` grants (TOML; "
        "`cpersona acl add-client`); replaces `CPERSONA_AUTH_TOKEN`; ignored over stdio",
        default_text="—",
    )

    # OAuth 2.1 resource server over streamable HTTP (docs/oauth.md); ACL and shared tokens work beside it
    oauth_issuer: str | None = setting(
        "CPERSONA_OAUTH_ISSUER", None, "OAuth: JWT issuer (`iss`), see docs/oauth.md", default_text="—"
    )
    oauth_jwks_url: str | None = setting("CPERSONA_OAUTH_JWKS_URL", None, "its JWKS URL", default_text="—")
    oauth_resource: str | None = setting(
        "CPERSONA_OAUTH_RESOURCE", None, "this URI (`aud`)", default_text="—"
    )
    oauth_leeway_seconds: int = setting("CPERSONA_OAUTH_LEEWAY_SECONDS", 60, "clock skew allowed", minimum=0)
    oauth_jwks_min_refresh_seconds: float = setting(
        "CPERSONA_OAUTH_JWKS_MIN_REFRESH_SECONDS", 30.0, "JWKS refetch at most this often", minimum=0
    )

    # Long tools as MCP tasks (docs/tasks.md)
    task_result_ttl_seconds: int = setting(
        "CPERSONA_TASK_RESULT_TTL_SECONDS",
        3600,
        "how long a finished task's result (or its cancellation report) stays readable with `tasks/get`; "
        "then the task is forgotten",
        minimum=1,
        maximum=7 * 24 * 3600,
    )

    # The MCP surface (docs/tools.md): the tools offered, how much of each answer its schema checks
    tools: tuple[str, ...] = setting(
        "CPERSONA_TOOLS",
        (),
        "tools offered: `everyday` (store, recall, reconstruct, get_contents, archive_episode, get_profile, "
        "update_profile, get_history, declare_associations, traverse) and/or tool names (`everyday,export_memories`)",
        default_text="`all`",
    )
    output_schemas: OutputSchemaDetail = setting(
        "CPERSONA_OUTPUT_SCHEMAS", "full", "`full`, or `envelope` (top level: cheap for Python SDK 1.x)"
    )

    # Operator context, updates, calibration
    operating_context: bool = setting(
        "CPERSONA_OPERATING_CONTEXT", True, "`off` disables the operator's context file (next row)"
    )
    operating_context_path: Path = setting_computed(
        "CPERSONA_OPERATING_CONTEXT_PATH",
        lambda: Path.home() / ".cpersona" / "operating-context.toml",
        "the operator's TOML context file, served by `get_operating_context` and appended to the "
        "`initialize` instructions",
        default_text="`~/.cpersona/operating-context.toml`",
    )
    update_check: bool = setting(
        "CPERSONA_UPDATE_CHECK",
        True,
        "one request per 24 h to the package index at start-up, cached in `update-check.json` beside the DB; "
        "`false`: no request, no file",
    )
    update_index_url: str = setting(
        "CPERSONA_UPDATE_INDEX_URL",
        "https://pypi.org/pypi",
        "base of the PyPI-style JSON API the update check asks (`<url>/cpersona-embedded/json`)",
        parse=_url_base,
        value_text="URL",
    )
    recall_precision: RecallPrecision = setting(
        "CPERSONA_RECALL_PRECISION", "balanced", "the quality gate's default precision"
    )
    auto_calibrate: bool = setting(
        "CPERSONA_AUTO_CALIBRATE",
        True,
        "self-calibration: each agent's gate is calibrated in the background when it reaches 10 memories and "
        "again each time it grows 1.05× (1.25× for long records, whose calibrated threshold stands down below strict; `false`: only by hand, `cpersona calibrate`)",
    )

    def __post_init__(self) -> None:
        # A Settings built in code is held to the same choices and bounds as one read from the environment.
        for row in settings_table():
            value = getattr(self, row.attr)
            problem = row.problem(value)
            if problem is not None:
                shown = "" if row.var.secret else f"={value!r}"
                raise ConfigError(f"{row.var.name}{shown} ({row.attr}): {problem}")

    @property
    def query_overlap(self) -> bool:
        """Whether recall embeds its query beside the keyword channels (``CPERSONA_EMBED_QUERY_OVERLAP``;
        ``auto``: with PostgreSQL only)."""
        if self.embed_query_overlap is None:
            return self.db_url is not None
        return self.embed_query_overlap

    def with_overrides(self, **changes: Any) -> Settings:
        """A copy with some fields replaced (tests, benchmarks, CLI flags); checked like a new one."""
        return replace(self, **changes)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Read settings from ``env`` (default ``os.environ``); raise ConfigError on bad values.

        A variable that is unset or blank leaves the field's default.
        """
        e = os.environ if env is None else env
        path = settings_file_path(e)
        known = {name for row in settings_table() for name in (row.var.name, *row.var.aliases)}
        try:
            in_file = read_settings_file(path, known)
        except SettingsFileError as exc:
            raise ConfigError(str(exc)) from exc
        values: dict[str, Any] = {}
        origins: dict[str, str] = {}
        for row in settings_table():
            names = (row.var.name, *row.var.aliases)
            raw = original_env.first_set(e, names)  # the environment overrides the file, name by name
            origin = "environment"
            if raw is None:
                raw, origin = original_env.first_set(in_file, names), f"settings file {path}"
            if raw is not None:
                try:
                    values[row.attr] = row.read(raw)
                except ConfigError as exc:
                    if origin == "environment":
                        raise
                    raise ConfigError(f"{exc} (in the {origin})") from exc
                origins[row.attr] = origin
        original_env.notice_names(e, [(row.var.name, row.var.aliases) for row in settings_table()])
        return cls(runtime_dir=default_runtime_dir(e), settings_file=path, origins=origins, **values)


# -- the table, derived from the fields -----------------------------------------------------------


@functools.cache
def settings_table() -> tuple[Row, ...]:
    """Every setting, in field order: the one table the readers, the checks and the README use."""
    hints = get_type_hints(Settings)
    rows = []
    for spec in fields(Settings):
        var = spec.metadata.get(_VAR)
        if var is None:
            continue
        kind, optional, choices = describe_hint(hints[spec.name])
        rows.append(Row(spec.name, var, kind, optional, choices, spec))
    return tuple(rows)
