"""Portability: export, import, merge, channel-axis repair"""

from __future__ import annotations

from cpersona import result_types
from cpersona.config import Settings
from cpersona.server.calls import api
from cpersona.server.rules import ADMIN, Rule
from cpersona.server.tools.common import (
    ADDS,
    KEEPS,
    OVERWRITES,
    ToolSpec,
    bool_schema,
    object_schema,
    string_schema,
)


def tools(settings: Settings) -> list[ToolSpec]:
    """Portability tools, described for ``settings``."""
    return [
        ToolSpec(
            name="export_memories",
            results=(result_types.ExportResult,),
            access=Rule(ADMIN),
            call=api("export_memories"),
            title="Export memories to a JSONL file",
            summary="one agent's memories, episodes, profiles to a JSONL file in the export dir (optionally with vectors)",
            description=(
                "Write one agent's memories, episodes and profiles to a JSONL file in the export directory (output_path is relative to it). "
                "Credentials are written redacted unless include_secrets."
            ),
            input_schema=object_schema(
                {
                    "agent_id": string_schema("The agent whose rows are exported."),
                    "output_path": string_schema("Path inside the export directory."),
                    "include_embeddings": bool_schema("Also write each row's vector."),
                    "overwrite": bool_schema("Replace an existing file."),
                    "include_secrets": bool_schema("Write credentials unredacted."),
                },
                required=["agent_id", "output_path"],
            ),
            hints=ADDS,
        ),
        ToolSpec(
            name="import_memories",
            results=(result_types.ImportResult,),
            access=Rule(ADMIN),
            call=api("import_memories"),
            title="Import memories from a JSONL export",
            summary="read an export file (or the original CPersona's export or .db file); idempotent, `dry_run`, "
            "`target_agent_id`, bad lines reported by number",
            description=(
                "Read an export_memories file, or the original CPersona's export or .db file (path relative to the "
                "export directory), into this database. Duplicates are skipped, so a second import changes "
                "nothing; dry_run only counts."
            ),
            input_schema=object_schema(
                {
                    "input_path": string_schema("Path inside the export directory."),
                    "target_agent_id": string_schema("File every row under this agent."),
                    "dry_run": bool_schema("Only count; write nothing."),
                },
                required=["input_path"],
            ),
            hints=KEEPS,
        ),
        ToolSpec(
            name="merge_memories",
            results=(result_types.MergeResult,),
            access=Rule(ADMIN),
            call=api("merge_memories"),
            title="Merge one agent's memories into another",
            summary="copy or move one agent's rows into another in one transaction, duplicates skipped",
            description=(
                "Copy or move every memory, episode and profile of source_agent_id to target_agent_id in one transaction, skipping duplicates; dry_run only counts."
            ),
            input_schema=object_schema(
                {
                    "source_agent_id": string_schema("The agent whose rows go."),
                    "target_agent_id": string_schema("The agent that receives them."),
                    "strategy": {
                        "type": "string",
                        "enum": ["skip"],
                        "default": "skip",
                        "description": "Conflict rule: 'skip' keeps the target's row.",
                    },
                    "mode": {
                        "type": "string",
                        "enum": ["copy", "move"],
                        "default": "copy",
                        "description": "'copy' keeps the source rows; 'move' removes them from the source.",
                    },
                    "dry_run": bool_schema("Only count; change nothing."),
                },
                required=["source_agent_id", "target_agent_id"],
            ),
            hints=OVERWRITES,
        ),
        ToolSpec(
            name="migrate_channel_axis",
            results=(result_types.MigrateChannelAxisResult,),
            access=Rule(ADMIN),
            call=api("migrate_channel_axis"),
            title="Repair rows stored under a bridge channel",
            summary="one-time repair moving rows off a bridge channel onto the channel in their session id",
            description=(
                "One-time repair: move memories stored under a bridge channel to the channel named in their session id. dry_run (the default) only counts."
            ),
            input_schema=object_schema(
                {
                    "agent_id": string_schema("Omit for every agent."),
                    "dry_run": bool_schema("Only count (default).", default=True),
                    "globalize_unrecoverable": bool_schema("Move unrecoverable rows to channel ''."),
                    "bridge_channels": {
                        "type": "array",
                        "items": {"type": "string", "minLength": 1},
                        "minItems": 1,
                        "maxItems": 50,
                        "description": "Bridge channel names.",
                    },
                }
            ),
            hints=KEEPS,
        ),
    ]
