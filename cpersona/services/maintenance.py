"""Health checks and repairs as a service: ``check_health`` and ``deep_check`` (docs/health.md).

The checks themselves live in ``cpersona.health.checks`` / ``deep_checks`` (registry, verdict)
with their SQL in ``cpersona.storage``. This service binds them to the running process: the
embedding state, the back-fill worker to wake after queueing, and the persistence pause,
which turns ``fix=true`` into a report-only run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated

from cpersona import arguments as arg
from cpersona.core.public import Tool, public
from cpersona.core.validation import boolean, optional_str, required_str
from cpersona.core.work import Work
from cpersona.errors import InvalidInput
from cpersona.health.agent_notice import agent_notice
from cpersona.health.checks import HealthContext, check_names, run_checks
from cpersona.health.deep_checks import deep_check_names, run_deep_checks
from cpersona.result_types.operations import CheckHealthResult, DeepCheckResult
from cpersona.runtime import persistence
from cpersona.services.core import Core, CoreService


class UnknownCheck(InvalidInput):
    """A check name outside the registry; the failure lists the valid names."""

    def __init__(self, message: str, valid: list[str]) -> None:
        super().__init__(message)
        self.valid = valid

    def details(self) -> dict[str, object]:
        """The failure response names every valid check."""
        return {"valid_checks": self.valid}


class Maintenance(CoreService):
    """Runs the health-check registries for one ``Memory``."""

    def __init__(self, core: Core, on_queued: Callable[[], None]) -> None:
        super().__init__(core)
        self.on_queued = on_queued

    def _context(self, agent_id: str | None, fix: bool) -> HealthContext:
        return HealthContext(
            store=self.storage,
            settings=self.settings,
            agent_id=agent_id,
            fix=fix,
            embedding_mode=self.embeddings.backend.mode,
            condition=self.health.condition,
            model_id=self.embeddings.model_id,
            dimension=self.embeddings.dimension,
            on_queued=self.on_queued,
            window_tokens=self.embeddings.window_tokens,
        )

    @public
    def check_health(
        self,
        agent_id: Annotated[str | None, arg.Field(description="Only this agent's rows.")] = None,
        *,
        fix: Annotated[bool, arg.Field(description="Repair what can be repaired.")] = False,
        checks: Annotated[
            Sequence[arg.HealthCheckName] | None,
            arg.Field(description="Only these (default: all)."),
        ] = None,
        work: Work | None = None,
    ) -> CheckHealthResult:
        """Run the health-check registry (docs/health.md); ``fix`` repairs, bounded, never locked rows.

        While persistence is paused, ``fix=true`` runs report-only and says so (``fix_downgraded``).
        ``work`` (``cpersona.core.work``) gets progress per check and may cancel between checks.
        """
        agent = optional_str(agent_id, "agent_id")
        wanted = boolean(fix, "fix")
        allowed, note = persistence.effective_fix(wanted)
        try:
            result = run_checks(self._context(agent, allowed), checks, fix_requested=wanted, work=work)
        except InvalidInput as exc:
            raise UnknownCheck(str(exc), check_names()) from exc
        if note:
            result["note"] = note
        return result

    @public(
        tool=Tool(
            title="Semantic review of an agent's memories",
            summary="semantic review of one agent: anonymous sources, short content, stale profile, "
            "orphaned episodes, near-duplicates (report only)",
            description="A slower, semantic pass over one agent's memories (near duplicates, short or "
            "anonymous rows, a stale profile). Reports only.",
            access="read",
            admin_when="fix",
            hints="reads",
        )
    )
    def deep_check(
        self,
        agent_id: str,
        *,
        fix: Annotated[bool, arg.Field(description="Accepted; deep checks change nothing.")] = False,
        checks: Annotated[
            Sequence[arg.DeepCheckName] | None,
            arg.Field(description="Only these (default: all)."),
        ] = None,
    ) -> DeepCheckResult:
        """Semantic pass over one agent's memories (docs/health.md); every deep check reports only."""
        agent = required_str(agent_id, "agent_id")
        wanted = boolean(fix, "fix")
        allowed, note = persistence.effective_fix(wanted)
        try:
            result = run_deep_checks(self._context(agent, allowed), checks)
        except InvalidInput as exc:
            raise UnknownCheck(str(exc), deep_check_names()) from exc
        if note:
            result["note"] = note
        notice = agent_notice(self.storage.session().admin, agent)
        if notice:
            result["notice"] = notice
        return result
