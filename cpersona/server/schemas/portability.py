"""Portability: export, import, merge, channel-axis repair"""

from __future__ import annotations

from cpersona import shapes
from cpersona.config import Settings
from cpersona.server.calls import api
from cpersona.server.rules import ADMIN, Rule
from cpersona.server.schemas.common import (
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
            results=(shapes.ExportResult,),
            access=Rule(ADMIN),
            call=api("export_memories"),
            title="Export memories to a JSONL file",
            summary="one agent's memories, episodes, profiles to a JSONL file in the export dir (optionally with vectors)",
            description=(
                "Write all of one agent's memories, episodes and profiles to a JSONL file inside the export "
                "directory (CPERSONA_EXPORT_DIR, default <db dir>/exports). output_path is relative to that "
                "directory; '..', absolute paths elsewhere and symlinks leading out are refused (path_refused). "
                "The file is written atomically and an existing file is never replaced unless overwrite is true. "
                "include_embeddings adds each row's vector (base64 float32) with its model id, so an import into "
                "the same model needs no re-embedding. Credentials in the rows (keys, tokens, passwords) are "
                "written as '[redacted: <kind>]' (counted in redacted) unless include_secrets is true. "
                "Returns {path, bytes, counts}."
            ),
            input_schema=object_schema(
                {
                    "agent_id": string_schema(
                        "The agent whose rows are exported (only this agent's rows are written)."
                    ),
                    "output_path": string_schema(
                        "File name (or sub-path) inside the export directory, e.g. 'ana.jsonl'."
                    ),
                    "include_embeddings": bool_schema("Also write each row's vector and its model id."),
                    "overwrite": bool_schema("Replace the file if it already exists."),
                    "include_secrets": bool_schema(
                        "Write credentials found in the rows as they are stored (default: as '[redacted: <kind>]')."
                    ),
                },
                required=["agent_id", "output_path"],
            ),
            hints=ADDS,
        ),
        ToolSpec(
            name="import_memories",
            results=(shapes.ImportResult,),
            access=Rule(ADMIN),
            call=api("import_memories"),
            title="Import memories from a JSONL export",
            summary="read an export file; idempotent, `dry_run`, `target_agent_id`, bad lines reported by number",
            description=(
                "Read a file written by export_memories (path relative to the export directory, confined like "
                "export_memories) into this database. Idempotent: memories already present (same msg_id, or same "
                "content in the same agent/project/channel) and episodes with the same summary in scope are "
                "skipped, profiles keep the newer text, so a second import changes nothing. target_agent_id "
                "files every row under that agent. dry_run reports the counts and writes nothing. A bad line is "
                "skipped and reported by line number in errors (first 20; error_count counts all); each record "
                "is written whole or not at all. Timestamps, axes, locks and recall counts are kept; rows "
                "without a vector are queued for embedding."
            ),
            input_schema=object_schema(
                {
                    "input_path": string_schema("File name (or sub-path) inside the export directory."),
                    "target_agent_id": string_schema(
                        "Store every imported row under this agent instead of the file's."
                    ),
                    "dry_run": bool_schema("Only report what would be imported; write nothing."),
                },
                required=["input_path"],
            ),
            hints=KEEPS,
        ),
        ToolSpec(
            name="merge_memories",
            results=(shapes.MergeResult,),
            access=Rule(ADMIN),
            call=api("merge_memories"),
            title="Merge one agent's memories into another",
            summary="copy or move one agent's rows into another in one transaction, duplicates skipped",
            description=(
                "Copy (mode 'copy') or move (mode 'move') every memory, episode and profile of source_agent_id "
                "to target_agent_id in one transaction. strategy 'skip': a row the target already holds (same "
                "msg_id or content in the same project/channel; same episode summary) is skipped; a profile "
                "keeps the newer text. 'move' leaves the source agent empty: skipped duplicates are deleted "
                "from the source (a locked duplicate locks the target's row). dry_run returns the exact counts "
                "and changes nothing. Same source and target is refused."
            ),
            input_schema=object_schema(
                {
                    "source_agent_id": string_schema("The agent whose rows are merged."),
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
                    "dry_run": bool_schema("Only report the counts; change nothing."),
                },
                required=["source_agent_id", "target_agent_id"],
            ),
            hints=OVERWRITES,
        ),
        ToolSpec(
            name="migrate_channel_axis",
            results=(shapes.MigrateChannelAxisResult,),
            access=Rule(ADMIN),
            call=api("migrate_channel_axis"),
            title="Repair rows stored under a bridge channel",
            summary="one-time repair moving rows off a bridge channel onto the channel in their session id",
            description=(
                "One-time repair. Memories stored under a bridge channel (a relay that carried many real "
                "channels; by default the channels named 'bridge' or 'relay') move to the channel named in their "
                "session id: metadata.session_id, else source.id, of the form '<platform>:<channel>[:...]' "
                "('discord:general:88' -> 'general'). Rows whose channel cannot be recovered (and all episodes) "
                "stay put and are reported as unrecoverable, unless globalize_unrecoverable moves them to channel "
                "'' (global). Locked rows are never moved; a move that would duplicate a row in the target channel "
                "is reported as a collision. dry_run defaults to true (exact counts, nothing changed). Idempotent."
            ),
            input_schema=object_schema(
                {
                    "agent_id": string_schema("Only this agent's rows (omitted: every agent)."),
                    "dry_run": bool_schema("Only report what would move (default true).", default=True),
                    "globalize_unrecoverable": bool_schema(
                        "Move rows whose channel cannot be recovered to channel ''."
                    ),
                    "bridge_channels": {
                        "type": "array",
                        "items": {"type": "string", "minLength": 1},
                        "minItems": 1,
                        "maxItems": 50,
                        "description": "Channel names to treat as bridges (default ['bridge', 'relay']).",
                    },
                }
            ),
            hints=KEEPS,
        ),
    ]
