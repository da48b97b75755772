"""Everyday memory: store, recall, contents, episodes, edits, profile, browsing, protection, deletion"""

from __future__ import annotations

from cpersona import result_types
from cpersona.config import Settings
from cpersona.core.limits import (
    GET_CONTENTS_BUDGET_CHARS,
    LIST_EPISODES_LIMIT_DEFAULT,
    LIST_MEMORIES_LIMIT_DEFAULT,
    MAX_REFS_PER_CALL,
)
from cpersona.server import calls
from cpersona.server.calls import api
from cpersona.server.rules import ADMIN, EDIT_ROW, LIST_ROWS, PROCESS_STATE, READ, WRITE, Rule
from cpersona.server.tools.common import (
    ADDS,
    AGENT_ID,
    AGENT_ID_OPTIONAL_OWNER,
    CHANNEL_WRITE,
    EXPIRY,
    INCLUDE_RETIRED,
    INCLUDE_SUPERSEDED,
    KEEPS,
    METADATA_SCHEMA,
    OVERWRITES,
    PROJECT_ID_READ,
    PROJECT_ID_WRITE,
    READS,
    RECALL_SCOPE,
    SOURCE_SCHEMA,
    TIME_CUE,
    TIMESTAMP,
    USER_ID,
    Hints,
    ToolSpec,
    bool_schema,
    list_limit_schema,
    object_schema,
    one_of_types,
    row_id_schema,
    row_target,
    string_schema,
    supersedes_schema,
    thousands,
)
from cpersona.server.tools.links import ASSOCIATIONS


