"""The ``check_health`` registry: named checks, their findings, bounded repairs and the verdict.

No SQL here: the checks read through the store's ``HealthQueries`` (``session.health``) and
repair through its ``HealthRepairs`` (``session.repair``), whichever engine answers them
(cpersona/storage/maintenance_interface.py). Each check detects, repairs when
``fix`` is on (never a locked row, at most ``MAX_REPAIRS_PER_CHECK`` rows per
run), then detects again, so its findings describe what is left. The list of
checks with their severities and repairs is documented in docs/health.md.

Severities: ``critical`` (the file or the model is broken: recall or writes
are wrong) → status ``unhealthy``; ``warn`` (some rows are wrong or
unsearchable) → ``degraded``; ``info`` never changes the status.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from typing import Any, Final, Literal

from cpersona.config import Settings
from cpersona.core.text import format_ts, normalise_timestamp, utc_now
from cpersona.core.work import Work
from cpersona.errors import InvalidInput
from cpersona.health.agent_notice import agent_notice
from cpersona.result_types.operations import CheckHealthResult, HealthFinding
from cpersona.runtime import operating_context
from cpersona.runtime.health_state import FAULT, HEALTHY, HINT, UNKNOWN, Condition
from cpersona.storage.interface import Store
from cpersona.storage.maintenance_interface import ROW_TABLES, FtsReport, NotApplicable, SchemaObject

Severity = Literal["critical", "warn", "info"]
CRITICAL: Final = "critical"
WARN: Final = "warn"
INFO: Final = "info"
#: At most this many rows (or objects) are repaired per check per run; the rest is reported as ``remaining``.
MAX_REPAIRS_PER_CHECK = 1000
#: Row refs listed per finding (the count is always complete).
SAMPLE_REFS = 20
#: A task that failed this many times, or waits longer than STALE_TASK_HOURS, is reported as stale.
STALE_TASK_ATTEMPTS = 5
STALE_TASK_HOURS = 24


@dataclass(frozen=True)
class HealthContext:
    """What a check may look at: the store, the settings and the embedding state.

    ``model_id`` / ``dimension`` are the active model's (empty / 0 while no model
    is usable); ``on_queued`` is called after embedding tasks were queued.
    """

    store: Store
    settings: Settings
    agent_id: str | None
    fix: bool
    embedding_mode: str
    condition: Condition
    model_id: str = ""
    dimension: int = 0
    on_queued: Callable[[], None] | None = None
    window_tokens: int | None = None  # tokens the active model reads of a text (None: unknown)


@dataclass
class Finding:
    """One problem found by a check."""

    check: str
    severity: Severity
    message: str
    count: int = 0
    refs: list[str] = field(default_factory=list)
    fix: str = ""  # what fix=true does about it, or how a person fixes it
    # Whether fix=true (`checkup --fix`) repairs it; None = what the check's registry entry says.
    fixable: bool | None = None

    def as_dict(self) -> HealthFinding:
        data: HealthFinding = {
            "check": self.check,
            "severity": self.severity,
            "message": self.message,
            "fixable": bool(self.fixable),
        }
        if self.count:
            data["count"] = self.count
        if self.refs:
            data["refs"] = self.refs
        if self.fix:
            data["fix"] = self.fix
        return data


@dataclass
class Outcome:
    """A check's findings (after any repair) and what its repair did."""

    findings: list[Finding] = field(default_factory=list)
    repaired: dict[str, int] = field(default_factory=dict)  # fixed, remaining, queued, ...
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Check:
    """A registered check: ``run(ctx)`` returns its Outcome; ``repairs`` says what fix=true does."""

    name: str
    description: str
    run: Callable[[HealthContext], Outcome]
    repairs: str = "report only"
    row_level: bool = True  # scoped to agent_id when one is given

    @property
    def fixable(self) -> bool:
        """Whether fix=true repairs this check's findings (a finding may say otherwise for itself)."""
        return self.repairs != "report only"


REGISTRY: dict[str, Check] = {}


def register(check: Check) -> Check:
    """Add a check to the registry (in run order).

    This is the hook later features use: calibration registers a
    ``stale_calibration`` check here once the calibration sidecar exists.
    """
    if check.name in REGISTRY:
        raise ValueError(f"health check {check.name!r} registered twice")
    REGISTRY[check.name] = check
    return check


