"""Health checks without a ``Memory``: report-only on a read-only view of the store, and the doctor summary.

A ``Memory`` migrates the store and starts background threads (writes), so the
report-only ``cpersona checkup`` never builds one: it opens the store read-only
(``open_store(read_only=True)``: the SQLite file with ``mode=ro`` + ``query_only``,
or PostgreSQL sessions with ``default_transaction_read_only``) and tries to load the
model in this thread (that reads model files, never the database).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cpersona.config import Settings
from cpersona.embed.model_hint import model_hint
from cpersona.embed.runtime.base import EmbeddingBackend, FaultKind
from cpersona.errors import DatabaseUnavailable
from cpersona.health.checks import HealthContext, run_checks, select_checks
from cpersona.result_types.operations import CheckHealthResult
from cpersona.runtime import operating_context
from cpersona.runtime.health_state import HealthState
from cpersona.storage import open_store, redact_url
from cpersona.storage.interface import Store

#: Checks that need the embedding model's state (others run without loading it).
MODEL_CHECKS = {"embedding", "vectors", "dimensions", "vector_window"}


def probe_model(settings: Settings) -> tuple[EmbeddingBackend, HealthState, bool]:
    """Try to load the configured model once, in this thread; returns (backend, state, usable)."""
    from cpersona.embed.runtime.factory import create_backend
    from cpersona.embed.runtime.service import EmbeddingService

    health = HealthState(advisory_enabled=False)
    backend = create_backend(settings)
    service = EmbeddingService(backend, health)
    usable = service.try_load()
    return backend, health, usable


def report_only(
    settings: Settings, agent_id: str | None = None, checks: Sequence[str] | None = None
) -> CheckHealthResult:
    """Run the registry without writing anything (raises InvalidInput for unknown check names)."""
    selected = select_checks(checks)
    db = _open_read_only(settings)
    backend: EmbeddingBackend | None = None
    try:
        health = HealthState(advisory_enabled=False)
        usable = False
        if MODEL_CHECKS & set(selected):
            backend, health, usable = probe_model(settings)
        ctx = HealthContext(
            store=db,
            settings=settings,
            agent_id=agent_id,
            fix=False,
            embedding_mode=settings.embedding_mode,
            condition=health.condition,
            model_id=backend.model_id if backend is not None and usable else "",
            dimension=backend.dimension if backend is not None and usable else 0,
        )
        return run_checks(ctx, selected)
    finally:
        if backend is not None:
            backend.close()
        db.close()


def _open_read_only(settings: Settings) -> Store:
    return open_store(
        settings.db_url or settings.db_path,
        pg_vector_index=settings.pg_vector_index,
        read_only=True,
        vector_float32=settings.vector_float32,
    )


def _database(settings: Settings, next_steps: list[str]) -> dict[str, Any]:
    """The doctor's database section: size, schema and queue, from a read-only view of the store."""
    if settings.db_url is None and not settings.db_path.is_file():
        next_steps.append("no database yet: it is created on the first `cpersona serve` or `cpersona store`")
        return {"exists": False}
    try:
        store = _open_read_only(settings)
    except DatabaseUnavailable as exc:
        next_steps.append(f"the database cannot be opened: {exc}")
        return {"exists": False, "problem": str(exc)}
    try:
        with store.read() as s:
            version, latest = s.health.schema_version(), s.health.latest_version()
            facts = s.health.storage_facts()
            database: dict[str, Any] = {
                "exists": True,
                "engine": "postgresql" if settings.db_url else "sqlite",
                "bytes": facts["db_bytes"],
                "wal_bytes": facts["wal_bytes"],
                "schema_version": version,
                "latest_schema_version": latest,
                "free_pages": facts["freelist_count"],
                "queue_depth": s.health.queue_depth(),
            }
        if facts.get("not_applicable"):
            database["not_applicable"] = facts["not_applicable"]
    finally:
        store.close()
    if version < latest:
        next_steps.append("the schema is old: start CPersona once (`cpersona stats`) to migrate it")
    return database


