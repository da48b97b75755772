"""The built-in file-level checks: the engine's integrity, schema objects, keyword indexes, the
embedding model and the operator's context file (docs/health.md). Registered by ``checks.py``."""

from __future__ import annotations

from cpersona.health.registry import (
    CRITICAL,
    INFO,
    SAMPLE_REFS,
    WARN,
    Finding,
    HealthContext,
    Outcome,
    Severity,
    bounded,
    not_applicable,
)
from cpersona.runtime import operating_context
from cpersona.runtime.health_state import FAULT, HEALTHY, HINT, UNKNOWN
from cpersona.storage.maintenance_interface import FtsReport, NotApplicable, SchemaObject


def check_integrity(ctx: HealthContext) -> Outcome:
    with ctx.store.read() as s:
        errors = s.health.integrity_errors()
    if isinstance(errors, NotApplicable):
        return not_applicable("integrity", errors)
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


def check_schema(ctx: HealthContext) -> Outcome:
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
        for obj in bounded(gone):
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


def check_fts(ctx: HealthContext) -> Outcome:
    def detect() -> list[FtsReport] | NotApplicable:
        with ctx.store.read() as s:
            return s.health.keyword_reports(ctx.agent_id, SAMPLE_REFS)

    reports = detect()
    if isinstance(reports, NotApplicable):
        return not_applicable("fts", reports)
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


def check_embedding(ctx: HealthContext) -> Outcome:
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


def check_operating_context(ctx: HealthContext) -> Outcome:
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
