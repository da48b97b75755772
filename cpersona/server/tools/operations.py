"""Operations: session controls, operating context, update check, health checks"""

from __future__ import annotations

from cpersona.config import Settings
from cpersona.server import calls
from cpersona.server.calls import api, local
from cpersona.server.rules import PROCESS_CONTROL, PROCESS_STATE, READ, Rule
from cpersona.server.tools.common import (
    ADDS,
    KEEPS,
    OVERWRITES,
    READS,
    Hints,
    ToolSpec,
)


def tools(settings: Settings) -> list[ToolSpec]:
    """Operations tools, described for ``settings``."""
    return [
        ToolSpec(
            name="pause_persistence",
            access=PROCESS_CONTROL,
            call=local(calls.pause_persistence),
            title="Pause persistence",
            summary="pause every write of this server process for a TTL (≤ 24 h); `store` answers `persisted: false`",
            description=(
                "Stop this server process saving anything for ttl_seconds (off the record), for every client."
            ),
            hints=ADDS,
        ),
        ToolSpec(
            name="resume_persistence",
            access=PROCESS_CONTROL,
            call=local(calls.resume_persistence),
            title="Resume persistence",
            summary="end a pause now",
            description=("End a pause set by pause_persistence now, so writes are saved again."),
            hints=KEEPS,
        ),
        ToolSpec(
            name="persistence_status",
            access=PROCESS_STATE,
            call=local(calls.persistence_status),
            title="Persistence status",
            summary="whether writes are paused, and until when",
            description=("Whether writes are paused in this server process, and until when."),
            hints=READS,
        ),
        ToolSpec(
            name="get_operating_context",
            access=PROCESS_STATE,
            call=local(calls.get_operating_context),
            title="Operating context",
            summary="the operator's TOML context file (also in the `initialize` instructions); read-only",
            description=(
                "Read the operator's context file (house rules, conventions, who you work for); null when there is none."
            ),
            hints=READS,
        ),
        ToolSpec(
            name="check_update",
            access=Rule(READ, process_wide=True, admin_when="apply"),
            call=local(calls.check_update),
            title="Check for updates",
            summary="newer release or withdrawn version on PyPI (cached 24 h); installs only with `apply: true`",
            description=(
                "Whether a newer cpersona-embedded is on PyPI. apply=true installs it into the server's Python: ask the user first."
            ),
            # Not read-only: apply=true installs software; destructive: an upgrade replaces the installed
            # package in place; idempotent: a second apply finds nothing newer; open world: it reaches
            # the package index on the internet.
            hints=Hints(read_only=False, destructive=True, idempotent=True, open_world=True),
        ),
        ToolSpec(
            name="check_health",
            access=Rule(READ, admin_when="fix"),
            call=api("check_health"),
            title="Check and repair the store",
            summary="named health checks, verdict healthy/degraded/unhealthy, `fix=true` bounded repairs ([docs/health.md](docs/health.md))",
            description=(
                "Run health checks over the database: status and findings. fix=true repairs what it can, never locked rows."
            ),
            hints=OVERWRITES,  # fix=true deletes duplicate copies and cuts oversized rows
        ),
    ]
