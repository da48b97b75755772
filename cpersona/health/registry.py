"""The ``check_health`` registry: named checks, their findings, bounded repairs, the verdict and the run.

No SQL here or in the checks: they read through the store's ``HealthQueries`` (``session.health``) and
repair through its ``HealthRepairs`` (``session.repair``), whichever engine answers them
(cpersona/storage/maintenance_interface.py). Each check detects, repairs when
``fix`` is on (never a locked row, at most ``MAX_REPAIRS_PER_CHECK`` rows per
run), then detects again, so its findings describe what is left. The built-in checks are in
``file_checks.py`` and ``row_checks.py``, registered in run order by ``checks.py``; the list with
their severities and repairs is documented in docs/health.md.

Severities: ``critical`` (the file or the model is broken: recall or writes
are wrong) → status ``unhealthy``; ``warn`` (some rows are wrong or
unsearchable) → ``degraded``; ``info`` never changes the status.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final, Literal

from cpersona.config import Settings
from cpersona.core.text import format_ts, utc_now
from cpersona.core.work import Work
from cpersona.errors import InvalidInput
from cpersona.health.agent_notice import agent_notice
from cpersona.result_types.operations import CheckHealthResult, HealthFinding
from cpersona.runtime.health_state import Condition
from cpersona.storage.interface import Store
from cpersona.storage.maintenance_interface import NotApplicable

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


def now_ts() -> str:
    """Now, in the stored UTC form (a repair's queue time)."""
    return format_ts(utc_now())


def bounded(items: list[Any]) -> list[Any]:
    """At most ``MAX_REPAIRS_PER_CHECK`` of ``items`` (what one run may repair)."""
    return items[:MAX_REPAIRS_PER_CHECK]


def not_applicable(check: str, na: NotApplicable) -> Outcome:
    """The finding of a check the engine has no equivalent for."""
    # The engine has no equivalent: say so (info) rather than report a clean result it never measured.
    return Outcome(
        [Finding(check, INFO, f"not applicable on this storage engine: {na.reason}", fixable=False)],
        details={"applicable": False},
    )


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
