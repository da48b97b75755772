"""``deep_check``: a semantic pass over one agent's memories. Every check reports; none repairs.

The findings are judgement calls (is this source really anonymous, are these
two memories the same fact?), so the agent or a person decides: ``fix=true``
is accepted for symmetry with check_health and changes nothing. Thresholds
are module constants, documented in docs/health.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from cpersona.core.text import parse_ts, utc_now
from cpersona.health.checks import INFO, WARN, Finding, HealthContext, select_checks, verdict
from cpersona.result_types.operations import DeepCheckResult
from cpersona.storage.maintenance_interface import NotApplicable

#: Memories whose trimmed text is shorter than this are "very short".
SHORT_CONTENT_CHARS = 12
#: A profile is stale when not updated for this many days while this many memories arrived since.
STALE_PROFILE_DAYS = 30
STALE_PROFILE_NEW_MEMORIES = 20
#: Cosine at or above which two memories are merge candidates.
NEAR_DUPLICATE_COSINE = 0.95
#: Only the agent's newest memories with an active-model vector are compared (O(n^2) work).
NEAR_DUPLICATE_WINDOW = 2000
#: Merge-candidate pairs listed at most.
NEAR_DUPLICATE_PAIRS = 50
SAMPLE_REFS = 20


@dataclass(frozen=True)
class DeepCheck:
    """A registered deep check."""

    name: str
    description: str
    run: Callable[[HealthContext], tuple[list[Finding], dict[str, Any]]]


#: The report-only checks that count rows and name a sample: (what the count says, ref prefix, fix).
_SAMPLED = {
    "anonymous_sources": (
        "memor(ies) have no source or a source without id/name (source_id filters cannot find them)",
        "mem",
        "report only: pass message.source {type, id, name} when storing",
    ),
    "short_content": (
        f"memor(ies) shorter than {SHORT_CONTENT_CHARS} characters (little to recall them by)",
        "mem",
        "report only: update_memory them with context, or delete_memory",
    ),
    "orphaned_episodes": (
        "episode(s) summarise a time range with no memory in their scope",
        "ep",
        "report only: keep them (summaries still recall) or delete_episode",
    ),
}


def _sampled(check: str, found: tuple[int, list[int]]) -> tuple[list[Finding], dict[str, Any]]:
    """The finding of a count-and-sample check (none when nothing was counted)."""
    count, ids = found
    if not count:
        return [], {}
    what, prefix, fix = _SAMPLED[check]
    refs = [f"{prefix}:{i}" for i in ids]
    return [Finding(check, INFO, f"{count} {what}", count=count, refs=refs, fix=fix)], {}


def _anonymous(ctx: HealthContext) -> tuple[list[Finding], dict[str, Any]]:
    assert ctx.agent_id is not None
    with ctx.store.read() as s:
        found = s.health.anonymous_sources(ctx.agent_id, SAMPLE_REFS)
    if isinstance(found, NotApplicable):
        return [
            Finding("anonymous_sources", INFO, f"not applicable on this storage engine: {found.reason}")
        ], {"applicable": False}
    return _sampled("anonymous_sources", found)


def _short(ctx: HealthContext) -> tuple[list[Finding], dict[str, Any]]:
    assert ctx.agent_id is not None
    with ctx.store.read() as s:
        return _sampled(
            "short_content", s.health.short_memories(ctx.agent_id, SHORT_CONTENT_CHARS, SAMPLE_REFS)
        )


def _stale_profile(ctx: HealthContext) -> tuple[list[Finding], dict[str, Any]]:
    assert ctx.agent_id is not None
    cutoff = utc_now() - timedelta(days=STALE_PROFILE_DAYS)
    findings = []
    with ctx.store.read() as s:
        profiles = s.health.profiles_with_newer_memories(ctx.agent_id)
    for p in profiles:
        try:
            old = parse_ts(p["updated_at"]) < cutoff
        except ValueError:
            old = True  # a malformed time is check_health's business; treat it as old here
        if old and p["newer_memories"] >= STALE_PROFILE_NEW_MEMORIES:
            findings.append(
                Finding(
                    "stale_profile",
                    WARN,
                    f"profile (project {p['project_id']!r}, user "
                    f"{p['user_id']!r}) last updated {p['updated_at']}, {p['newer_memories']} "
                    "memories arrived since",
                    count=p["newer_memories"],
                    fix="report only: review it with get_profile and update_profile",
                )
            )
    return findings, {}


def _orphaned(ctx: HealthContext) -> tuple[list[Finding], dict[str, Any]]:
    assert ctx.agent_id is not None
    with ctx.store.read() as s:
        return _sampled("orphaned_episodes", s.health.orphaned_episodes(ctx.agent_id, SAMPLE_REFS))


def _near_duplicates(ctx: HealthContext) -> tuple[list[Finding], dict[str, Any]]:
    assert ctx.agent_id is not None
    if not ctx.model_id:
        return [
            Finding(
                "near_duplicates",
                INFO,
                "skipped: no embedding model is active, so vectors cannot be compared",
                fix="see the embedding check of check_health",
            )
        ], {"compared": 0}
    with ctx.store.read() as s:
        rows = s.health.recent_vectors(ctx.agent_id, ctx.model_id, ctx.dimension, NEAR_DUPLICATE_WINDOW)
    details: dict[str, Any] = {"compared": len(rows), "threshold": NEAR_DUPLICATE_COSINE}
    if len(rows) < 2:
        return [], details
    import numpy as np  # only this check needs it; keeps numpy out of the server's start-up

    from cpersona.storage.vectors import from_blob

    ids = np.array([r[0] for r in rows])
    matrix = np.vstack([from_blob(r[1]) for r in rows]).astype(np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    matrix /= norms
    sims = matrix @ matrix.T
    upper = np.triu(sims >= NEAR_DUPLICATE_COSINE, k=1)
    a_idx, b_idx = np.nonzero(upper)
    order = np.argsort(-sims[a_idx, b_idx], kind="stable")
    pairs: list[dict[str, Any]] = [
        {
            "refs": [f"mem:{int(ids[b_idx[k]])}", f"mem:{int(ids[a_idx[k]])}"],
            "cosine": round(float(sims[a_idx[k], b_idx[k]]), 4),
        }
        for k in order[:NEAR_DUPLICATE_PAIRS]
    ]
    details["pairs"] = pairs
    if not pairs:
        return [], details
    return [
        Finding(
            "near_duplicates",
            INFO,
            f"{len(a_idx)} pair(s) of memories with cosine >= "
            f"{NEAR_DUPLICATE_COSINE} (merge candidates; see checks.near_duplicates.pairs)",
            count=int(len(a_idx)),
            refs=[r for p in pairs[:10] for r in p["refs"]],
            fix="report only: keep one (update_memory) and delete_memory the other",
        )
    ], details


DEEP_REGISTRY: dict[str, DeepCheck] = {
    c.name: c
    for c in (
        DeepCheck("anonymous_sources", "memories without source id/name", _anonymous),
        DeepCheck("short_content", f"memories under {SHORT_CONTENT_CHARS} characters", _short),
        DeepCheck("stale_profile", "profiles not updated while memories keep arriving", _stale_profile),
        DeepCheck("orphaned_episodes", "episodes with no memory in their scope and time range", _orphaned),
        DeepCheck("near_duplicates", "memory pairs with nearly the same vector", _near_duplicates),
    )
}
# Hook: calibration adds "stale_calibration" here once the calibration sidecar exists.


def deep_check_names() -> list[str]:
    """Every deep check name, in run order."""
    return list(DEEP_REGISTRY)


def run_deep_checks(ctx: HealthContext, names: Sequence[str] | None = None) -> DeepCheckResult:
    """Run the selected deep checks for ``ctx.agent_id`` (required); reports only."""
    assert ctx.agent_id is not None  # the service requires it (Maintenance.deep_check)
    selected = select_checks(names, DEEP_REGISTRY)
    findings: list[Finding] = []
    per_check: dict[str, Any] = {}
    for name in selected:
        found, details = DEEP_REGISTRY[name].run(ctx)
        findings += found
        per_check[name] = {"status": verdict(found), "findings": len(found), **details}
    return {
        "ok": True,
        "status": verdict(findings),
        "agent_id": ctx.agent_id,
        "fix": ctx.fix,
        "fixed": 0,  # every deep check reports only
        "checks_run": selected,
        "counts": {s: sum(1 for f in findings if f.severity == s) for s in ("critical", WARN, INFO)},
        "findings": [f.as_dict() for f in findings],
        "checks": per_check,
    }