def check_names() -> list[str]:
    """Every registered check name, in run order."""
    return list(REGISTRY)


def select_checks(names: Sequence[str] | None, registry: Mapping[str, Any] | None = None) -> list[str]:
    """Validate requested names (None or empty = all); InvalidInput names the valid ones."""
    reg = REGISTRY if registry is None else registry
    if names is None or len(names) == 0:
        return list(reg)
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise InvalidInput("checks must be a list of check names")
    unknown = [n for n in names if n not in reg]
    if unknown:
        raise InvalidInput(
            f"unknown check(s) {', '.join(map(repr, unknown))}; valid checks: {', '.join(reg)}"
        )
    wanted = set(names)
    return [n for n in reg if n in wanted]  # registry order: repairs depend on it


def verdict(findings: Sequence[Finding]) -> Literal["healthy", "degraded", "unhealthy"]:
    """healthy | degraded | unhealthy (info never degrades)."""
    severities = {f.severity for f in findings}
    if CRITICAL in severities:
        return "unhealthy"
    if WARN in severities:
        return "degraded"
    return "healthy"


def _now() -> str:
    return format_ts(utc_now())


def _bounded(items: list[Any]) -> list[Any]:
    return items[:MAX_REPAIRS_PER_CHECK]


# -- file-level checks ------------------------------------------------------------------------


def _not_applicable(check: str, na: NotApplicable) -> Outcome:
    # The engine has no equivalent: say so (info) rather than report a clean result it never measured.
    return Outcome(
        [Finding(check, INFO, f"not applicable on this storage engine: {na.reason}", fixable=False)],
        details={"applicable": False},
    )


def _integrity(ctx: HealthContext) -> Outcome:
    with ctx.store.read() as s:
        errors = s.health.integrity_errors()
    if isinstance(errors, NotApplicable):
        return _not_applicable("integrity", errors)
    if not errors:
        return Outcome()
    return Outcome(
        [
            Finding(
                "integrity",
                CRITICAL,
                "integrity check failed: " + "; ".join(errors[:5]),
                count=len(errors),
                fix="restore from a backup; fix=true does not repair this",
            )
        ]
    )


def _schema(ctx: HealthContext) -> Outcome:
    out = Outcome()
    with ctx.store.read() as s:
        version, latest = s.health.schema_version(), s.health.latest_version()
    out.details["schema_version"] = version
    out.details["latest_version"] = latest
    if version < latest:
        out.findings.append(
            Finding(
                "schema",
                CRITICAL,
                f"schema version {version} is older than {latest}",
                fix="start CPersona once (e.g. `cpersona stats`) to migrate the store",
            )
        )
        return out
    if version > latest:
        out.findings.append(
            Finding(
                "schema",
                CRITICAL,
                f"schema version {version} is newer than this CPersona knows ({latest})",
                fix="pip install -U cpersona-embedded",
                fixable=False,
            )
        )
        return out

    def missing() -> list[SchemaObject]:
        with ctx.store.read() as s:
            present = s.health.present_objects()
            return [o for o in s.health.expected_objects() if (o.kind, o.name) not in present]

    gone = missing()
    failed: list[str] = []
    if gone and ctx.fix:
        for obj in _bounded(gone):
            try:
                with ctx.store.write() as w:
                    w.repair.recreate(obj)
            except Exception as exc:  # e.g. a unique index cannot be rebuilt while duplicates remain
                failed.append(f"{obj.name}: {exc}")
        fixed = len(gone) - len(missing())
        gone = missing()
        out.repaired = {"fixed": fixed, "remaining": len(gone)}
    for obj in gone:
        severity: Severity = CRITICAL if obj.kind in ("trigger", "extension") or obj.unique else WARN
        why = {
            "trigger": "the FTS index or vector generation is no longer kept in step",
            "extension": "the queries that need it fail",
            "index": "duplicates can slip in" if obj.unique else "queries are slower",
        }[obj.kind]
        note = next((f for f in failed if f.startswith(obj.name + ":")), "")
        out.findings.append(
            Finding(
                "schema",
                severity,
                f"missing {obj.kind} {obj.name}: {why}" + (f" (recreate failed: {note})" if note else ""),
                fix="fix=true recreates it from the migration DDL",
            )
        )
    with ctx.store.read() as s:  # one indexed query over the superseded rows only
        dangling = s.supersede.dangling(SAMPLE_REFS)
    if dangling:
        out.findings.append(
            Finding(
                "schema",
                WARN,
                f"{len(dangling)}{'+' if len(dangling) >= SAMPLE_REFS else ''} memory(ies) marked superseded by a "
                "memory that no longer exists: recall hides them, get_history ends nowhere",
                count=len(dangling),
                refs=[f"mem:{link.older}" for link in dangling],
                fix="report only: the splice trigger (memories_supersede_splice) prevents this; check it exists, "
                "then update_memory a current memory with supersedes, or export and import the agent",
                fixable=False,
            )
        )
    return out


