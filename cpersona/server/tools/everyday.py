"""Everyday memory: store, recall, contents, episodes, edits, profile, browsing, protection, deletion"""

from __future__ import annotations

from cpersona.config import Settings
from cpersona.core.limits import GET_CONTENTS_BUDGET_CHARS
from cpersona.server import calls
from cpersona.server.calls import api
from cpersona.server.rules import ADMIN, EDIT_ROW, LIST_ROWS, PROCESS_STATE, READ, WRITE, Rule
from cpersona.server.tools.common import ADDS, KEEPS, OVERWRITES, READS, Hints, ToolSpec, thousands

#: store's message on the wire stands for these parameters of ``Memory.store`` (calls.store_message).
MESSAGE_PARAMETERS = ("content", "msg_id", "source", "timestamp", "metadata")


def tools(settings: Settings) -> list[ToolSpec]:
    """Everyday memory tools, described for ``settings`` (the preview size, the profile cap)."""
    preview = thousands(settings.recall_preview_chars)
    return [
        ToolSpec(
            name="store",
            access=Rule(WRITE, follows_links=True),  # associations: read on the target memories' agents
            call=api(
                "store",
                wire={"message": ("StoreMessage", MESSAGE_PARAMETERS)},
                expand=calls.store_message,
            ),
            title="Store a memory",
            summary="store one memory; `result: stored \\| skipped \\| rejected`; dedup on msg_id and content, never upserts",
            description=(
                "Save one fact, decision or message. result: 'stored' (ref), 'skipped' (same message.id or content: to change a memory use update_memory) or 'rejected' (reason)."
            ),
            # Dedup on msg_id/content means repeating the same call adds nothing.
            hints=KEEPS,
        ),
        ToolSpec(
            name="recall",
            access=Rule(READ),  # records recall statistics, but reveals and changes no content
            call=api(
                "recall",
                shape=calls.shape_recall,
                wire={
                    "exclude_contents": ("ExcludeContents", ("exclude_contents",)),
                    "full_content": ("Annotated[bool, Field(default=False)]", ()),
                },
                convert={"exclude_contents": calls.strings},
            ),
            title="Recall memories",
            describe={"full_content": f"Return full texts instead of {preview}-character previews."},
            summary="hybrid search; results worst → best, **the last element is the best match**; long rows previewed with a `ref`",
            description=(
                f"Search your memories and episodes. Results run worst to best: the LAST is the best match. Texts over {preview} characters are cut (content_truncated); get_contents(ref) has the whole. Empty is no error: 'explanation' says why."
            ),
            # Read-only for hosts: the recall statistics it keeps (recall_count, last_recalled_at) are
            # bookkeeping, not the user's data (docs/decisions.md, "MCP layer").
            hints=Hints(read_only=True, destructive=False, idempotent=False),
        ),
        ToolSpec(
            name="recall_with_context",
            access=Rule(READ),
            call=api("recall_with_context", shape=calls.shape_context),
            title="Recall with conversation context",
            summary="recall merged with the conversation you pass, deduplicated, chronological",
            description=(
                "Recall merged with the conversation entries you pass (external_context), deduplicated, in time order (not by score)."
            ),
            # like recall: only bookkeeping is written
            hints=Hints(read_only=True, destructive=False, idempotent=False),
        ),
        ToolSpec(
            name="get_contents",
            access=Rule(READ),
            call=api("get_contents", shape=calls.shape_contents),
            title="Get full contents",
            summary="full text for `mem:<id>` / `ep:<id>` refs (≤ 20, 40,000-char budget, overflow in `deferred`)",
            description=(
                f"The full text of rows by ref ('mem:<id>', 'ep:<id>'). Unknown refs come back in 'missing'; those past {thousands(GET_CONTENTS_BUDGET_CHARS)} characters in 'deferred' (call again with them)."
            ),
            hints=READS,
        ),
        ToolSpec(
            name="get_history",
            access=LIST_ROWS,  # by row id: an omitted agent_id narrows to the granted agents
            call=api("get_history", shape=calls.shape_history),
            title="Get a memory's history",
            summary="a memory's supersede chain, oldest to newest, with what replaced what and when",
            description=(
                "A memory's supersede chain (store's supersedes), oldest to newest; 'current' is the one in force."
            ),
            hints=READS,
        ),
        ToolSpec(
            name="archive_episode",
            access=Rule(WRITE),
            call=api("archive_episode"),
            title="Archive a session summary",
            summary="store a session summary; moves the episode boundary",
            description=(
                "Store your summary of a finished session or task (an episode); recall searches it. history (its messages) sets its start and end."
            ),
            hints=ADDS,
        ),
        ToolSpec(
            name="update_memory",
            access=EDIT_ROW,
            call=api("update_memory"),
            title="Update a memory",
            summary="replace a memory's content (re-embedded); refused when locked or not owned",
            description=(
                "Replace the content of one of your memories; refused when locked. With supersedes, content may be left out."
            ),
            hints=OVERWRITES,
        ),
        ToolSpec(
            name="get_profile",
            access=Rule(READ),
            call=api("get_profile"),
            title="Get profile",
            summary="the agent's profile (≤ 2,000 chars)",
            description=(
                "Read the agent's standing profile (the user, or your role), kept with update_profile; null when none."
            ),
            hints=READS,
        ),
        ToolSpec(
            name="update_profile",
            access=Rule(WRITE),
            call=api("update_profile"),
            title="Replace profile",
            summary="replace the agent's profile (≤ 2,000 chars)",
            description=(
                f"Replace the agent's profile text entirely (at most {thousands(settings.max_profile_length)} characters; longer is cut). Read it first to amend it."
            ),
            hints=OVERWRITES,
        ),
        ToolSpec(
            name="list_memories",
            access=LIST_ROWS,
            call=api("list_memories", shape=calls.shape_listing),
            title="List memories",
            summary="browse memories, newest first, with response budgets",
            description=(
                "List memories, newest first, with total; without agent_id, every agent's (operator use)."
            ),
            hints=READS,
        ),
        ToolSpec(
            name="list_episodes",
            access=LIST_ROWS,
            call=api("list_episodes", shape=calls.shape_listing),
            title="List episodes",
            summary="browse episodes (session summaries), newest first, with response budgets",
            description=(
                "List episodes (session summaries), newest first, with total; without agent_id, every agent's."
            ),
            hints=READS,
        ),
        ToolSpec(
            name="get_queue_status",
            access=PROCESS_STATE,
            call=api("get_queue_status"),
            title="Background queue status",
            summary="background queue depth (embedding back-fill, re-embedding)",
            description=(
                "The background queue (embedding back-fill, re-embedding): depth, retries, oldest task. Empty is healthy."
            ),
            hints=READS,
        ),
        ToolSpec(
            name="lock_memory",
            access=EDIT_ROW,
            call=api("lock_memory"),
            title="Lock a memory",
            summary="protect a memory from edit and delete",
            description=(
                "Protect one of your memories from update_memory and delete_memory (ranking is unchanged)."
            ),
            hints=KEEPS,
        ),
        ToolSpec(
            name="unlock_memory",
            access=EDIT_ROW,
            call=api("unlock_memory"),
            title="Unlock a memory",
            summary="lift that protection",
            description="Remove lock_memory's protection so the memory can be edited or deleted again.",
            hints=KEEPS,
        ),
        ToolSpec(
            name="delete_memory",
            access=EDIT_ROW,
            call=api("delete_memory"),
            title="Delete a memory",
            summary="delete one memory (ownership enforced)",
            description=("Permanently delete one of your memories (refused when it is locked)."),
            hints=OVERWRITES,
        ),
        ToolSpec(
            name="delete_episode",
            access=EDIT_ROW,
            call=api("delete_episode"),
            title="Delete an episode",
            summary="delete one episode (ownership enforced)",
            description="Permanently delete one of your episodes (session summaries).",
            hints=OVERWRITES,
        ),
        ToolSpec(
            name="delete_agent_data",
            access=Rule(ADMIN),
            call=api("delete_agent_data"),
            title="Delete all data of an agent",
            summary="delete everything one agent stored",
            description=(
                "Permanently delete EVERYTHING of one agent (locked memories, episodes, profiles too); returns the counts. Cannot be undone."
            ),
            hints=OVERWRITES,
        ),
    ]