def doctor_report(settings: Settings) -> dict[str, Any]:
    """What is configured, what works and what to do next (never includes the auth token or a password)."""
    out: dict[str, Any] = {"db_path": _location(settings)}
    next_steps: list[str] = []
    out["database"] = _database(settings, next_steps)

    backend, health, usable = probe_model(settings)
    condition = health.condition
    try:
        embedding: dict[str, Any] = {"mode": settings.embedding_mode}
        if settings.embedding_mode == "onnx":
            from cpersona.embed.registry import ManifestError, model_dir

            embedding["model"] = settings.embedding_model
            try:
                installed_at = model_dir(settings, settings.embedding_model)
                embedding["installed"] = installed_at.is_dir()
                embedding["model_dir"] = str(installed_at)
            except ManifestError:
                embedding["installed"] = False
        elif settings.embedding_mode == "http":
            embedding["url"] = settings.embedding_url
        embedding["loaded"] = usable
        embedding["state"] = condition.state
        if usable:
            embedding.update(model_id=backend.model_id, dimension=backend.dimension)
            if settings.embedding_mode == "onnx":
                from cpersona.embed.runtime.query_kernel import expected

                embedding["query_kernel"] = expected(settings.embed_query_kernel)
        elif condition.reason:
            embedding.update(problem=condition.reason, evidence=condition.evidence, fix=condition.runbook)
            if condition.kind == FaultKind.MODEL_MISSING and settings.embedding_mode == "onnx":
                # One step per route (and per installed, unselected model) reads better than one paragraph.
                hint = model_hint(settings.embedding_model, settings.models_dir)
                embedding.update(other_installed=list(hint.installed), fix_steps=list(hint.steps))
                next_steps.extend(hint.steps)
            else:
                next_steps.append(condition.runbook)
    finally:
        backend.close()
    out["embedding"] = embedding
    out["transport"] = {
        "transport": settings.transport,
        "http": f"{settings.http_host}:{settings.http_port}",
        "auth_token": "set" if settings.auth_token else "not set",
        "allow_unauthenticated_http": settings.allow_unauthenticated_http,
        "acl_file": str(settings.acl_file) if settings.acl_file else None,
    }
    if (
        settings.transport == "streamable-http"
        and not settings.auth_token
        and not settings.allow_unauthenticated_http
    ):
        next_steps.append(
            "HTTP refuses to start without CPERSONA_AUTH_TOKEN (or CPERSONA_ALLOW_UNAUTHENTICATED_HTTP=true)"
        )
    context_problem = operating_context.problem(settings)
    out["operating_context"] = {
        "path": str(settings.operating_context_path),
        "enabled": settings.operating_context,
        "problem": context_problem,
    }
    if context_problem:
        next_steps.append(f"the operating context is not served: {context_problem}")
    if out["database"].get("queue_depth"):
        next_steps.append("tasks are queued: they drain while the server runs with a working model")
    next_steps.append("run `cpersona checkup` for the full health check (`--fix` repairs)")
    next_steps.append(f"common problems and their fixes: {TROUBLESHOOTING}")
    out["next_steps"] = next_steps
    out["settings"] = settings_origins(settings)
    return out


#: The page answering the common questions (empty recall, a loading model, backups, locks).
TROUBLESHOOTING = "docs/troubleshooting.md (README: Troubleshooting)"


def settings_origins(settings: Settings) -> dict[str, Any]:
    """The settings file and every setting not at its default, with where its value came from."""
    from cpersona.config import settings_table

    chosen = []
    for row in settings_table():
        origin = settings.origins.get(row.attr)
        if origin is None:
            continue
        value = getattr(settings, row.attr)
        shown = "(set)" if row.var.secret else _shown(value)
        chosen.append({"name": row.var.name, "value": shown, "origin": origin})
    file = settings.settings_file
    return {
        "file": str(file) if file is not None else None,
        "file_exists": bool(file is not None and file.is_file()),
        "chosen": chosen,
    }


def _location(settings: Settings) -> str:
    return str(settings.db_path) if settings.db_url is None else redact_url(settings.db_url)


def _shown(value: Any) -> str:
    # As it is written in the environment or the file: true/false, a comma-separated list.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)