def _fts(ctx: HealthContext) -> Outcome:
    def detect() -> list[FtsReport] | NotApplicable:
        with ctx.store.read() as s:
            return s.health.keyword_reports(ctx.agent_id, SAMPLE_REFS)

    reports = detect()
    if isinstance(reports, NotApplicable):
        return _not_applicable("fts", reports)
    bad = [r for r in reports if r.missing or r.extra or r.mismatched]
    out = Outcome()
    if bad and ctx.fix:
        for r in bad:
            with ctx.store.write() as w:
                w.repair.rebuild_keyword_index(r.index)
        again = detect()
        still = [r for r in again if r.missing or r.extra or r.mismatched] if isinstance(again, list) else []
        out.repaired = {"fixed": len(bad) - len(still), "remaining": len(still)}
        bad = still
    for r in bad:
        prefix = "mem" if r.table == "memories" else "ep"
        out.findings.append(
            Finding(
                "fts",
                WARN,
                f"{r.index} is out of step with {r.table}: {r.missing} row(s) not indexed, "
                f"{r.mismatched} indexed with old text, {r.extra} stale entr(ies); keyword search misses them",
                count=r.missing + r.mismatched + r.extra,
                refs=[f"{prefix}:{i}" for i in r.sample or []],
                fix="fix=true rebuilds the index (FTS5 'rebuild')",
            )
        )
    return out


def _embedding(ctx: HealthContext) -> Outcome:
    c = ctx.condition
    out = Outcome(details={"state": c.state, "mode": ctx.embedding_mode})
    if c.state == HEALTHY:
        return out
    severities: dict[str, Severity] = {FAULT: CRITICAL, UNKNOWN: INFO, HINT: INFO}
    severity = severities.get(c.state, WARN)
    text = f"embedding state {c.state}" + (f" ({c.kind})" if c.kind else "") + f": {c.reason}"
    if c.evidence:
        text += f" [evidence: {c.evidence}]"
    out.findings.append(Finding("embedding", severity, text, fix=c.runbook))
    return out


def _operating_context(ctx: HealthContext) -> Outcome:
    # The file is served to every client; a broken one silently drops the operator's rules (docs/tools.md#get_operating_context).
    problem = operating_context.problem(ctx.settings)
    out = Outcome(
        details={"path": str(ctx.settings.operating_context_path), "enabled": ctx.settings.operating_context}
    )
    if problem:
        out.findings.append(
            Finding(
                "operating_context",
                WARN,
                f"operating context not served: {problem}",
                fix="report only: correct the TOML file (get_operating_context shows the "
                "error and line), or set CPERSONA_OPERATING_CONTEXT=off",
            )
        )
    return out


# -- row-level checks ---------------------------------------------------------------------------


