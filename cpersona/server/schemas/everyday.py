"""Everyday memory: store, recall, contents, episodes, edits, profile, browsing, protection, deletion"""

from __future__ import annotations

from cpersona import shapes
from cpersona.config import Settings
from cpersona.limits import (
    GET_CONTENTS_BUDGET_CHARS,
    LIST_BUDGET_CHARS,
    LIST_EPISODES_LIMIT_DEFAULT,
    LIST_MEMORIES_LIMIT_DEFAULT,
    MAX_REFS_PER_CALL,
    RECALL_FULL_CONTENT_BUDGET_CHARS,
)
from cpersona.server import calls
from cpersona.server.calls import api
from cpersona.server.rules import ADMIN, EDIT_ROW, LIST_ROWS, PROCESS_STATE, READ, WRITE, Rule
from cpersona.server.schemas.common import (
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
from cpersona.server.schemas.links import ASSOCIATIONS


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
            results=(
                shapes.StoreStored,
                shapes.StoreSkipped,
                shapes.StorePaused,
            ),
            access=Rule(WRITE, follows_links=True),  # associations: read on the target memories' agents
            call=api("store", tool_only=("message",), expand=calls.store_message),
            title="Store a memory",
            summary="store one memory; `result: stored \\| skipped \\| rejected`; dedup on msg_id and content, never upserts",
            description=(
                "Save one fact, decision or message to long-term memory. Returns result 'stored' with its "
                "id and ref, 'skipped' when it is a duplicate (same message.id, or identical content in the "
                "same agent/project/channel scope; the existing id is echoed), or 'rejected' with a reason "
                "(e.g. empty content, oversized metadata). There is no upsert: re-storing a message.id with "
                "new content is skipped; use update_memory to change a memory. Content longer than the cap "
                "is cut and the response says truncated: true. 'embedded' tells whether a vector was "
                "computed now (false means keyword search only until the background back-fill runs). "
                "'associations' declares typed links from the new memory in the same write (see "
                "declare_associations); the response lists each link's result; a duplicate is skipped with "
                "its links. "
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
            results=(shapes.RecallResult,),
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
            results=(shapes.RecallWithContextResult,),
            access=Rule(READ),
            call=api("recall_with_context", shape=calls.shape_context),
            title="Recall with conversation context",
            summary="recall merged with the conversation you pass, deduplicated, chronological",
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
            # like recall: only bookkeeping is written
            hints=Hints(read_only=True, destructive=False, idempotent=False),
        ),
        ToolSpec(
            name="get_contents",
            results=(shapes.GetContentsResult,),
            access=Rule(READ),
            call=api("get_contents", shape=calls.shape_contents),
            title="Get full contents",
            summary="full text for `mem:<id>` / `ep:<id>` refs (≤ 20, 40,000-char budget, overflow in `deferred`)",
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
            hints=READS,
        ),
        ToolSpec(
            name="get_history",
            results=(shapes.GetHistoryResult,),
            access=LIST_ROWS,  # by row id: an omitted agent_id narrows to the granted agents
            call=api("get_history", shape=calls.shape_history),
            title="Get a memory's history",
            summary="a memory's supersede chain, oldest to newest, with what replaced what and when",
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
            hints=READS,
        ),
        ToolSpec(
            name="archive_episode",
            results=(shapes.ArchiveEpisodeResult,),
            access=Rule(WRITE),
            call=api("archive_episode"),
            title="Archive a session summary",
            summary="store a session summary; moves the episode boundary",
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
            hints=ADDS,
        ),
        ToolSpec(
            name="update_memory",
            results=(shapes.UpdateMemoryResult,),
            access=EDIT_ROW,
            call=api("update_memory"),
            title="Update a memory",
            summary="replace a memory's content (re-embedded); refused when locked or not owned",
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
            hints=OVERWRITES,
        ),
        ToolSpec(
            name="get_profile",
            results=(shapes.GetProfileResult,),
            access=Rule(READ),
            call=api("get_profile"),
            title="Get profile",
            summary="the agent's profile (≤ 2,000 chars)",
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
            hints=READS,
        ),
        ToolSpec(
            name="update_profile",
            results=(shapes.UpdateProfileResult,),
            access=Rule(WRITE),
            call=api("update_profile"),
            title="Replace profile",
            summary="replace the agent's profile (≤ 2,000 chars)",
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
            hints=OVERWRITES,
        ),
        ToolSpec(
            name="list_memories",
            results=(shapes.ListMemoriesResult,),
            access=LIST_ROWS,
            call=api("list_memories", shape=calls.shape_listing),
            title="List memories",
            summary="browse memories, newest first, with response budgets",
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
            hints=READS,
        ),
        ToolSpec(
            name="list_episodes",
            results=(shapes.ListEpisodesResult,),
            access=LIST_ROWS,
            call=api("list_episodes", shape=calls.shape_listing),
            title="List episodes",
            summary="browse episodes (session summaries), newest first, with response budgets",
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
            hints=READS,
        ),
        ToolSpec(
            name="get_queue_status",
            results=(shapes.QueueStatusResult,),
            access=PROCESS_STATE,
            call=api("get_queue_status"),
            title="Background queue status",
            summary="background queue depth (embedding back-fill, re-embedding)",
            description=(
                "Report the background task queue (embedding back-fill, re-embedding): depth, tasks retrying, "
                "oldest task, counts by kind. An empty queue is the healthy reading."
            ),
            input_schema=object_schema({}),
            hints=READS,
        ),
        ToolSpec(
            name="lock_memory",
            results=(shapes.LockResult,),
            access=EDIT_ROW,
            call=api("lock_memory"),
            title="Lock a memory",
            summary="protect a memory from edit and delete",
            description=(
                "Protect one of your memories from update_memory and delete_memory (protection only; it does "
                "not change ranking). Locking an already locked memory is harmless."
            ),
            input_schema=row_target("memory", "mem"),
            hints=KEEPS,
        ),
        ToolSpec(
            name="unlock_memory",
            results=(shapes.LockResult,),
            access=EDIT_ROW,
            call=api("unlock_memory"),
            title="Unlock a memory",
            summary="lift that protection",
            description="Remove the protection set by lock_memory so the memory can be edited or deleted again.",
            input_schema=row_target("memory", "mem"),
            hints=KEEPS,
        ),
        ToolSpec(
            name="delete_memory",
            results=(shapes.DeleteResult,),
            access=EDIT_ROW,
            call=api("delete_memory"),
            title="Delete a memory",
            summary="delete one memory (ownership enforced)",
            description=(
                "Permanently delete one of your memories. Refused when it is locked or belongs to another agent "
                "(reported as not found)."
            ),
            input_schema=row_target("memory", "mem"),
            hints=OVERWRITES,
        ),
        ToolSpec(
            name="delete_episode",
            results=(shapes.DeleteResult,),
            access=EDIT_ROW,
            call=api("delete_episode"),
            title="Delete an episode",
            summary="delete one episode (ownership enforced)",
            description="Permanently delete one of your archived session summaries (episodes).",
            input_schema=row_target("episode", "ep"),
            hints=OVERWRITES,
        ),
        ToolSpec(
            name="delete_agent_data",
            results=(shapes.DeleteAgentDataResult,),
            access=Rule(ADMIN),
            call=api("delete_agent_data"),
            title="Delete all data of an agent",
            summary="delete everything one agent stored",
            description=(
                "Permanently delete EVERYTHING stored for one agent: memories (locked ones too), episodes, "
                "profiles, queued tasks and calibration state. Returns the counts deleted. Cannot be undone."
            ),
            input_schema=object_schema(
                {"agent_id": string_schema("The agent whose data is erased.")}, required=["agent_id"]
            ),
            hints=OVERWRITES,
        ),
    ]
