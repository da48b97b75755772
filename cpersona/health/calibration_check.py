"""The ``calibration`` health check (and the ``stale_calibration`` deep check): calibrations that no
longer match the active model or scoring, or are old, and a calibration state that cannot be saved
(docs/health.md). The state is the store's (``Store.calibration_states()``: the SQLite sidecar, or the
PostgreSQL table).

Registered through ``cpersona.health.checks.register`` when the health package is imported. Report
only: a fingerprint mismatch is recalibrated in the background at the next start (or now with
``calibrate_threshold``); an old calibration is re-run with ``calibrate_threshold``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from cpersona.core.text import format_ts, utc_now
from cpersona.health.checks import INFO, WARN, Check, Finding, HealthContext, Outcome, register
from cpersona.health.deep_checks import DEEP_REGISTRY, DeepCheck
from cpersona.retrieval.sidecar import SCORING_VERSION, fingerprint

#: A calibration older than this is reported (info): the corpus has likely changed since.
STALE_CALIBRATION_DAYS = 30


def _findings(ctx: HealthContext, name: str) -> tuple[list[Finding], dict[str, Any]]:
    states = ctx.store.calibration_states()
    agents = states.agents()
    unsaved = states.problem()
    if ctx.agent_id is not None:
        agents = {a: e for a, e in agents.items() if a == ctx.agent_id}
    calibrated = {a: e for a, e in agents.items() if e.get("fingerprint")}
    current = fingerprint(SCORING_VERSION, ctx.model_id, ctx.dimension) if ctx.model_id else None
    cutoff = format_ts(utc_now() - timedelta(days=STALE_CALIBRATION_DAYS))
    mismatched = sorted(
        a for a, e in calibrated.items() if current is not None and e["fingerprint"] != current
    )
    old = sorted(
        a for a, e in calibrated.items() if a not in mismatched and str(e.get("created_at", "")) < cutoff
    )
    details: dict[str, Any] = {
        "calibrated_agents": len(calibrated),
        "fingerprint_mismatch": mismatched,
        "older_than_days": old,
        "location": states.location,
        "unsaved": unsaved,
    }
    findings = []
    if unsaved:
        findings.append(
            Finding(
                name,
                WARN,
                f"calibration state cannot be saved ({unsaved}): calibrations stay in force only in the "
                "server process that made them, and recall is never failed for it",
                fix="make the folder of the database (or the calibration_state table) writable; the next "
                "calibration saves every pending entry",
            )
        )
    if mismatched:
        findings.append(
            Finding(
                name,
                WARN,
                f"{len(mismatched)} agent(s) calibrated for another model, dimension or scoring version "
                f"(now {ctx.model_id}, {ctx.dimension}-d, v{SCORING_VERSION}); their recall runs the heuristic gate: "
                + ", ".join(map(repr, mismatched[:10])),
                count=len(mismatched),
                fix="recalibrated in the background at the next start; or call calibrate_threshold(agent_id) now",
            )
        )
    if old:
        findings.append(
            Finding(
                name,
                INFO,
                f"{len(old)} calibration(s) older than {STALE_CALIBRATION_DAYS} days: "
                + ", ".join(map(repr, old[:10])),
                count=len(old),
                fix="call calibrate_threshold(agent_id) to re-measure the corpus",
            )
        )
    return findings, details


def _check(ctx: HealthContext) -> Outcome:
    findings, details = _findings(ctx, "calibration")
    return Outcome(findings, details=details)


register(
    Check(
        "calibration",
        "calibrations for another model/dimension/scoring version, or older than "
        f"{STALE_CALIBRATION_DAYS} days",
        _check,
    )
)
DEEP_REGISTRY["stale_calibration"] = DeepCheck(
    "stale_calibration",
    "the agent's calibration is for another model or old",
    lambda ctx: _findings(ctx, "stale_calibration"),
)