def tools(settings: Settings) -> list[ToolSpec]:
    """Everyday memory tools, described for ``settings``."""
    """The registry for one server: descriptions quote the configured preview size and profile cap."""
    preview = thousands(settings.recall_preview_chars)
    return [
        ToolSpec(
            name="store",
            results=(
                result_types.StoreStored,
                result_types.StoreSkipped,
                result_types.StorePaused,
            ),
            access=Rule(WRITE, follows_links=True),  # associations: read on the target memories' agents
            call=api("store", tool_only=("message",), expand=calls.store_message),
            title="Store a memory",
            summary="store one memory; `result: stored \\| skipped \\| rejected`; dedup on msg_id and content, never upserts",
            description=(
                "Save one fact, decision or message. Returns result 'stored' (id, ref), 'skipped' (a duplicate: same message.id or content; no upsert, use update_memory) or 'rejected' (reason). associations links it (see declare_associations); supersedes marks memories it replaces."
            ),
            input_schema=object_schema(
                {
                    "agent_id": AGENT_ID,
                    "message": object_schema(
                        {
                            "id": one_of_types(
                                "string",
                                "integer",
                                description="Your message id; a repeat is skipped.",
                            ),
                            "content": string_schema("The text; make it stand alone."),
                            "source": SOURCE_SCHEMA,
                            "timestamp": TIMESTAMP,
                            "metadata": METADATA_SCHEMA,
                        },
                        required=["content"],
                    ),
                    "channel": CHANNEL_WRITE,
                    "project_id": PROJECT_ID_WRITE,
                    "associations": ASSOCIATIONS,
                    "supersedes": supersedes_schema(),
                    **EXPIRY,
                },
                required=["agent_id", "message"],
            ),
            # Dedup on msg_id/content means repeating the same call adds nothing.
            hints=KEEPS,
        ),
        ToolSpec(
            name="recall",
            results=(result_types.RecallResult,),
            access=Rule(READ),  # records recall statistics, but reveals and changes no content
            call=api(
                "recall",
                shape=calls.shape_recall,
                tool_only=("full_content",),
                convert={"exclude_contents": calls.strings},
            ),
            title="Recall memories",
            summary="hybrid search; results worst → best, **the last element is the best match**; long rows previewed with a `ref`",
            description=(
                f"Search your memories and episodes (hybrid keyword + meaning). Results are ordered worst to best: the LAST element of 'results' is the best match. Text over {preview} characters comes as a prefix (content_truncated) with its ref: get_contents has the full text. An empty list is not an error: 'explanation' says which gate cut it."
            ),
            input_schema=object_schema(
                {
                    **RECALL_SCOPE,
                    "exclude_contents": one_of_types(
                        {"type": "array", "items": {"type": "string"}},
                        "string",
                        description="Texts you already have: rows that start alike are left out.",
                    ),
                    "source_id": string_schema("Only rows whose source.id starts with this."),
                    "full_content": bool_schema(
                        f"Return full texts instead of {preview}-character previews."
                    ),
                    "trace": bool_schema("Also return each stage's candidates and scores."),
                    "time_cue": TIME_CUE,
                    "include_superseded": INCLUDE_SUPERSEDED,
                    "include_retired": INCLUDE_RETIRED,
                },
                required=["agent_id"],
            ),
            # Read-only for hosts: the recall statistics it keeps (recall_count, last_recalled_at) are
            # bookkeeping, not the user's data (docs/decisions.md, "MCP layer").
            hints=Hints(read_only=True, destructive=False, idempotent=False),
        ),
        ToolSpec(
            name="recall_with_context",
            results=(result_types.RecallWithContextResult,),
            access=Rule(READ),
            call=api("recall_with_context", shape=calls.shape_context),
            title="Recall with conversation context",
            summary="recall merged with the conversation you pass, deduplicated, chronological",
            description=(
                "Recall merged with the conversation entries you pass (external_context), deduplicated, in time order (not by score)."
            ),
            input_schema=object_schema(
                {
                    **RECALL_SCOPE,
                    "external_context": {
                        "type": "array",
                        "description": "Recent conversation entries.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "role": string_schema("user, assistant, system, tool, ..."),
                                "content": {"type": "string"},
                                "name": {"type": "string"},
                                "user_id": {"type": "string"},
                                "timestamp": TIMESTAMP,
                            },
                            "required": ["role", "content"],
                            "additionalProperties": False,
                        },
                    },
                    "time_cue": TIME_CUE,
                    "include_superseded": INCLUDE_SUPERSEDED,
                },
                required=["agent_id", "query", "external_context"],
            ),
            # like recall: only bookkeeping is written
            hints=Hints(read_only=True, destructive=False, idempotent=False),
        ),
        ToolSpec(
            name="get_contents",
            results=(result_types.GetContentsResult,),
            access=Rule(READ),
            call=api("get_contents", shape=calls.shape_contents),
            title="Get full contents",
            summary="full text for `mem:<id>` / `ep:<id>` refs (≤ 20, 40,000-char budget, overflow in `deferred`)",
            description=(
                f"The full text of rows by ref ('mem:<id>', 'ep:<id>'), up to {MAX_REFS_PER_CALL} per call. Unknown refs come back in 'missing'; refs past {thousands(GET_CONTENTS_BUDGET_CHARS)} characters in 'deferred' (call again with them)."
            ),
            input_schema=object_schema(
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
            hints=READS,
        ),
        ToolSpec(
            name="get_history",
            results=(result_types.GetHistoryResult,),
            access=LIST_ROWS,  # by row id: an omitted agent_id narrows to the granted agents
            call=api("get_history", shape=calls.shape_history),
            title="Get a memory's history",
            summary="a memory's supersede chain, oldest to newest, with what replaced what and when",
            description=(
                "The supersede chain a memory belongs to (see store's supersedes), oldest to newest, whole rows; 'current' is the memory in force."
            ),
            input_schema=object_schema(
                {"memory_id": row_id_schema("memory", "mem"), "agent_id": AGENT_ID_OPTIONAL_OWNER},
                required=["memory_id"],
            ),
            hints=READS,
        ),
        ToolSpec(
            name="archive_episode",
            results=(result_types.ArchiveEpisodeResult,),
            access=Rule(WRITE),
            call=api("archive_episode"),
            title="Archive a session summary",
            summary="store a session summary; moves the episode boundary",
            description=(
                "Store your summary of a finished session or task (an episode). Recall searches it, and older memories in its scope rank gradually lower. Pass the conversation as history to record its start and end."
            ),
            input_schema=object_schema(
                {
                    "agent_id": AGENT_ID,
                    "summary": string_schema("What happened, was decided, is open."),
                    "keywords": one_of_types(
                        {"type": "array", "items": {"type": "string"}},
                        "string",
                        description="Search keywords (list, or one comma-separated string).",
                    ),
                    "resolved": bool_schema("True when the session's issue was resolved."),
                    "history": {
                        "type": "array",
                        "items": {"type": "object"},
                        "description": "The session's messages; their timestamps set start and end.",
                    },
                    "project_id": PROJECT_ID_WRITE,
                    "channel": CHANNEL_WRITE,
                },
                required=["agent_id", "summary"],
            ),
            hints=ADDS,
        ),
        ToolSpec(
            name="update_memory",
            results=(result_types.UpdateMemoryResult,),
            access=EDIT_ROW,
            call=api("update_memory"),
            title="Update a memory",
            summary="replace a memory's content (re-embedded); refused when locked or not owned",
            description=(
                "Replace the content of one of your memories (re-embedded); refused when locked. supersedes marks memories this one replaces (content may then be left out)."
            ),
            input_schema=object_schema(
                {
                    "memory_id": row_id_schema("memory", "mem"),
                    "content": string_schema("The new text (optional with supersedes)."),
                    "agent_id": AGENT_ID_OPTIONAL_OWNER,
                    "supersedes": supersedes_schema(),
                },
                required=["memory_id"],
            ),
            hints=OVERWRITES,
        ),
        ToolSpec(
            name="get_profile",
            results=(result_types.GetProfileResult,),
            access=Rule(READ),
            call=api("get_profile"),
            title="Get profile",
            summary="the agent's profile (≤ 2,000 chars)",
            description=(
                "Read the agent's standing profile (the user, or your role), kept with update_profile; null when none."
            ),
            input_schema=object_schema(
                {
                    "agent_id": AGENT_ID,
                    "project_id": string_schema("Default '': the global profile.", default=""),
                    "user_id": USER_ID,
                },
                required=["agent_id"],
            ),
            hints=READS,
        ),
        ToolSpec(
            name="update_profile",
            results=(result_types.UpdateProfileResult,),
            access=Rule(WRITE),
            call=api("update_profile"),
            title="Replace profile",
            summary="replace the agent's profile (≤ 2,000 chars)",
            description=(
                f"Replace the agent's profile text entirely (at most {thousands(settings.max_profile_length)} characters; longer is cut). Read it first to amend it."
            ),
            input_schema=object_schema(
                {
                    "agent_id": AGENT_ID,
                    "profile": string_schema("The full new profile text."),
                    "project_id": string_schema("Default '': the global profile.", default=""),
                    "user_id": USER_ID,
                },
                required=["agent_id", "profile"],
            ),
            hints=OVERWRITES,
        ),
        ToolSpec(
            name="list_memories",
            results=(result_types.ListMemoriesResult,),
            access=LIST_ROWS,
            call=api("list_memories", shape=calls.shape_listing),
            title="List memories",
            summary="browse memories, newest first, with response budgets",
            description=(
                "List memories, newest first, with total. Leaving out agent_id lists every agent's (operator use)."
            ),
            input_schema=object_schema(
                {
                    "agent_id": string_schema("Omit for every agent."),
                    "limit": list_limit_schema(LIST_MEMORIES_LIMIT_DEFAULT),
                    "project_id": PROJECT_ID_READ,
                }
            ),
            hints=READS,
        ),
        ToolSpec(
            name="list_episodes",
            results=(result_types.ListEpisodesResult,),
            access=LIST_ROWS,
            call=api("list_episodes", shape=calls.shape_listing),
            title="List episodes",
            summary="browse episodes (session summaries), newest first, with response budgets",
            description=(
                "List episodes (session summaries), newest first, with total. Leaving out agent_id lists every agent's."
            ),
            input_schema=object_schema(
                {
                    "agent_id": string_schema("Omit for every agent."),
                    "limit": list_limit_schema(LIST_EPISODES_LIMIT_DEFAULT),
                    "project_id": PROJECT_ID_READ,
                }
            ),
            hints=READS,
        ),
        ToolSpec(
            name="get_queue_status",
            results=(result_types.QueueStatusResult,),
            access=PROCESS_STATE,
            call=api("get_queue_status"),
            title="Background queue status",
            summary="background queue depth (embedding back-fill, re-embedding)",
            description=(
                "The background queue (embedding back-fill, re-embedding): depth, retries, oldest task. Empty is healthy."
            ),
            input_schema=object_schema({}),
            hints=READS,
        ),
        ToolSpec(
            name="lock_memory",
            results=(result_types.LockResult,),
            access=EDIT_ROW,
            call=api("lock_memory"),
            title="Lock a memory",
            summary="protect a memory from edit and delete",
            description=(
                "Protect one of your memories from update_memory and delete_memory (ranking is unchanged)."
            ),
            input_schema=row_target("memory", "mem"),
            hints=KEEPS,
        ),
        ToolSpec(
            name="unlock_memory",
            results=(result_types.LockResult,),
            access=EDIT_ROW,
            call=api("unlock_memory"),
            title="Unlock a memory",
            summary="lift that protection",
            description="Remove lock_memory's protection so the memory can be edited or deleted again.",
            input_schema=row_target("memory", "mem"),
            hints=KEEPS,
        ),
        ToolSpec(
            name="delete_memory",
            results=(result_types.DeleteResult,),
            access=EDIT_ROW,
            call=api("delete_memory"),
            title="Delete a memory",
            summary="delete one memory (ownership enforced)",
            description=("Permanently delete one of your memories (refused when it is locked)."),
            input_schema=row_target("memory", "mem"),
            hints=OVERWRITES,
        ),
        ToolSpec(
            name="delete_episode",
            results=(result_types.DeleteResult,),
            access=EDIT_ROW,
            call=api("delete_episode"),
            title="Delete an episode",
            summary="delete one episode (ownership enforced)",
            description="Permanently delete one of your episodes (session summaries).",
            input_schema=row_target("episode", "ep"),
            hints=OVERWRITES,
        ),
        ToolSpec(
            name="delete_agent_data",
            results=(result_types.DeleteAgentDataResult,),
            access=Rule(ADMIN),
            call=api("delete_agent_data"),
            title="Delete all data of an agent",
            summary="delete everything one agent stored",
            description=(
                "Permanently delete EVERYTHING of one agent: memories (locked ones too), episodes, profiles, queued tasks, calibration. Returns the counts. Cannot be undone."
            ),
            input_schema=object_schema(
                {"agent_id": string_schema("The agent to erase.")}, required=["agent_id"]
            ),
            hints=OVERWRITES,
        ),
    ]
