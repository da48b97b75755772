"""The built-in row-level checks: vectors, dimensions, duplicates, oversized, empty and invalid rows,
timestamps, the scan window and the queue's tasks (docs/health.md). Registered by ``checks.py``."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from cpersona.core.text import format_ts, normalise_timestamp, utc_now
from cpersona.errors import InvalidInput
from cpersona.health.registry import (
    INFO,
    MAX_REPAIRS_PER_CHECK,
    SAMPLE_REFS,
    STALE_TASK_ATTEMPTS,
    STALE_TASK_HOURS,
    WARN,
    Finding,
    HealthContext,
    Outcome,
    bounded,
    not_applicable,
    now_ts,
)
from cpersona.runtime.health_state import HINT
from cpersona.storage.maintenance_interface import ROW_TABLES, NotApplicable


def check_vectors(ctx: HealthContext) -> Outcome:
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
                queued += w.repair.queue_embeddings(table, ids, now_ts())
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


def check_dimensions(ctx: HealthContext) -> Outcome:
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


def check_duplicates(ctx: HealthContext) -> Outcome:
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
            deleted = w.repair.delete_unlocked_memories(bounded(doomed))
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


def check_oversized(ctx: HealthContext) -> Outcome:
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
                w.repair.queue_embeddings("memories", cut, now_ts())
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


def check_empty(ctx: HealthContext) -> Outcome:
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


def check_invalid_json(ctx: HealthContext) -> Outcome:
    def detect() -> tuple[int, list[tuple[int, str, str, bool]]] | NotApplicable:
        with ctx.store.read() as s:
            return s.health.invalid_json_rows(ctx.agent_id, MAX_REPAIRS_PER_CHECK)

    found = detect()
    if isinstance(found, NotApplicable):
        return not_applicable("invalid_json", found)
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


def check_timestamps(ctx: HealthContext) -> Outcome:
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


def check_window(ctx: HealthContext) -> Outcome:
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


def check_tasks(ctx: HealthContext) -> Outcome:
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
