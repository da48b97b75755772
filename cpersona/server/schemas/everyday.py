"""Everyday memory: store, recall, contents, episodes, edits, profile, browsing, protection, deletion"""

from __future__ import annotations

from cpersona.config import Settings
from cpersona.limits import (
    GET_CONTENTS_BUDGET_CHARS,
    LIST_BUDGET_CHARS,
    LIST_EPISODES_LIMIT_DEFAULT,
    LIST_MEMORIES_LIMIT_DEFAULT,
    MAX_REFS_PER_CALL,
    RECALL_FULL_CONTENT_BUDGET_CHARS,
)
from cpersona.server.schemas.common import (
    AGENT_ID,
    AGENT_ID_OPTIONAL_OWNER,
    CHANNEL_WRITE,
    INCLUDE_SUPERSEDED,
    METADATA_SCHEMA,
    PROJECT_ID_READ,
    PROJECT_ID_WRITE,
    RECALL_SCOPE,
    SOURCE_SCHEMA,
    TIME_CUE,
    TIMESTAMP,
    USER_ID,
    ToolSpec,
    bool_schema,
    list_limit_schema,
    object_schema,
    one_of_types,
    row_id_schema,
    string_schema,
    supersedes_schema,
    thousands,
)


def tools(settings: Settings) -> list[ToolSpec]:
    """Everyday memory tools, described for ``settings``."""
    """The registry for one server: descriptions quote the configured preview size and profile cap."""
    preview = thousands(settings.recall_preview_chars)
    row_shape_note = (
        "Rows carry ref ('mem:<id>' or 'ep:<id>'), type, content, created_at and match_reason "
        f"{{signal, score, ...}}. Content longer than {preview} characters comes back as a prefix with "
        "content_truncated: true and content_len; pass the ref to get_contents for the full text."
    )
    return [
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
                "computed now (false means keyword search only until the background back-fill runs). "
                "supersedes: ['mem:12'] says the new memory replaces older ones of yours: they stay, marked "
                "superseded (get_history shows the chain), and recall leaves them out; the reply lists them "
                "in 'supersedes'. A skipped duplicate links nothing (update_memory with supersedes does)."
            ),
            input_schema=object_schema(
                {
                    "agent_id": AGENT_ID,
                    "message": object_schema(
                        {
                            "id": one_of_types(
                                "string",
                                "integer",
                                description="Your stable message id; a second store with the same id is skipped.",
                            ),
                            "content": string_schema(
                                "The text to remember. Write it so it stands alone later."
                            ),
                            "source": SOURCE_SCHEMA,
                            "timestamp": TIMESTAMP,
                            "metadata": METADATA_SCHEMA,
                        },
                        required=["content"],
                    ),
                    "channel": CHANNEL_WRITE,
                    "project_id": PROJECT_ID_WRITE,
                    "supersedes": supersedes_schema(),
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
                f"{thousands(RECALL_FULL_CONTENT_BUDGET_CHARS)}-character budget; rows "
                "past it stay previews). An empty result list means nothing cleared the quality gate, not an "
                "error; an empty or shortened answer carries 'explanation' (one sentence: which gate cut "
                "it, its threshold, the best similarity, what to try), and an agent id that owns no rows "
                "carries 'notice' naming the known agents. An 'advisory' field means search is degraded "
                "(e.g. the embedding model is not loaded) and says what to do. Each row's "
                "match_reason.factors multiply to its score (fused score, penalties, confidence). Set "
                "trace: true to see every stage's candidates and scores. Recall records which rows it "
                "returned, so rows returned in the last few minutes rank slightly lower on an immediate "
                "repeat."
            ),
            input_schema=object_schema(
                {
                    **RECALL_SCOPE,
                    "exclude_contents": one_of_types(
                        {"type": "array", "items": {"type": "string"}},
                        "string",
                        description="Texts you already have (e.g. in your context); rows starting with "
                        "one of them, or that one of them starts with, are left out.",
                    ),
                    "source_id": string_schema(
                        "Only rows whose source.id starts with this (episodes are skipped unless channel is set)."
                    ),
                    "full_content": bool_schema(
                        f"Return full texts instead of {preview}-character previews."
                    ),
                    "trace": bool_schema(
                        "Also return 'trace': each stage's candidates and scores (channels, fusion, "
                        "penalties, gate), at most 30 rows per stage, for debugging a ranking."
                    ),
                    "time_cue": TIME_CUE,
                    "include_superseded": INCLUDE_SUPERSEDED,
                },
                required=["agent_id"],
            ),
            # Read-only for hosts: the recall statistics it keeps (recall_count, last_recalled_at) are
            # bookkeeping, not the user's data (docs/decisions.md, "MCP layer").
            read_only=True,
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
            read_only=True,  # like recall: only bookkeeping is written
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
                f"{thousands(GET_CONTENTS_BUDGET_CHARS)} characters: "
                "refs that did not fit are listed in 'deferred' - call again with those."
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
            read_only=True,
            destructive=False,
            idempotent=True,
        ),
        ToolSpec(
            name="get_history",
            title="Get a memory's history",
            description=(
                "The supersede chain a memory belongs to (store / update_memory with supersedes): every "
                "memory of it, oldest to newest, whole rows; each superseded one carries superseded_by "
                "(the ref of the memory that replaced it) and superseded_at. 'current' names the memory "
                "in force (the last one). A memory nothing superseded is a chain of one. Another agent's "
                "memory answers not_found."
            ),
            input_schema=object_schema(
                {"memory_id": row_id_schema("memory", "mem"), "agent_id": AGENT_ID_OPTIONAL_OWNER},
                required=["memory_id"],
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
            input_schema=object_schema(
                {
                    "agent_id": AGENT_ID,
                    "summary": string_schema("What happened, what was decided, what is still open."),
                    "keywords": one_of_types(
                        {"type": "array", "items": {"type": "string"}},
                        "string",
                        description="Search keywords (list, or one comma-separated string).",
                    ),
                    "resolved": bool_schema("True when the session's issue was resolved."),
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
                "locked (unlock_memory first) or is not yours. Returns {ok, id, ref, embedded}. With "
                "supersedes, also marks those memories superseded by this one (then content may be omitted: "
                "only the links are written) and the reply lists them in 'supersedes'."
            ),
            input_schema=object_schema(
                {
                    "memory_id": row_id_schema("memory", "mem"),
                    "content": string_schema(
                        "The new text (replaces the old one entirely); required unless supersedes is given."
                    ),
                    "agent_id": AGENT_ID_OPTIONAL_OWNER,
                    "supersedes": supersedes_schema(),
                },
                required=["memory_id"],
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
            input_schema=object_schema(
                {
                    "agent_id": AGENT_ID,
                    "project_id": string_schema(
                        "Profile scope; '' (default) is the global profile.", default=""
                    ),
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
                f"Replace the agent's profile text entirely (capped at {thousands(settings.max_profile_length)} "
                "characters; the response says "
                "truncated: true when cut). Read it with get_profile first if you want to amend it."
            ),
            input_schema=object_schema(
                {
                    "agent_id": AGENT_ID,
                    "profile": string_schema("The full new profile text."),
                    "project_id": string_schema(
                        "Profile scope; '' (default) is the global profile.", default=""
                    ),
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
                f"past about {thousands(LIST_BUDGET_CHARS)} characters the remaining items come back as previews "
                "(content_truncated) "
                "and the response says content_budget_exceeded."
            ),
            input_schema=object_schema(
                {
                    "agent_id": string_schema("Only this agent's memories (omit for all agents)."),
                    "limit": list_limit_schema(LIST_MEMORIES_LIMIT_DEFAULT),
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
            input_schema=object_schema(
                {
                    "agent_id": string_schema("Only this agent's episodes (omit for all agents)."),
                    "limit": list_limit_schema(LIST_EPISODES_LIMIT_DEFAULT),
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
            input_schema=object_schema({}),
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
            input_schema=object_schema(
                {"memory_id": row_id_schema("memory", "mem"), "agent_id": AGENT_ID_OPTIONAL_OWNER},
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
            input_schema=object_schema(
                {"memory_id": row_id_schema("memory", "mem"), "agent_id": AGENT_ID_OPTIONAL_OWNER},
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
            input_schema=object_schema(
                {"memory_id": row_id_schema("memory", "mem"), "agent_id": AGENT_ID_OPTIONAL_OWNER},
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
            input_schema=object_schema(
                {"episode_id": row_id_schema("episode", "ep"), "agent_id": AGENT_ID_OPTIONAL_OWNER},
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
            input_schema=object_schema(
                {"agent_id": string_schema("The agent whose data is erased.")}, required=["agent_id"]
            ),
            read_only=False,
            destructive=True,
            idempotent=True,
        ),
    ]
