"""Declarative tool registry: one entry per MCP tool (name, description, JSON Schema, annotations).

Descriptions are written for the calling agent: they say what the tool does,
what it returns and how to use the result. Schemas are what the dispatcher
validates arguments against, so they must stay accurate. Annotations must be
truthful (SPEC §5): e.g. ``recall`` is *not* read-only because it records that
rows were returned, which demotes them for a few minutes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cpersona.config import Settings
from cpersona.health.checks import check_names
from cpersona.health.deep_checks import deep_check_names
from cpersona.limits import (
    GET_CONTENTS_BUDGET_CHARS,
    LIST_BUDGET_CHARS,
    LIST_EPISODES_LIMIT_DEFAULT,
    LIST_LIMIT_MAX,
    LIST_MEMORIES_LIMIT_DEFAULT,
    MAX_REFS_PER_CALL,
    MAX_ROW_ID,
    MAX_ROW_ID_DIGITS,
    RECALL_FULL_CONTENT_BUDGET_CHARS,
    RECALL_LIMIT_DEFAULT,
    RECALL_LIMIT_MAX,
)

#: Names accepted by check_health / deep_check ``checks`` (their registries are the source).
HEALTH_CHECKS = tuple(check_names())
DEEP_CHECKS = tuple(deep_check_names())


@dataclass(frozen=True)
class ToolSpec:
    """One MCP tool: what hosts see in tools/list and what the dispatcher validates against."""

    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool
    destructive: bool
    idempotent: bool
    title: str = ""
    open_world: bool = False  # the server never reaches outside its own database

    def annotations(self) -> dict[str, Any]:
        """MCP tool annotations as plain camelCase JSON (what tools/list carries)."""
        return {
            "title": self.title or None,
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": self.open_world,
        }


def _obj(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


def _string(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


def _bool(description: str, default: bool = False) -> dict[str, Any]:
    return {"type": "boolean", "description": description, "default": default}


def _list_limit(default: int) -> dict[str, Any]:
    return {"type": "integer", "minimum": 0, "maximum": LIST_LIMIT_MAX, "default": default}


def _row_id(kind: str, prefix: str) -> dict[str, Any]:
    # "minimum" only constrains integers and "pattern" only strings, so one schema accepts both forms.
    return {
        "type": ["integer", "string"],
        "minimum": 1,
        "maximum": MAX_ROW_ID,
        "pattern": f"^{prefix}:[1-9][0-9]{{0,{MAX_ROW_ID_DIGITS - 1}}}$",
        "description": f"The {kind} id: an integer, or its ref string '{prefix}:<id>'.",
    }


AGENT_ID = _string(
    "Your agent identifier. Rows are isolated per agent: you only ever see, edit or delete rows "
    "stored under the same agent_id. The empty string is a valid (distinct) agent."
)
AGENT_ID_OPTIONAL_OWNER = _string(
    "Your agent identifier. When given, the row must belong to this agent or the call fails as "
    "not found (other agents' rows are never revealed). Always pass it."
)
PROJECT_ID_READ = _string(
    "Project scope. Omitted: every project. '' : only the global (project-less) pool. "
    "'X': project X plus the global pool."
)
PROJECT_ID_WRITE = _string("Project to file the row under; omitted or '' stores it in the global pool.")
CHANNEL_READ = _string(
    "Channel scope. Omitted or '': every channel. 'X': channel X plus channel-less rows."
)
CHANNEL_WRITE = _string("Channel (e.g. a chat room or tool name) to file the row under; omitted stores ''.")
USER_ID = _string("Whose profile, when one agent serves several users; default ''.", default="")
TIMESTAMP = {
    "type": ["string", "number"],
    "description": "When it happened: ISO-8601 (naive times are taken as UTC) or Unix seconds.",
}

def _n(value: int) -> str:
    """A number as descriptions spell it (thousands separated by commas)."""
    return f"{value:,}"


_RECALL_SCOPE: dict[str, Any] = {
    "agent_id": AGENT_ID,
    "query": _string(
        "What to look for, in natural language or exact terms (names, identifiers, error strings, "
        "CJK text all work). Empty returns the most recent memories.",
        default="",
    ),
    "limit": {
        "type": "integer",
        "minimum": 0,
        "maximum": RECALL_LIMIT_MAX,
        "default": RECALL_LIMIT_DEFAULT,
        "description": f"Maximum rows to return (0..{RECALL_LIMIT_MAX}, default {RECALL_LIMIT_DEFAULT}).",
    },
    "deep": _bool("Ignore time decay (search old history as if it were recent)."),
    "channel": CHANNEL_READ,
    "project_id": PROJECT_ID_READ,
}

_SOURCE = {
    "description": "Who said it: {type, id, name} (e.g. {type: 'user', id: 'U123', name: 'Ana'}) or that object as JSON text.",
    "type": ["object", "string"],
    "properties": {
        "type": {"type": "string"},
        "id": {"type": ["string", "integer"]},
        "name": {"type": "string"},
    },
}
_METADATA = {
    "description": "Free-form JSON object (or its JSON text) kept with the memory; size-capped, refused when too big.",
    "type": ["object", "string"],
}


def build_tools(settings: Settings) -> tuple[ToolSpec, ...]:
    """The registry for one server: descriptions quote the configured preview size and profile cap."""
    preview = _n(settings.recall_preview_chars)
    row_shape_note = (
        "Rows carry ref ('mem:<id>' or 'ep:<id>'), type, content, created_at and match_reason "
        f"{{signal, score, ...}}. Content longer than {preview} characters comes back as a prefix with "
        "content_truncated: true and content_len; pass the ref to get_contents for the full text."
    )
    return (
        ToolSpec(
            name="store",
            title="Store a memory",
            description=(
                "Save one fact, decision or message to long-term memory. Returns result 'stored' with its "
                "id and ref, 'skipped' when it is a duplicate (same message.id, or identical content in the "
                "same agent/project/channel scope; the existing id is echoed), or 'rejected' with a reason "
                "(e.g. empty content, oversized metadata). There is no upsert: re-storing a message.id with "
                "new content is skipped; use update_memory to change a memory. Content longer than the cap "
                "is cut and the response says truncated: true. 'embedded' tells whether a vector was "
                "computed now (false means keyword search only until the background back-fill runs)."
            ),
            input_schema=_obj(
                {
                    "agent_id": AGENT_ID,
                    "message": _obj(
                        {
                            "id": {
                                "type": ["string", "integer"],
                                "description": "Your stable message id; a second store with the same id is skipped.",
                            },
                            "content": _string("The text to remember. Write it so it stands alone later."),
                            "source": _SOURCE,
                            "timestamp": TIMESTAMP,
                            "metadata": _METADATA,
                        },
                        required=["content"],
                    ),
                    "channel": CHANNEL_WRITE,
                    "project_id": PROJECT_ID_WRITE,
                },
                required=["agent_id", "message"],
            ),
            read_only=False,
            destructive=False,
            # Dedup on msg_id/content means repeating the same call adds nothing.
            idempotent=True,
        ),
        ToolSpec(
            name="recall",
            title="Recall memories",
            description=(
                "Search your memories and session summaries (episodes) with hybrid keyword + meaning search. "
                "Results are ordered WORST to BEST: the LAST element of 'results' is the best match. "
                + row_shape_note
                + " Set full_content: true to get whole texts (bounded by a "
                f"{_n(RECALL_FULL_CONTENT_BUDGET_CHARS)}-character budget; rows "
                "past it stay previews). An empty result list means nothing cleared the quality gate, not an "
                "error. An 'advisory' field means search is degraded (e.g. the embedding model is not "
                "loaded) and says what to do. Recall records which rows it returned, so rows returned in "
                "the last few minutes rank slightly lower on an immediate repeat."
            ),
            input_schema=_obj(
                {
                    **_RECALL_SCOPE,
                    "exclude_contents": {
                        "type": ["array", "string"],
                        "items": {"type": "string"},
                        "description": "Texts you already have (e.g. in your context); rows starting with "
                        "one of them, or that one of them starts with, are left out.",
                    },
                    "source_id": _string(
                        "Only rows whose source.id starts with this (episodes are skipped unless channel is set)."
                    ),
                    "full_content": _bool(f"Return full texts instead of {preview}-character previews."),
                },
                required=["agent_id"],
            ),
            read_only=False,
            destructive=False,
            idempotent=False,
        ),
        ToolSpec(
            name="recall_with_context",
            title="Recall with conversation context",
            description=(
                "Recall memories relevant to a query and merge them with the conversation entries you pass "
                "(external_context), deduplicated and in CHRONOLOGICAL order (not by score). Every entry's "
                "content also filters recall (memories you already hold are not repeated). Only user and "
                "assistant entries are merged into the output; other roles only filter, and the response "
                "then says context_filter_only. Long memory texts come back as previews with a ref for "
                "get_contents."
            ),
            input_schema=_obj(
                {
                    **_RECALL_SCOPE,
                    "external_context": {
                        "type": "array",
                        "description": "Recent conversation entries.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "role": _string("user, assistant, system, tool, ..."),
                                "content": {"type": "string"},
                                "name": {"type": "string"},
                                "user_id": {"type": "string"},
                                "timestamp": TIMESTAMP,
                            },
                            "required": ["role", "content"],
                            "additionalProperties": False,
                        },
                    },
                },
                required=["agent_id", "query", "external_context"],
            ),
            read_only=False,
            destructive=False,
            idempotent=False,
        ),
        ToolSpec(
            name="get_contents",
            title="Get full contents",
            description=(
                "Fetch the full text of rows by ref ('mem:<id>' or 'ep:<id>', as returned by recall or the "
                f"list tools), up to {MAX_REFS_PER_CALL} refs per call, in request order. Refs that do not "
                "exist or belong to another agent are listed in 'missing'. One response carries at most about "
                f"{_n(GET_CONTENTS_BUDGET_CHARS)} characters: "
                "refs that did not fit are listed in 'deferred' - call again with those."
            ),
            input_schema=_obj(
                {
                    "agent_id": AGENT_ID,
                    "refs": {
                        "type": "array",
                        "items": {"type": "string"},
                        "minItems": 1,
                        "maxItems": MAX_REFS_PER_CALL,
                        "description": f"Refs such as 'mem:12' or 'ep:3' (at most {MAX_REFS_PER_CALL}).",
                    },
                },
                required=["agent_id", "refs"],
            ),
            read_only=True,
            destructive=False,
            idempotent=True,
        ),
        ToolSpec(
            name="archive_episode",
            title="Archive a session summary",
            description=(
                "Store a summary of a finished session or task (an 'episode'), written by you. It is "
                "searchable by recall and marks a boundary: memories older than the newest episode in the "
                "same scope rank gradually lower. Pass the conversation as history to record its start and "
                "end times. Returns {ok, id, ref, embedded}."
            ),
            input_schema=_obj(
                {
                    "agent_id": AGENT_ID,
                    "summary": _string("What happened, what was decided, what is still open."),
                    "keywords": {
                        "type": ["array", "string"],
                        "items": {"type": "string"},
                        "description": "Search keywords (list, or one comma-separated string).",
                    },
                    "resolved": _bool("True when the session's issue was resolved."),
                    "history": {
                        "type": "array",
                        "items": {"type": "object"},
                        "description": "The session's messages ({role, content, timestamp?}); timestamps set start/end.",
                    },
                    "project_id": PROJECT_ID_WRITE,
                    "channel": CHANNEL_WRITE,
                },
                required=["agent_id", "summary"],
            ),
            read_only=False,
            destructive=False,
            idempotent=False,
        ),
        ToolSpec(
            name="update_memory",
            title="Update a memory",
            description=(
                "Replace the content of one of your memories (it is re-embedded). Refused when the memory is "
                "locked (unlock_memory first) or is not yours. Returns {ok, id, ref, embedded}."
            ),
            input_schema=_obj(
                {
                    "memory_id": _row_id("memory", "mem"),
                    "content": _string("The new text (replaces the old one entirely)."),
                    "agent_id": AGENT_ID_OPTIONAL_OWNER,
                },
                required=["memory_id", "content"],
            ),
            read_only=False,
            destructive=True,
            idempotent=True,
        ),
        ToolSpec(
            name="get_profile",
            title="Get profile",
            description=(
                "Read the agent's profile: a short standing description of the user or the agent's role that "
                "you maintain with update_profile. Returns profile: null when none is stored."
            ),
            input_schema=_obj(
                {
                    "agent_id": AGENT_ID,
                    "project_id": _string("Profile scope; '' (default) is the global profile.", default=""),
                    "user_id": USER_ID,
                },
                required=["agent_id"],
            ),
            read_only=True,
            destructive=False,
            idempotent=True,
        ),
        ToolSpec(
            name="update_profile",
            title="Replace profile",
            description=(
                f"Replace the agent's profile text entirely (capped at {_n(settings.max_profile_length)} "
                "characters; the response says "
                "truncated: true when cut). Read it with get_profile first if you want to amend it."
            ),
            input_schema=_obj(
                {
                    "agent_id": AGENT_ID,
                    "profile": _string("The full new profile text."),
                    "project_id": _string("Profile scope; '' (default) is the global profile.", default=""),
                    "user_id": USER_ID,
                },
                required=["agent_id", "profile"],
            ),
            read_only=False,
            destructive=True,
            idempotent=True,
        ),
        ToolSpec(
            name="list_memories",
            title="List memories",
            description=(
                "List stored memories, newest first: {ok, items, count, total}. Omitting agent_id lists every "
                "agent's memories (operator use); agents should pass their own. Very large listings are bounded: "
                f"past about {_n(LIST_BUDGET_CHARS)} characters the remaining items come back as previews "
                "(content_truncated) "
                "and the response says content_budget_exceeded."
            ),
            input_schema=_obj(
                {
                    "agent_id": _string("Only this agent's memories (omit for all agents)."),
                    "limit": _list_limit(LIST_MEMORIES_LIMIT_DEFAULT),
                    "project_id": PROJECT_ID_READ,
                }
            ),
            read_only=True,
            destructive=False,
            idempotent=True,
        ),
        ToolSpec(
            name="list_episodes",
            title="List episodes",
            description=(
                "List archived session summaries (episodes), newest first: {ok, items, count, total}. Omitting "
                "agent_id lists every agent's episodes. Bounded like list_memories."
            ),
            input_schema=_obj(
                {
                    "agent_id": _string("Only this agent's episodes (omit for all agents)."),
                    "limit": _list_limit(LIST_EPISODES_LIMIT_DEFAULT),
                    "project_id": PROJECT_ID_READ,
                }
            ),
            read_only=True,
            destructive=False,
            idempotent=True,
        ),
        ToolSpec(
            name="get_queue_status",
            title="Background queue status",
            description=(
                "Report the background task queue (embedding back-fill, re-embedding): depth, tasks retrying, "
                "oldest task, counts by kind. An empty queue is the healthy reading."
            ),
            input_schema=_obj({}),
            read_only=True,
            destructive=False,
            idempotent=True,
        ),
        ToolSpec(
            name="lock_memory",
            title="Lock a memory",
            description=(
                "Protect one of your memories from update_memory and delete_memory (protection only; it does "
                "not change ranking). Locking an already locked memory is harmless."
            ),
            input_schema=_obj(
                {"memory_id": _row_id("memory", "mem"), "agent_id": AGENT_ID_OPTIONAL_OWNER},
                required=["memory_id"],
            ),
            read_only=False,
            destructive=False,
            idempotent=True,
        ),
        ToolSpec(
            name="unlock_memory",
            title="Unlock a memory",
            description="Remove the protection set by lock_memory so the memory can be edited or deleted again.",
            input_schema=_obj(
                {"memory_id": _row_id("memory", "mem"), "agent_id": AGENT_ID_OPTIONAL_OWNER},
                required=["memory_id"],
            ),
            read_only=False,
            destructive=False,
            idempotent=True,
        ),
        ToolSpec(
            name="delete_memory",
            title="Delete a memory",
            description=(
                "Permanently delete one of your memories. Refused when it is locked or belongs to another agent "
                "(reported as not found)."
            ),
            input_schema=_obj(
                {"memory_id": _row_id("memory", "mem"), "agent_id": AGENT_ID_OPTIONAL_OWNER},
                required=["memory_id"],
            ),
            read_only=False,
            destructive=True,
            idempotent=True,
        ),
        ToolSpec(
            name="delete_episode",
            title="Delete an episode",
            description="Permanently delete one of your archived session summaries (episodes).",
            input_schema=_obj(
                {"episode_id": _row_id("episode", "ep"), "agent_id": AGENT_ID_OPTIONAL_OWNER},
                required=["episode_id"],
            ),
            read_only=False,
            destructive=True,
            idempotent=True,
        ),
        ToolSpec(
            name="delete_agent_data",
            title="Delete all data of an agent",
            description=(
                "Permanently delete EVERYTHING stored for one agent: memories (locked ones too), episodes, "
                "profiles, queued tasks and calibration state. Returns the counts deleted. Cannot be undone."
            ),
            input_schema=_obj({"agent_id": _string("The agent whose data is erased.")}, required=["agent_id"]),
            read_only=False,
            destructive=True,
            idempotent=True,
        ),
        ToolSpec(
            name="pause_persistence",
            title="Pause persistence",
            description=(
                "Stop this server process from writing anything for ttl_seconds (1 to 86400, i.e. at most 24 h), "
                "e.g. for an off-the-record session. While paused: store answers result 'skipped' with "
                "persisted: false and saves nothing; other writes (archive_episode, update_memory, update_profile, "
                "lock/unlock, deletes) fail with error_code 'persistence_paused' and persisted: false; recall "
                "works but records nothing. The pause ends by itself when the TTL runs out, or with "
                "resume_persistence. Pausing again replaces the window. Affects every client of this process."
            ),
            input_schema=_obj(
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
            read_only=False,
            destructive=False,
            idempotent=False,
        ),
        ToolSpec(
            name="resume_persistence",
            title="Resume persistence",
            description=(
                "End a pause set by pause_persistence now, so writes are saved again. Harmless when not paused "
                "(was_paused tells you whether a pause was in force)."
            ),
            input_schema=_obj({}),
            read_only=False,
            destructive=False,
            idempotent=True,
        ),
        ToolSpec(
            name="persistence_status",
            title="Persistence status",
            description=(
                "Whether writes are paused in this server process: paused, remaining_seconds, since and until "
                "(UTC ISO-8601), ttl_seconds. Check it when a store came back with persisted: false."
            ),
            input_schema=_obj({}),
            read_only=True,
            destructive=False,
            idempotent=True,
        ),
        ToolSpec(
            name="get_operating_context",
            title="Operating context",
            description=(
                "Read the operator's context file (TOML, owned by whoever runs this server): house rules, "
                "conventions, who you work for. Returns context (the parsed file, or one top-level section when "
                "section is given) and the list of sections. context is null when the operator wrote none (hint "
                "says where it goes) or turned it off. A malformed file fails with the TOML error and line. "
                "Read-only: agents cannot change it. Re-read on every call, so operator edits show at once."
            ),
            input_schema=_obj(
                {"section": _string("One top-level table of the file (e.g. 'rules'); omit for the whole file.")}
            ),
            read_only=True,
            destructive=False,
            idempotent=True,
        ),
        ToolSpec(
            name="check_update",
            title="Check for updates",
            description=(
                "Ask the package index (PyPI) whether a newer cpersona-embedded is released and whether the "
                "running version was withdrawn (yanked). Returns current, latest, newer_available, "
                "current_yanked, checked_at and cached (the index is asked at most once per 24 h; the answer is "
                "cached). With apply=true, and only then, it installs the latest release with pip into the "
                "server's Python environment and reports the command, exit code and output; the server must be "
                "restarted to run it. Ask the user before calling with apply=true."
            ),
            input_schema=_obj(
                {"apply": _bool("Install the latest release with pip when it is newer. Default false: report only.")}
            ),
            read_only=False,  # apply=true installs software
            destructive=True,  # an upgrade replaces the installed package in place
            idempotent=True,  # a second apply finds nothing newer and installs nothing
            open_world=True,  # reaches the package index on the internet
        ),
        ToolSpec(
            name="check_health",
            title="Check and repair the store",
            description=(
                "Run named health checks over the database and return {status: healthy|degraded|unhealthy, findings "
                "[{check, severity critical|warn|info, message, count, refs, fix}], checks_run, repairs, stats}. "
                "Info findings never degrade the status. With agent_id, row checks only look at (and repair) that "
                "agent's rows. fix=true repairs, never touching locked rows and at most 1000 rows per check per run "
                "(repairs.<check>.remaining says what is left): schema recreates missing triggers/indexes, fts "
                "rebuilds the keyword index, vectors queues rows for (re-)embedding, duplicates deletes newer "
                "unlocked copies, oversized cuts to the caps, invalid_json wraps the text as {invalid_json: ...}, "
                "timestamps normalises to UTC, tasks removes orphaned tasks. integrity, embedding, empty_content, "
                "dimensions and vector_window only report. Unknown check names fail with the valid names."
            ),
            input_schema=_obj(
                {
                    "agent_id": _string("Only check (and repair) this agent's rows; omit for the whole file."),
                    "fix": _bool("Repair what can be repaired mechanically (bounded, never locked rows)."),
                    "checks": {
                        "type": "array",
                        "items": {"type": "string", "enum": list(HEALTH_CHECKS)},
                        "description": "Run only these checks (default: all).",
                    },
                }
            ),
            read_only=False,
            destructive=True,  # fix=true deletes duplicate copies and cuts oversized rows
            idempotent=True,
        ),
        ToolSpec(
            name="deep_check",
            title="Semantic review of an agent's memories",
            description=(
                "A slower, semantic pass over one agent's memories, reporting {status, findings, checks}: "
                "anonymous_sources (no source id/name), short_content (under 12 characters), stale_profile (not "
                "updated for 30 days while 20+ memories arrived), orphaned_episodes (no memory in the episode's "
                "scope and time range), near_duplicates (pairs with cosine >= 0.95 among the newest 2000 vectors, "
                "as merge candidates with both refs). Every deep check only reports: fix is accepted and changes "
                "nothing; act on the refs with update_memory / delete_memory / update_profile."
            ),
            input_schema=_obj(
                {
                    "agent_id": AGENT_ID,
                    "fix": _bool("Accepted for symmetry with check_health; deep checks never modify anything."),
                    "checks": {
                        "type": "array",
                        "items": {"type": "string", "enum": list(DEEP_CHECKS)},
                        "description": "Run only these deep checks (default: all).",
                    },
                },
                required=["agent_id"],
            ),
            read_only=True,
            destructive=False,
            idempotent=True,
        ),
        ToolSpec(
            name="export_memories",
            title="Export memories to a JSONL file",
            description=(
                "Write all of one agent's memories, episodes and profiles to a JSONL file inside the export "
                "directory (CPERSONA_EXPORT_DIR, default <db dir>/exports). output_path is relative to that "
                "directory; '..', absolute paths elsewhere and symlinks leading out are refused (path_refused). "
                "The file is written atomically and an existing file is never replaced unless overwrite is true. "
                "include_embeddings adds each row's vector (base64 float32) with its model id, so an import into "
                "the same model needs no re-embedding. Returns {path, bytes, counts}."
            ),
            input_schema=_obj(
                {
                    "agent_id": _string("The agent whose rows are exported (only this agent's rows are written)."),
                    "output_path": _string("File name (or sub-path) inside the export directory, e.g. 'ana.jsonl'."),
                    "include_embeddings": _bool("Also write each row's vector and its model id."),
                    "overwrite": _bool("Replace the file if it already exists."),
                },
                required=["agent_id", "output_path"],
            ),
            read_only=False,
            destructive=False,
            idempotent=False,
        ),
        ToolSpec(
            name="import_memories",
            title="Import memories from a JSONL export",
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
            input_schema=_obj(
                {
                    "input_path": _string("File name (or sub-path) inside the export directory."),
                    "target_agent_id": _string("Store every imported row under this agent instead of the file's."),
                    "dry_run": _bool("Only report what would be imported; write nothing."),
                },
                required=["input_path"],
            ),
            read_only=False,
            destructive=False,
            idempotent=True,
        ),
        ToolSpec(
            name="merge_memories",
            title="Merge one agent's memories into another",
            description=(
                "Copy (mode 'copy') or move (mode 'move') every memory, episode and profile of source_agent_id "
                "to target_agent_id in one transaction. strategy 'skip': a row the target already holds (same "
                "msg_id or content in the same project/channel; same episode summary) is skipped; a profile "
                "keeps the newer text. 'move' leaves the source agent empty: skipped duplicates are deleted "
                "from the source (a locked duplicate locks the target's row). dry_run returns the exact counts "
                "and changes nothing. Same source and target is refused."
            ),
            input_schema=_obj(
                {
                    "source_agent_id": _string("The agent whose rows are merged."),
                    "target_agent_id": _string("The agent that receives them."),
                    "strategy": {"type": "string", "enum": ["skip"], "default": "skip",
                                 "description": "Conflict rule: 'skip' keeps the target's row."},
                    "mode": {"type": "string", "enum": ["copy", "move"], "default": "copy",
                             "description": "'copy' keeps the source rows; 'move' removes them from the source."},
                    "dry_run": _bool("Only report the counts; change nothing."),
                },
                required=["source_agent_id", "target_agent_id"],
            ),
            read_only=False,
            destructive=True,
            idempotent=True,
        ),
        ToolSpec(
            name="migrate_channel_axis",
            title="Repair rows stored under a bridge channel",
            description=(
                "One-time repair. Memories stored under a bridge channel (a relay that carried many real "
                "channels; by default the channels named 'bridge' or 'relay') move to the channel named in their "
                "session id: metadata.session_id, else source.id, of the form '<platform>:<channel>[:...]' "
                "('discord:general:88' -> 'general'). Rows whose channel cannot be recovered (and all episodes) "
                "stay put and are reported as unrecoverable, unless globalize_unrecoverable moves them to channel "
                "'' (global). Locked rows are never moved; a move that would duplicate a row in the target channel "
                "is reported as a collision. dry_run defaults to true (exact counts, nothing changed). Idempotent."
            ),
            input_schema=_obj(
                {
                    "agent_id": _string("Only this agent's rows (omitted: every agent)."),
                    "dry_run": _bool("Only report what would move (default true).", default=True),
                    "globalize_unrecoverable": _bool("Move rows whose channel cannot be recovered to channel ''."),
                    "bridge_channels": {
                        "type": "array",
                        "items": {"type": "string", "minLength": 1},
                        "minItems": 1,
                        "maxItems": 50,
                        "description": "Channel names to treat as bridges (default ['bridge', 'relay']).",
                    },
                }
            ),
            read_only=False,
            destructive=False,
            idempotent=True,
        ),
    )


#: The registry with default settings: names and input schemas (descriptions aside) never depend on
#: settings, so the dispatcher validates against these and tests enumerate them.
TOOLS: tuple[ToolSpec, ...] = build_tools(Settings())
TOOLS_BY_NAME: dict[str, ToolSpec] = {spec.name: spec for spec in TOOLS}


def tool_names() -> list[str]:
    """Names of every tool the server exposes, in registry order."""
    return [spec.name for spec in TOOLS]