def _vectors(ctx: HealthContext) -> Outcome:
    model = ctx.model_id or None
    dim = ctx.dimension or None
    out = Outcome()
    # Queuing needs a configured model; in mode none rows are queued when one is configured.
    can_queue = ctx.embedding_mode != "none" and ctx.condition.state != HINT
    if ctx.fix and can_queue:
        queued = 0
        budget = MAX_REPAIRS_PER_CHECK
        with ctx.store.write() as w:
            for table in ROW_TABLES:
                ids = w.health.unqueued_vector_rows(table, ctx.agent_id, model, dim, budget)
                queued += w.repair.queue_embeddings(table, ids, _now())
                budget -= len(ids)
        with ctx.store.read() as s:
            remaining = sum(
                len(s.health.unqueued_vector_rows(t, ctx.agent_id, model, dim, 1)) for t in ROW_TABLES
            )
        out.repaired = {"queued": queued, "fixed": queued, "remaining": remaining}
        if queued and ctx.on_queued is not None:
            ctx.on_queued()
    with ctx.store.read() as s:
        reports = [s.health.vector_report(t, ctx.agent_id, model, dim) for t in ROW_TABLES]
    out.details = {
        r.table: {"missing": r.missing, "other_model": r.other_model, "queued": r.queued} for r in reports
    }
    total = sum(r.missing + r.other_model for r in reports)
    queued_total = sum(r.queued for r in reports)
    if not total:
        return out
    if not can_queue:
        out.findings.append(
            Finding(
                "vectors",
                INFO,
                f"{total} row(s) have no vector: embeddings are off, recall is keyword-only",
                count=total,
                fix="configure a model (CPERSONA_EMBEDDING_MODE=onnx); rows are then back-filled",
                fixable=False,
            )
        )
        return out
    unqueued = total - queued_total
    if unqueued:
        which = "without a vector or with another model's/dimension's vector" if model else "without a vector"
        out.findings.append(
            Finding(
                "vectors",
                WARN,
                f"{unqueued} row(s) {which} and not queued for embedding; vector search cannot find them",
                count=unqueued,
                fix="fix=true queues them for re-embedding",
            )
        )
    if queued_total:
        out.findings.append(
            Finding(
                "vectors",
                INFO,
                f"{queued_total} row(s) are queued for embedding (back-filled when the model is ready)",
                count=queued_total,
                fixable=False,  # nothing to repair: the worker back-fills them
            )
        )
    return out


def _dimensions(ctx: HealthContext) -> Outcome:
    with ctx.store.read() as session:
        shapes = session.health.vector_shapes(ctx.agent_id)
    out = Outcome(details={"vectors": shapes})
    by_model: dict[str | None, set[int | None]] = {}
    for s in shapes:
        by_model.setdefault(s["model"], set()).add(s["dimension"])
    bad_length = sum(s["bad_length"] for s in shapes)
    fix = "run the vectors check with fix=true (or `cpersona reembed`) to re-embed them with the active model"
    if bad_length:
        out.findings.append(
            Finding(
                "dimensions",
                WARN,
                f"{bad_length} stored vector(s) have a byte length that does not match their dimension",
                count=bad_length,
                fix=fix,
            )
        )
    for model, dims in by_model.items():
        if len(dims) > 1:
            out.findings.append(
                Finding(
                    "dimensions",
                    WARN,
                    f"model {model} has vectors of several dimensions "
                    f"({', '.join(str(d) for d in sorted(d or 0 for d in dims))})",
                    fix=fix,
                )
            )
    if ctx.model_id:
        drift = sum(
            s["rows"] for s in shapes if s["model"] == ctx.model_id and s["dimension"] != ctx.dimension
        )
        if drift:
            out.findings.append(
                Finding(
                    "dimensions",
                    WARN,
                    f"{drift} vector(s) of the active model {ctx.model_id} are not {ctx.dimension}-d",
                    count=drift,
                    fix=fix,
                )
            )
    return out


def _duplicates(ctx: HealthContext) -> Outcome:
    def detect() -> tuple[int, list[list[tuple[int, bool]]]]:
        with ctx.store.read() as s:
            return s.health.duplicate_groups(ctx.agent_id, MAX_REPAIRS_PER_CHECK)

    total, groups = detect()
    out = Outcome()
    if total and ctx.fix:
        doomed: list[int] = []
        for group in groups:
            # Keep the oldest locked copy if any, else the oldest; delete the other unlocked copies.
            keep = next((i for i, locked in group if locked), group[0][0])
            doomed += [i for i, locked in group if i != keep and not locked]
        with ctx.store.write() as w:
            deleted = w.repair.delete_unlocked_memories(_bounded(doomed))
        total, groups = detect()
        out.repaired = {"fixed": deleted, "remaining": total}
    if total:
        refs = [f"mem:{i}" for g in groups for i, _ in g][:SAMPLE_REFS]
        out.findings.append(
            Finding(
                "duplicates",
                WARN,
                f"{total} group(s) of identical memories in one scope "
                "(the unique index was missing when they were written)",
                count=total,
                refs=refs,
                fix="fix=true deletes the newer unlocked copies (locked copies are kept)",
            )
        )
    return out


