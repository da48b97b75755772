"""Shapes of the tools that are not ``Memory`` methods: the persistence switch, the operating
context and the update check (the server answers them from process state and settings)."""

# No ``from __future__ import annotations`` here: with string annotations Python 3.11 cannot see
# NotRequired at runtime, and the doc generator reads __optional_keys__.
from typing import Annotated, Any, Literal, NotRequired, TypedDict

from cpersona.result_types.common import Success


class PersistenceState(TypedDict):
    """persistence_status: whether writes are paused in this process, and the pause window."""

    ok: Success
    paused: Annotated[bool, "Writes are paused (store answers skipped, persisted: false)."]
    remaining_seconds: Annotated[int, "Seconds left in the pause (0 when not paused)."]
    since: Annotated[str | None, "When the pause began (ISO-8601 UTC; null when not paused)."]
    until: Annotated[str | None, "When it ends by itself (ISO-8601 UTC; null when not paused)."]
    ttl_seconds: Annotated[int | None, "The pause's length as asked (null when not paused)."]


class PauseResult(PersistenceState):
    """pause_persistence: the new pause window."""

    was_paused: Annotated[bool, "A pause was already running (this call replaced its window)."]


class ResumeResult(TypedDict):
    """resume_persistence: writes are back on."""

    ok: Success
    paused: Annotated[Literal[False], "Writes are no longer paused."]
    was_paused: Annotated[bool, "A pause was running before this call."]


class OperatingContextResult(TypedDict):
    """get_operating_context: the operator's context file, whole or one section."""

    ok: Annotated[Literal[True], "Success (a missing or disabled file is not an error)."]
    enabled: Annotated[bool, "The context file is switched on (CPERSONA_OPERATING_CONTEXT)."]
    path: Annotated[str, "Where the file is read from."]
    context: Annotated[Any, "The file's content (or the asked section's); null when off or missing."]
    sections: NotRequired[Annotated[list[str], "The file's top-level sections."]]
    section: NotRequired[Annotated[str, "The section asked for."]]
    hint: NotRequired[Annotated[str, "Why there is no context, and how the operator adds one."]]


class CheckUpdateResult(TypedDict):
    """check_update: this release against the newest on the package index (and, with apply, the install)."""

    ok: Success
    current: Annotated[str, "The running version."]
    distribution: Annotated[str, "The package name on the index."]
    enabled: Annotated[bool, "Update checks are on (CPERSONA_UPDATE_CHECK)."]
    latest: Annotated[str | None, "The newest release (null when checks are off)."]
    newer_available: Annotated[bool | None, "latest is newer than current (null when unknown)."]
    current_yanked: Annotated[bool | None, "The running version was yanked (null when unknown)."]
    checked_at: Annotated[str | None, "When the index answered (ISO-8601 UTC)."]
    cached: Annotated[bool, "The answer came from the last 24 h cache."]
    index_url: NotRequired[Annotated[str | None, "The index asked."]]
    note: NotRequired[Annotated[str, "What was (not) done, in a sentence."]]
    applied: NotRequired[Annotated[bool, "apply: the new release was installed."]]
    command: NotRequired[Annotated[list[str], "apply: the pip command run."]]
    exit_code: NotRequired[Annotated[int, "apply: pip's exit code."]]
    stdout_tail: NotRequired[Annotated[str, "apply: the end of pip's output."]]
    stderr_tail: NotRequired[Annotated[str, "apply: the end of pip's error output."]]


class ToolError(TypedDict):
    """Any tool's failure (the MCP layer's uniform shape; the refusal may add its own keys)."""

    ok: Annotated[Literal[False], "Failure."]
    error: Annotated[str, "What went wrong, in a sentence, and what to do."]
    error_code: Annotated[str, "A stable code (invalid_input, not_found, forbidden, ...)."]
