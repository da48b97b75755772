"""Every setting the server reads, in one typed place.

Settings come from environment variables named as in SPEC.md. They are read
once (``Settings.from_env``) and passed down; nothing else in the package reads
``os.environ`` for configuration.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import platformdirs

APP_NAME = "cpersona"
#: The model CPERSONA_EMBEDDING_MODEL names when unset (SPEC §7); licence CC BY-NC 4.0.
DEFAULT_EMBEDDING_MODEL = "jina-v5-nano"


class ConfigError(ValueError):
    """An environment variable holds a value that cannot be used."""


def default_data_dir() -> Path:
    """Per-user data directory (e.g. ``~/.local/share/cpersona`` on Linux)."""
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def default_runtime_dir(env: Mapping[str, str] | None = None) -> Path:
    """Per-user directory for the model-sharing lock and socket: ``$XDG_RUNTIME_DIR/cpersona``.

    Without XDG_RUNTIME_DIR (macOS, containers), ``<temp dir>/cpersona-<uid>``; the
    sharing code creates it with mode 0700 and refuses one it does not own.
    """
    e = os.environ if env is None else env
    xdg = (e.get("XDG_RUNTIME_DIR") or "").strip()
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / APP_NAME
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(tempfile.gettempdir()) / f"{APP_NAME}-{uid}"


def _get(env: Mapping[str, str], *names: str) -> str | None:
    # The first name is the canonical CPERSONA_ one; later names are aliases it overrides.
    for name in names:
        value = env.get(name)
        if value is not None and value.strip() != "":
            return value.strip()
    return None


def _bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = _get(env, name)
    if raw is None:
        return default
    lowered = raw.lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ConfigError(f"{name}={raw!r} is not a boolean (use true/false)")


def _int(env: Mapping[str, str], name: str, default: int, minimum: int | None = None) -> int:
    raw = _get(env, name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ConfigError(f"{name}={raw!r} is not an integer") from exc
    if minimum is not None and value < minimum:
        raise ConfigError(f"{name}={value} must be >= {minimum}")
    return value


def _opt_int(env: Mapping[str, str], name: str) -> int | None:
    raw = _get(env, name)
    if raw is None:
        return None
    return _int(env, name, 0, minimum=1)


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = _get(env, name)
    if raw is None:
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise ConfigError(f"{name}={raw!r} is not a number") from exc


def _share(env: Mapping[str, str], name: str, default: float) -> float:
    """A finite number from 0 to 1."""
    value = _float(env, name, default)
    if not 0.0 <= value <= 1.0:  # also false for NaN
        raise ConfigError(f"{name}={value!r} must be between 0 and 1")
    return value


def _csv(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    """A comma-separated list (blank items dropped; unset → empty)."""
    raw = _get(env, name) or ""
    return tuple(item.strip() for item in raw.split(",") if item.strip())


def _choice(env: Mapping[str, str], names: tuple[str, ...], default: str, allowed: set[str]) -> str:
    raw = _get(env, *names)
    if raw is None:
        return default
    value = raw.lower()
    if value not in allowed:
        raise ConfigError(f"{names[0]}={raw!r}: expected one of {', '.join(sorted(allowed))}")
    return value


def _db_url(env: Mapping[str, str]) -> str | None:
    raw = _get(env, "CPERSONA_DB_URL")
    if raw is None:
        return None
    if not raw.startswith(("postgresql://", "postgres://")):
        raise ConfigError("CPERSONA_DB_URL must be a postgresql:// URL (leave it unset for the SQLite file)")
    return raw


@dataclass(frozen=True)
class Settings:
    """Typed configuration. Field comments name the environment variable."""

    # Storage
    db_path: Path = field(default_factory=lambda: default_data_dir() / "memory.db")  # CPERSONA_DB_PATH
    # CPERSONA_DB_URL: postgresql://... selects the PostgreSQL engine (then db_path is unused for data)
    db_url: str | None = None
    pg_vector_index: str = "hnsw"  # CPERSONA_PG_VECTOR_INDEX: hnsw | exact (PostgreSQL vector search)
    # CPERSONA_VECTOR_FLOAT32: memory | file. The SQLite vector index scans int8 codes, then rescores the best
    # few hundred rows in float32 read from its own copy (memory) or from the file (file: a quarter of the RAM)
    vector_float32: str = "memory"
    export_dir: Path | None = (
        None  # CPERSONA_EXPORT_DIR: MCP export/import confinement (default <db dir>/exports)
    )

    # Retrieval
    max_memories: int | None = (
        None  # CPERSONA_MAX_MEMORIES: vector scan window per table (None: whole corpus)
    )
    recall_mode: str = "rsf"  # CPERSONA_RECALL_MODE: rsf | rrf | cascade (rsf: docs/decisions.md)
    rrf_k: int = 60  # CPERSONA_RRF_K
    # CPERSONA_CONTEXT_WEIGHT: under rsf, the turns next to the best hits get this share of their
    # score (the context channel, docs/retrieval.md); 0 turns it off
    context_weight: float = 0.6
    # CPERSONA_QUERY_DATES: read unambiguous date phrases in the query ("in May 2023", "先週") as a
    # likely time cue (a boost, never a filter; docs/retrieval.md "Time cues"); false turns it off
    query_dates: bool = True
    episode_penalty_enabled: bool = True  # CPERSONA_EPISODE_PENALTY_ENABLED
    episode_decay_rate: float = 0.01  # CPERSONA_EPISODE_DECAY_RATE (per hour)
    episode_decay_floor: float = 0.5  # CPERSONA_EPISODE_DECAY_FLOOR
    recent_recall_window_min: float = 5.0  # CPERSONA_RECENT_RECALL_WINDOW_MIN
    recent_recall_penalty: float = 0.7  # CPERSONA_RECENT_RECALL_PENALTY
    fused_gate_enabled: bool = True  # CPERSONA_FUSED_GATE_ENABLED: the per-query quality gate
    confidence_enabled: bool = False  # CPERSONA_CONFIDENCE_ENABLED
    autocut_min_results: int = 3  # CPERSONA_AUTOCUT_MIN_RESULTS
    recall_preview_chars: int = 500  # CPERSONA_RECALL_PREVIEW_CHARS

    # Content caps
    max_content_length: int = 16000  # CPERSONA_MAX_CONTENT_LENGTH
    max_profile_length: int = 2000  # CPERSONA_MAX_PROFILE_LENGTH
    max_metadata_bytes: int = 8192  # CPERSONA_MAX_METADATA_BYTES: source/metadata JSON cap (refused, not cut)

    # Embeddings
    embedding_mode: str = "onnx"  # CPERSONA_EMBEDDING_MODE (alias EMBEDDING_MODE): onnx | http | none
    embedding_model: str = DEFAULT_EMBEDDING_MODEL  # CPERSONA_EMBEDDING_MODEL
    models_dir: Path = field(default_factory=lambda: default_data_dir() / "models")  # CPERSONA_MODELS_DIR
    embedding_dim: int | None = None  # CPERSONA_EMBEDDING_DIM: Matryoshka truncation
    embed_max_tokens: int | None = None  # CPERSONA_EMBED_MAX_TOKENS (default: the manifest's)
    embed_threads: int | None = None  # CPERSONA_EMBED_THREADS: ONNX intra-op threads (default: min(4, cores))
    embed_batch_size: int = 16  # CPERSONA_EMBED_BATCH_SIZE: small batches bound the ONNX arena
    embedding_url: str | None = None  # CPERSONA_EMBEDDING_URL (alias EMBEDDING_HTTP_URL)
    embedding_timeout: float = 30.0  # CPERSONA_EMBEDDING_TIMEOUT: seconds per HTTP request
    auto_fetch_model: bool = True  # CPERSONA_AUTO_FETCH_MODEL: serve fetches a missing default model
    # CPERSONA_MODEL_SHARING: auto | off. auto: processes of one user with the same onnx model share
    # one loaded copy (the first loads it and serves the others over a Unix socket).
    model_sharing: str = "auto"
    runtime_dir: Path = field(
        default_factory=default_runtime_dir
    )  # $XDG_RUNTIME_DIR/cpersona (lock + socket)
    degraded_advisory: bool = True  # CPERSONA_DEGRADED_ADVISORY

    # Queue
    task_retry_delay: float = 30.0  # CPERSONA_TASK_RETRY_DELAY (seconds)

    # Transport
    transport: str = "stdio"  # CPERSONA_TRANSPORT: stdio | streamable-http
    http_host: str = "127.0.0.1"  # CPERSONA_HTTP_HOST
    http_port: int = 8402  # CPERSONA_HTTP_PORT
    auth_token: str | None = None  # CPERSONA_AUTH_TOKEN
    acl_file: Path | None = None  # CPERSONA_ACL_FILE
    allow_unauthenticated_http: bool = False  # CPERSONA_ALLOW_UNAUTHENTICATED_HTTP
    # Host / Origin headers accepted besides the loopback names and the bound host (DNS-rebinding guard).
    http_allowed_hosts: tuple[str, ...] = ()  # CPERSONA_HTTP_ALLOWED_HOSTS (comma-separated)
    http_allowed_origins: tuple[str, ...] = ()  # CPERSONA_HTTP_ALLOWED_ORIGINS (comma-separated)

    # The browser view (cpersona ui)
    ui_host: str = "127.0.0.1"  # CPERSONA_UI_HOST
    ui_port: int = 8403  # CPERSONA_UI_PORT

    # Operator context, updates, calibration
    operating_context: bool = True  # CPERSONA_OPERATING_CONTEXT=off disables
    operating_context_path: Path = field(
        default_factory=lambda: Path.home() / ".cpersona" / "operating-context.toml"
    )  # CPERSONA_OPERATING_CONTEXT_PATH
    update_check: bool = True  # CPERSONA_UPDATE_CHECK
    update_index_url: str = (
        "https://pypi.org/pypi"  # CPERSONA_UPDATE_INDEX_URL: JSON API base (tests: loopback)
    )
    recall_precision: str = "balanced"  # CPERSONA_RECALL_PRECISION
    auto_calibrate: bool = True  # CPERSONA_AUTO_CALIBRATE (self-calibration in the background)

    def with_overrides(self, **changes: Any) -> Settings:
        """A copy with some fields replaced (tests, benchmarks, CLI flags)."""
        return replace(self, **changes)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Read settings from ``env`` (default ``os.environ``); raise ConfigError on bad values."""
        e = os.environ if env is None else env
        base = cls()
        db_raw = _get(e, "CPERSONA_DB_PATH")
        models_raw = _get(e, "CPERSONA_MODELS_DIR")
        export_raw = _get(e, "CPERSONA_EXPORT_DIR")
        acl_raw = _get(e, "CPERSONA_ACL_FILE")
        ctx_path_raw = _get(e, "CPERSONA_OPERATING_CONTEXT_PATH")
        settings = cls(
            db_path=Path(db_raw).expanduser() if db_raw else base.db_path,
            db_url=_db_url(e),
            pg_vector_index=_choice(
                e, ("CPERSONA_PG_VECTOR_INDEX",), base.pg_vector_index, {"hnsw", "exact"}
            ),
            vector_float32=_choice(e, ("CPERSONA_VECTOR_FLOAT32",), base.vector_float32, {"memory", "file"}),
            export_dir=Path(export_raw).expanduser() if export_raw else None,
            max_memories=_opt_int(e, "CPERSONA_MAX_MEMORIES") or base.max_memories,
            recall_mode=_choice(e, ("CPERSONA_RECALL_MODE",), base.recall_mode, {"rrf", "rsf", "cascade"}),
            rrf_k=_int(e, "CPERSONA_RRF_K", base.rrf_k, minimum=1),
            context_weight=_share(e, "CPERSONA_CONTEXT_WEIGHT", base.context_weight),
            query_dates=_bool(e, "CPERSONA_QUERY_DATES", base.query_dates),
            episode_penalty_enabled=_bool(
                e, "CPERSONA_EPISODE_PENALTY_ENABLED", base.episode_penalty_enabled
            ),
            episode_decay_rate=_float(e, "CPERSONA_EPISODE_DECAY_RATE", base.episode_decay_rate),
            episode_decay_floor=_float(e, "CPERSONA_EPISODE_DECAY_FLOOR", base.episode_decay_floor),
            recent_recall_window_min=_float(
                e, "CPERSONA_RECENT_RECALL_WINDOW_MIN", base.recent_recall_window_min
            ),
            recent_recall_penalty=_float(e, "CPERSONA_RECENT_RECALL_PENALTY", base.recent_recall_penalty),
            fused_gate_enabled=_bool(e, "CPERSONA_FUSED_GATE_ENABLED", base.fused_gate_enabled),
            confidence_enabled=_bool(e, "CPERSONA_CONFIDENCE_ENABLED", base.confidence_enabled),
            autocut_min_results=_int(e, "CPERSONA_AUTOCUT_MIN_RESULTS", base.autocut_min_results, minimum=1),
            recall_preview_chars=_int(
                e, "CPERSONA_RECALL_PREVIEW_CHARS", base.recall_preview_chars, minimum=1
            ),
            max_content_length=_int(e, "CPERSONA_MAX_CONTENT_LENGTH", base.max_content_length, minimum=1),
            max_profile_length=_int(e, "CPERSONA_MAX_PROFILE_LENGTH", base.max_profile_length, minimum=1),
            max_metadata_bytes=_int(e, "CPERSONA_MAX_METADATA_BYTES", base.max_metadata_bytes, minimum=2),
            embedding_mode=_choice(
                e,
                ("CPERSONA_EMBEDDING_MODE", "EMBEDDING_MODE"),
                base.embedding_mode,
                {"onnx", "http", "none"},
            ),
            embedding_model=_get(e, "CPERSONA_EMBEDDING_MODEL") or base.embedding_model,
            models_dir=Path(models_raw).expanduser() if models_raw else base.models_dir,
            embedding_dim=_opt_int(e, "CPERSONA_EMBEDDING_DIM"),
            embed_max_tokens=_opt_int(e, "CPERSONA_EMBED_MAX_TOKENS"),
            embed_threads=_opt_int(e, "CPERSONA_EMBED_THREADS"),
            embed_batch_size=_int(e, "CPERSONA_EMBED_BATCH_SIZE", base.embed_batch_size, minimum=1),
            embedding_url=_get(e, "CPERSONA_EMBEDDING_URL", "EMBEDDING_HTTP_URL"),
            embedding_timeout=_float(e, "CPERSONA_EMBEDDING_TIMEOUT", base.embedding_timeout),
            auto_fetch_model=_bool(e, "CPERSONA_AUTO_FETCH_MODEL", base.auto_fetch_model),
            model_sharing=_choice(e, ("CPERSONA_MODEL_SHARING",), base.model_sharing, {"auto", "off"}),
            runtime_dir=default_runtime_dir(e),
            degraded_advisory=_bool(e, "CPERSONA_DEGRADED_ADVISORY", base.degraded_advisory),
            task_retry_delay=_float(e, "CPERSONA_TASK_RETRY_DELAY", base.task_retry_delay),
            transport=_choice(e, ("CPERSONA_TRANSPORT",), base.transport, {"stdio", "streamable-http"}),
            http_host=_get(e, "CPERSONA_HTTP_HOST") or base.http_host,
            http_port=_int(e, "CPERSONA_HTTP_PORT", base.http_port, minimum=0),
            auth_token=_get(e, "CPERSONA_AUTH_TOKEN"),
            acl_file=Path(acl_raw).expanduser() if acl_raw else None,
            allow_unauthenticated_http=_bool(e, "CPERSONA_ALLOW_UNAUTHENTICATED_HTTP", False),
            ui_host=_get(e, "CPERSONA_UI_HOST") or base.ui_host,
            ui_port=_int(e, "CPERSONA_UI_PORT", base.ui_port, minimum=0),
            http_allowed_hosts=_csv(e, "CPERSONA_HTTP_ALLOWED_HOSTS"),
            http_allowed_origins=_csv(e, "CPERSONA_HTTP_ALLOWED_ORIGINS"),
            operating_context=_bool(e, "CPERSONA_OPERATING_CONTEXT", base.operating_context),
            operating_context_path=Path(ctx_path_raw).expanduser()
            if ctx_path_raw
            else base.operating_context_path,
            update_check=_bool(e, "CPERSONA_UPDATE_CHECK", base.update_check),
            update_index_url=(_get(e, "CPERSONA_UPDATE_INDEX_URL") or base.update_index_url).rstrip("/"),
            recall_precision=_choice(
                e, ("CPERSONA_RECALL_PRECISION",), base.recall_precision, {"strict", "balanced", "lenient"}
            ),
            auto_calibrate=_bool(e, "CPERSONA_AUTO_CALIBRATE", base.auto_calibrate),
        )
        return settings