def _oversized(ctx: HealthContext) -> Outcome:
    cap, pcap = ctx.settings.max_content_length, ctx.settings.max_profile_length

    def detect() -> tuple[int, list[tuple[int, int, bool]], int, list[tuple[str, str, str, int]]]:
        with ctx.store.read() as s:
            return (
                *s.health.oversized_memories(ctx.agent_id, cap, MAX_REPAIRS_PER_CHECK),
                *s.health.oversized_profiles(ctx.agent_id, pcap, MAX_REPAIRS_PER_CHECK),
            )

    n_mem, mems, n_prof, profs = detect()
    out = Outcome()
    if (n_mem or n_prof) and ctx.fix:
        fixed = 0
        with ctx.store.write() as w:
            cut: list[int] = []
            for rid, _, locked in mems:
                if not locked and w.repair.cut_memory(rid, cap):
                    cut.append(rid)
            fixed += len(cut)
            if ctx.embedding_mode != "none":
                w.repair.queue_embeddings("memories", cut, _now())
            for key in profs[: max(0, MAX_REPAIRS_PER_CHECK - fixed)]:
                fixed += w.repair.cut_profile(*key[:3], pcap)
        n_mem, mems, n_prof, profs = detect()
        out.repaired = {"fixed": fixed, "remaining": n_mem + n_prof}
        if fixed and ctx.on_queued is not None:
            ctx.on_queued()
    if n_mem:
        n_locked = sum(1 for m in mems if m[2])
        out.findings.append(
            Finding(
                "oversized",
                WARN,
                f"{n_mem} memor(ies) longer than CPERSONA_MAX_CONTENT_LENGTH "
                f"({cap})" + (f"; {n_locked} locked (never cut)" if n_locked else ""),
                count=n_mem,
                refs=[f"mem:{m[0]}" for m in mems][:SAMPLE_REFS],
                fix="fix=true cuts unlocked ones to the cap and re-embeds them",
            )
        )
    if n_prof:
        out.findings.append(
            Finding(
                "oversized",
                WARN,
                f"{n_prof} profile(s) longer than CPERSONA_MAX_PROFILE_LENGTH ({pcap})",
                count=n_prof,
                refs=[f"profile:{p[0]}/{p[1]}/{p[2]}" for p in profs][:SAMPLE_REFS],
                fix="fix=true cuts them to the cap",
            )
        )
    return out


def _empty(ctx: HealthContext) -> Outcome:
    with ctx.store.read() as s:
        count, refs = s.health.empty_rows(ctx.agent_id, SAMPLE_REFS)
    if not count:
        return Outcome()
    return Outcome(
        [
            Finding(
                "empty_content",
                WARN,
                f"{count} memor(ies)/episode(s) with empty text",
                count=count,
                refs=refs,
                fix="report only: review and delete them with delete_memory / delete_episode",
            )
        ]
    )


def _invalid_json(ctx: HealthContext) -> Outcome:
    def detect() -> tuple[int, list[tuple[int, str, str, bool]]] | NotApplicable:
        with ctx.store.read() as s:
            return s.health.invalid_json_rows(ctx.agent_id, MAX_REPAIRS_PER_CHECK)

    found = detect()
    if isinstance(found, NotApplicable):
        return _not_applicable("invalid_json", found)
    count, rows = found
    out = Outcome()
    if count and ctx.fix:
        with ctx.store.write() as w:
            fixed = sum(
                w.repair.wrap_invalid_json(rid, col, raw) for rid, col, raw, locked in rows if not locked
            )
        again = detect()
        count, rows = again if not isinstance(again, NotApplicable) else (0, [])
        out.repaired = {"fixed": fixed, "remaining": count}
    if count:
        out.findings.append(
            Finding(
                "invalid_json",
                WARN,
                f"{count} source/metadata value(s) are not a JSON object (reading those rows fails)",
                count=count,
                refs=sorted({f"mem:{r[0]}" for r in rows})[:SAMPLE_REFS],
                fix='fix=true replaces each with {"invalid_json": "<the original text>"} '
                "(locked rows are left alone)",
            )
        )
    return out


