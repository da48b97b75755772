"""Operations: session controls, operating context, update check, health checks"""

from __future__ import annotations

from cpersona import result_types
from cpersona.config import Settings
from cpersona.server import calls
from cpersona.server.calls import api
from cpersona.server.rules import PROCESS_CONTROL, PROCESS_STATE, READ, Rule
from cpersona.server.tools.common import (
    ADDS,
    AGENT_ID,
    DEEP_CHECKS,
    HEALTH_CHECKS,
    KEEPS,
    OVERWRITES,
    READS,
    Hints,
    ToolSpec,
    bool_schema,
    object_schema,
    string_schema,
)


def tools(settings: Settings) -> list[ToolSpec]:
    """Operations tools, described for ``settings``."""
    return [
        ToolSpec(
            name="pause_persistence",
            access=PROCESS_CONTROL,
            call=calls.pause_persistence,
            results=(result_types.PauseResult,),
            title="Pause persistence",
            summary="pause every write of this server process for a TTL (≤ 24 h); `store` answers `persisted: false`",
            description=(
                "Stop this server process writing for ttl_seconds (off the record): store skips, other writes fail with persistence_paused, recall records nothing. Affects every client of this process."
            ),
            input_schema=object_schema(
                {
                    "ttl_seconds": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 86400,
                        "description": "How long the pause lasts, in seconds (1 to 86400).",
                    }
                },
                required=["ttl_seconds"],
            ),
            hints=ADDS,
        ),
        ToolSpec(
            name="resume_persistence",
            access=PROCESS_CONTROL,
            call=calls.resume_persistence,
            results=(result_types.ResumeResult,),
            title="Resume persistence",
            summary="end a pause now",
            description=("End a pause set by pause_persistence now, so writes are saved again."),
            input_schema=object_schema({}),
            hints=KEEPS,
        ),
        ToolSpec(
            name="persistence_status",
            access=PROCESS_STATE,
            call=calls.persistence_status,
            results=(result_types.PersistenceState,),
            title="Persistence status",
            summary="whether writes are paused, and until when",
            description=("Whether writes are paused in this server process, and until when."),
            input_schema=object_schema({}),
            hints=READS,
        ),
        ToolSpec(
            name="get_operating_context",
            access=PROCESS_STATE,
            call=calls.get_operating_context,
            results=(result_types.OperatingContextResult,),
            title="Operating context",
            summary="the operator's TOML context file (also in the `initialize` instructions); read-only",
            description=(
                "Read the operator's context file (house rules, conventions, who you work for), whole or one section. Read-only; null when there is none."
            ),
            input_schema=object_schema({"section": string_schema("One top-level table, e.g. 'rules'.")}),
            hints=READS,
        ),
        ToolSpec(
            name="check_update",
            access=Rule(READ, process_wide=True, admin_when="apply"),
            call=calls.check_update,
            results=(result_types.CheckUpdateResult,),
            title="Check for updates",
            summary="newer release or withdrawn version on PyPI (cached 24 h); installs only with `apply: true`",
            description=(
                "Whether a newer cpersona-embedded is released on PyPI (asked at most daily). apply=true installs it into the server's Python: ask the user first."
            ),
            input_schema=object_schema({"apply": bool_schema("Install the newer release with pip.")}),
            # Not read-only: apply=true installs software; destructive: an upgrade replaces the installed
            # package in place; idempotent: a second apply finds nothing newer; open world: it reaches
            # the package index on the internet.
            hints=Hints(read_only=False, destructive=True, idempotent=True, open_world=True),
        ),
        ToolSpec(
            name="check_health",
            results=(result_types.CheckHealthResult,),
            access=Rule(READ, admin_when="fix"),
            call=api("check_health"),
            title="Check and repair the store",
            summary="named health checks, verdict healthy/degraded/unhealthy, `fix=true` bounded repairs ([docs/health.md](docs/health.md))",
            description=(
                "Run health checks over the database: status and findings. fix=true repairs what the checks can, never locked rows (docs/health.md lists each check)."
            ),
            input_schema=object_schema(
                {
                    "agent_id": string_schema("Only this agent's rows."),
                    "fix": bool_schema("Repair what can be repaired."),
                    "checks": {
                        "type": "array",
                        "items": {"type": "string", "enum": list(HEALTH_CHECKS)},
                        "description": "Run only these checks (default: all).",
                    },
                }
            ),
            hints=OVERWRITES,  # fix=true deletes duplicate copies and cuts oversized rows
        ),
        ToolSpec(
            name="deep_check",
            results=(result_types.DeepCheckResult,),
            access=Rule(READ, admin_when="fix"),
            call=api("deep_check"),
            title="Semantic review of an agent's memories",
            summary="semantic review of one agent: anonymous sources, short content, stale profile, orphaned episodes, near-duplicates (report only)",
            description=(
                "A slower, semantic pass over one agent's memories (near duplicates, short or anonymous rows, a stale profile). Reports only."
            ),
            input_schema=object_schema(
                {
                    "agent_id": AGENT_ID,
                    "fix": bool_schema("Accepted; deep checks change nothing."),
                    "checks": {
                        "type": "array",
                        "items": {"type": "string", "enum": list(DEEP_CHECKS)},
                        "description": "Run only these deep checks (default: all).",
                    },
                },
                required=["agent_id"],
            ),
            hints=READS,
        ),
    ]
