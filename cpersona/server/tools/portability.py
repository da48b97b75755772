"""Portability: export, import, merge, channel-axis repair"""

from __future__ import annotations

from cpersona.config import Settings
from cpersona.server.calls import api
from cpersona.server.rules import ADMIN, Rule
from cpersona.server.tools.common import (
    ADDS,
    KEEPS,
    OVERWRITES,
    ToolSpec,
)


def tools(settings: Settings) -> list[ToolSpec]:
    """Portability tools, described for ``settings``."""
    return [
        ToolSpec(
            name="export_memories",
            access=Rule(ADMIN),
            call=api("export_memories"),
            title="Export memories to a JSONL file",
            summary="one agent's memories, episodes, profiles to a JSONL file in the export dir (optionally with vectors)",
            description=(
                "Write one agent's memories, episodes and profiles to a JSONL file in the export directory. Credentials are redacted unless include_secrets."
            ),
            hints=ADDS,
        ),
        ToolSpec(
            name="import_memories",
            access=Rule(ADMIN),
            call=api("import_memories"),
            title="Import memories from a JSONL export",
            summary="read an export file (or the original CPersona's export or .db file); idempotent, `dry_run`, "
            "`target_agent_id`, bad lines reported by number",
            description=(
                "Load an export_memories file (or the original CPersona's export or .db) from the export directory. Duplicates are skipped; dry_run only counts."
            ),
            hints=KEEPS,
        ),
        ToolSpec(
            name="merge_memories",
            access=Rule(ADMIN),
            call=api("merge_memories"),
            title="Merge one agent's memories into another",
            summary="copy or move one agent's rows into another in one transaction, duplicates skipped",
            description=(
                "Copy or move all rows of source_agent_id to target_agent_id in one transaction, skipping duplicates; dry_run only counts."
            ),
            hints=OVERWRITES,
        ),
        ToolSpec(
            name="migrate_channel_axis",
            access=Rule(ADMIN),
            call=api("migrate_channel_axis"),
            title="Repair rows stored under a bridge channel",
            summary="one-time repair moving rows off a bridge channel onto the channel in their session id",
            description=(
                "One-time repair: move memories stored under a bridge channel to the channel in their session id; dry_run (default) only counts."
            ),
            hints=KEEPS,
        ),
    ]