def _timestamps(ctx: HealthContext) -> Outcome:
    def detect() -> tuple[int, list[tuple[str, Any, str, str, bool]]]:
        with ctx.store.read() as s:
            return s.health.malformed_timestamps(ctx.agent_id, MAX_REPAIRS_PER_CHECK)

    count, rows = detect()
    out = Outcome()
    if count and ctx.fix:
        fixed = 0
        with ctx.store.write() as w:
            for table, key, column, value, locked in rows:
                if locked:
                    continue
                try:
                    new = normalise_timestamp(value)
                except InvalidInput:
                    continue  # not a time at all: left for a person (reported below)
                fixed += w.repair.set_timestamp(table, key, column, value, new)
        count, rows = detect()
        out.repaired = {"fixed": fixed, "remaining": count}
    if count:
        refs = sorted({f"{'mem' if t == 'memories' else 'ep'}:{k}" for t, k, *_ in rows if t != "profiles"})
        out.findings.append(
            Finding(
                "timestamps",
                WARN,
                f"{count} timestamp(s) not in the stored UTC form (they sort and compare wrongly)",
                count=count,
                refs=refs[:SAMPLE_REFS],
                fix="fix=true rewrites parseable ones as UTC (no zone = UTC); locked rows "
                "and unparseable values are left for a person",
            )
        )
    return out


def _window(ctx: HealthContext) -> Outcome:
    window = ctx.settings.max_memories
    if window is None:  # the default: the whole corpus is searched by vector
        return Outcome(details={"window": None, "rows_outside": {}})
    with ctx.store.read() as s:
        outside = s.health.rows_outside_window(ctx.agent_id, ctx.model_id or None, window)
    out = Outcome(details={"window": window, "rows_outside": outside})
    total = sum(n for tables in outside.values() for n in tables.values())
    if total:
        out.findings.append(
            Finding(
                "vector_window",
                INFO,
                f"{total} vector row(s) fall outside the "
                f"CPERSONA_MAX_MEMORIES={window} scan window (keyword search still finds them)",
                count=total,
                fix="raise CPERSONA_MAX_MEMORIES to search them by vector",
            )
        )
    return out


def _tasks(ctx: HealthContext) -> Outcome:
    before = format_ts(utc_now() - timedelta(hours=STALE_TASK_HOURS))
    out = Outcome()

    def detect() -> tuple[int, list[int], int, list[dict[str, Any]]]:
        with ctx.store.read() as s:
            n_orphans, orphans = (
                (0, []) if ctx.agent_id is not None else s.health.orphan_tasks(MAX_REPAIRS_PER_CHECK)
            )
            return (
                n_orphans,
                orphans,
                *s.health.failing_tasks(ctx.agent_id, STALE_TASK_ATTEMPTS, before, SAMPLE_REFS),
            )

    n_orphans, orphans, n_failing, failing = detect()
    if n_orphans and ctx.fix:
        with ctx.store.write() as w:
            fixed = w.repair.delete_tasks(orphans)
        n_orphans, orphans, n_failing, failing = detect()
        out.repaired = {"fixed": fixed, "remaining": n_orphans}
    if n_orphans:
        out.findings.append(
            Finding(
                "tasks",
                WARN,
                f"{n_orphans} queued task(s) target rows that no longer exist",
                count=n_orphans,
                fix="fix=true removes them",
            )
        )
    if n_failing:
        last = next((t["last_error"] for t in failing if t.get("last_error")), None)
        out.findings.append(
            Finding(
                "tasks",
                WARN,
                f"{n_failing} task(s) failed {STALE_TASK_ATTEMPTS}+ times or "
                f"wait for more than {STALE_TASK_HOURS} h" + (f"; last error: {last}" if last else ""),
                count=n_failing,
                refs=[f"{'mem' if t['table'] == 'memories' else 'ep'}:{t['target_id']}" for t in failing],
                fix="report only: fix the embedding model (see the embedding check); the worker retries them",
                fixable=False,
            )
        )
    return out


