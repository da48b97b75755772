"""Operations: session controls, operating context, update check, health checks"""

from __future__ import annotations

from cpersona import shapes
from cpersona.config import Settings
from cpersona.server import calls
from cpersona.server.calls import api
from cpersona.server.rules import PROCESS_CONTROL, PROCESS_STATE, READ, Rule
from cpersona.server.schemas.common import (
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
            results=(shapes.PauseResult,),
            title="Pause persistence",
            summary="pause every write of this server process for a TTL (≤ 24 h); `store` answers `persisted: false`",
            description=(
                "Stop this server process from writing anything for ttl_seconds (1 to 86400, i.e. at most 24 h), "
                "e.g. for an off-the-record session. While paused: store answers result 'skipped' with "
                "persisted: false and saves nothing; other writes (archive_episode, update_memory, update_profile, "
                "lock/unlock, deletes) fail with error_code 'persistence_paused' and persisted: false; recall "
                "works but records nothing. The pause ends by itself when the TTL runs out, or with "
                "resume_persistence. Pausing again replaces the window. Affects every client of this process."
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
            results=(shapes.ResumeResult,),
            title="Resume persistence",
            summary="end a pause now",
            description=(
                "End a pause set by pause_persistence now, so writes are saved again. Harmless when not paused "
                "(was_paused tells you whether a pause was in force)."
            ),
            input_schema=object_schema({}),
            hints=KEEPS,
        ),
        ToolSpec(
            name="persistence_status",
            access=PROCESS_STATE,
            call=calls.persistence_status,
            results=(shapes.PersistenceState,),
            title="Persistence status",
            summary="whether writes are paused, and until when",
            description=(
                "Whether writes are paused in this server process: paused, remaining_seconds, since and until "
                "(UTC ISO-8601), ttl_seconds. Check it when a store came back with persisted: false."
            ),
            input_schema=object_schema({}),
            hints=READS,
        ),
        ToolSpec(
            name="get_operating_context",
            access=PROCESS_STATE,
            call=calls.get_operating_context,
            results=(shapes.OperatingContextResult,),
            title="Operating context",
            summary="the operator's TOML context file (also in the `initialize` instructions); read-only",
            description=(
                "Read the operator's context file (TOML, owned by whoever runs this server): house rules, "
                "conventions, who you work for. Returns context (the parsed file, or one top-level section when "
                "section is given) and the list of sections. context is null when the operator wrote none (hint "
                "says where it goes) or turned it off. A malformed file fails with the TOML error and line. "
                "Read-only: agents cannot change it. Re-read on every call, so operator edits show at once."
            ),
            input_schema=object_schema(
                {
                    "section": string_schema(
                        "One top-level table of the file (e.g. 'rules'); omit for the whole file."
                    )
                }
            ),
            hints=READS,
        ),
        ToolSpec(
            name="check_update",
            access=Rule(READ, process_wide=True, admin_when="apply"),
            call=calls.check_update,
            results=(shapes.CheckUpdateResult,),
            title="Check for updates",
            summary="newer release or withdrawn version on PyPI (cached 24 h); installs only with `apply: true`",
            description=(
                "Ask the package index (PyPI) whether a newer cpersona-embedded is released and whether the "
                "running version was withdrawn (yanked). Returns current, latest, newer_available, "
                "current_yanked, checked_at and cached (the index is asked at most once per 24 h; the answer is "
                "cached). With apply=true, and only then, it installs the latest release with pip into the "
                "server's Python environment and reports the command, exit code and output; the server must be "
                "restarted to run it. Ask the user before calling with apply=true."
            ),
            input_schema=object_schema(
                {
                    "apply": bool_schema(
                        "Install the latest release with pip when it is newer. Default false: report only."
                    )
                }
            ),
            # Not read-only: apply=true installs software; destructive: an upgrade replaces the installed
            # package in place; idempotent: a second apply finds nothing newer; open world: it reaches
            # the package index on the internet.
            hints=Hints(read_only=False, destructive=True, idempotent=True, open_world=True),
        ),
        ToolSpec(
            name="check_health",
            results=(shapes.CheckHealthResult,),
            access=Rule(READ, admin_when="fix"),
            call=api("check_health"),
            title="Check and repair the store",
            summary="named health checks, verdict healthy/degraded/unhealthy, `fix=true` bounded repairs ([docs/health.md](docs/health.md))",
            description=(
                "Run named health checks over the database and return {status: healthy|degraded|unhealthy, findings "
                "[{check, severity critical|warn|info, message, count, refs, fix}], checks_run, repairs, stats}. "
                "Info findings never degrade the status. With agent_id, row checks only look at (and repair) that "
                "agent's rows. fix=true repairs, never touching locked rows and at most 1000 rows per check per run "
                "(repairs.<check>.remaining says what is left): schema recreates missing triggers/indexes, fts "
                "rebuilds the keyword index, vectors queues rows for (re-)embedding, duplicates deletes newer "
                "unlocked copies, oversized cuts to the caps, invalid_json wraps the text as {invalid_json: ...}, "
                "timestamps normalises to UTC, tasks removes orphaned tasks. integrity, embedding, empty_content, "
                "dimensions, vector_window and operating_context (a malformed operator context file) only report. Unknown check names fail with the valid names."
            ),
            input_schema=object_schema(
                {
                    "agent_id": string_schema(
                        "Only check (and repair) this agent's rows; omit for the whole file."
                    ),
                    "fix": bool_schema(
                        "Repair what can be repaired mechanically (bounded, never locked rows)."
                    ),
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
            results=(shapes.DeepCheckResult,),
            access=Rule(READ, admin_when="fix"),
            call=api("deep_check"),
            title="Semantic review of an agent's memories",
            summary="semantic review of one agent: anonymous sources, short content, stale profile, orphaned episodes, near-duplicates (report only)",
            description=(
                "A slower, semantic pass over one agent's memories, reporting {status, findings, checks}: "
                "anonymous_sources (no source id/name), short_content (under 12 characters), stale_profile (not "
                "updated for 30 days while 20+ memories arrived), orphaned_episodes (no memory in the episode's "
                "scope and time range), near_duplicates (pairs with cosine >= 0.95 among the newest 2000 vectors, "
                "as merge candidates with both refs). Every deep check only reports: fix is accepted and changes "
                "nothing; act on the refs with update_memory / delete_memory / update_profile."
            ),
            input_schema=object_schema(
                {
                    "agent_id": AGENT_ID,
                    "fix": bool_schema(
                        "Accepted for symmetry with check_health; deep checks never modify anything."
                    ),
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