for _check in (
    Check(
        "integrity",
        "the engine's structural check (SQLite integrity_check; PostgreSQL amcheck)",
        _integrity,
        row_level=False,
    ),
    Check("embedding", "the embedding model's state (a fault carries its fix)", _embedding, row_level=False),
    Check("duplicates", "identical memories in one scope", _duplicates, "deletes newer unlocked copies"),
    Check(
        "schema",
        "schema version, triggers, indexes and extensions",
        _schema,
        "recreates missing triggers and indexes",
        row_level=False,
    ),
    Check("oversized", "content / profile over the caps", _oversized, "cuts unlocked rows to the cap"),
    Check("empty_content", "memories or episodes with empty text", _empty),
    Check(
        "invalid_json",
        "source/metadata that is not a JSON object",
        _invalid_json,
        'wraps the text as {"invalid_json": ...}',
    ),
    Check("timestamps", "timestamps not in the stored UTC form", _timestamps, "normalises parseable ones"),
    Check(
        "fts",
        "trigram and word indexes vs their tables (count and text)",
        _fts,
        "rebuilds the index",
        row_level=False,
    ),
    Check("vectors", "rows without a vector of the active model", _vectors, "queues them for embedding"),
    Check("dimensions", "vector dimension drift and malformed vectors", _dimensions),
    Check("vector_window", "rows beyond the CPERSONA_MAX_MEMORIES scan window", _window),
    Check("tasks", "orphaned and long-failing queue tasks", _tasks, "removes orphaned tasks"),
):
    register(_check)
register(
    Check(
        "operating_context",
        "the operator's context file parses",
        _operating_context,
        row_level=False,
    )
)


# -- running ------------------------------------------------------------------------------------


def storage_stats(ctx: HealthContext) -> dict[str, Any]:
    """Rows per agent, project and channel, the store's size figures and the queue depth."""
    with ctx.store.read() as s:
        stats = s.health.distributions(ctx.agent_id)
        stats.update(s.health.storage_facts())
        stats["queue_depth"] = s.health.queue_depth()
    stats["db_path"] = ctx.store.location
    return stats


def _checks_so_far(ran: list[str], repairs: dict[str, Any]) -> dict[str, Any]:
    """What a cancelled ``check_health`` reports: the checks that ran and the repairs they committed."""
    return {"checks_run": ran, "repairs": dict(repairs)}


def run_checks(
    ctx: HealthContext,
    names: Sequence[str] | None = None,
    *,
    fix_requested: bool | None = None,
    work: Work | None = None,
) -> CheckHealthResult:
    """Run the selected checks; the response shape is documented in docs/health.md.

    ``work`` gets progress after each check and may cancel before the next: the repairs of the
    checks that ran stay (each is committed whole), the rest do not run.
    """
    selected = select_checks(names)
    findings: list[Finding] = []
    per_check: dict[str, Any] = {}
    repairs: dict[str, Any] = {}
    work = work or Work()
    for done, name in enumerate(selected):
        if done:
            work.report(done, len(selected), "checks", f"{name} next")
            work.checkpoint(
                "check_health",
                "the checks before it ran and their repairs stay; the others did not run",
                partial(_checks_so_far, selected[:done], repairs),
            )
        check = REGISTRY[name]
        outcome = check.run(ctx)
        for finding in outcome.findings:
            if finding.fixable is None:
                finding.fixable = check.fixable
        findings += outcome.findings
        per_check[name] = {
            "status": verdict(outcome.findings),
            "findings": len(outcome.findings),
            **outcome.details,
        }
        if outcome.repaired:
            repairs[name] = outcome.repaired
    counts = {s: sum(1 for f in findings if f.severity == s) for s in (CRITICAL, WARN, INFO)}
    result: CheckHealthResult = {
        "ok": True,
        "status": verdict(findings),
        "agent_id": ctx.agent_id,
        "fix": ctx.fix,
        "checks_run": selected,
        "counts": counts,
        "findings": [f.as_dict() for f in findings],
        "checks": per_check,
        "repairs": repairs,
        "max_repairs_per_check": MAX_REPAIRS_PER_CHECK,
        "stats": storage_stats(ctx),
    }
    if fix_requested and not ctx.fix:
        result["fix_downgraded"] = True
    notice = agent_notice(ctx.store.session().admin, ctx.agent_id)
    if notice:
        result["notice"] = notice  # "healthy (agent 'typo')" must not pass for an agent that has nothing
    return result
