"""The hosts' hook JSON: what each host sends on stdin and what it reads back from stdout.

Both hosts send one JSON object with ``session_id``, ``cwd`` and ``hook_event_name``;
``UserPromptSubmit`` adds ``prompt`` and ``SessionStart`` adds ``source`` (Claude Code:
startup | resume | clear | compact; Codex: startup | resume | clear). Both read
``{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}`` from a hook that
exits 0, for ``SessionStart`` and ``UserPromptSubmit`` only; ``PreCompact`` can inject nothing
into the model on either host (Codex's output schema for it has no ``additionalContext``).
Sources: docs/hosts-claude-code.md and docs/hosts-codex.md.

Stdlib only, and only what a hook needs: this module is imported by every hook call, and each
import costs start-up time on every prompt (``typing`` and ``dataclasses`` alone cost more than the
rest of the hook on a busy machine), so type names are imported for the checker only.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Mapping

HOSTS = ("claude-code", "codex")
#: Our event names -> the host's event name (the same spelling on both hosts).
EVENTS = {
    "session-start": "SessionStart",
    "prompt": "UserPromptSubmit",
    "pre-compact": "PreCompact",
}
#: The events whose answer reaches the model (additionalContext).
INJECTING = frozenset({"session-start", "prompt"})
#: Larger input is refused unread: a prompt hook sees the user's prompt, never megabytes.
MAX_INPUT_BYTES = 1_000_000


#: The server entry's variable holding the agent_id that ``register --hooks`` bound (the hooks carry
#: the same value as ``--agent-id``).
AGENT_VARIABLE = "CPERSONA_AGENT_ID"


def bound_agent_id(environ: Mapping[str, str] | None = None) -> str | None:
    """The agent_id this server entry was bound to, or None."""
    value = (os.environ if environ is None else environ).get(AGENT_VARIABLE, "").strip()
    return value or None


class HookInputError(ValueError):
    """The host's input cannot be used (not JSON, not an object, a field of the wrong type)."""


class HookInput:
    """What a hook needs from the host's JSON."""

    __slots__ = ("cwd", "event", "prompt", "session_id", "source")

    def __init__(self, event: str, session_id: str, cwd: str, prompt: str, source: str) -> None:
        """``event`` is ours (session-start | prompt | pre-compact); ``prompt`` is the
        UserPromptSubmit prompt and ``source`` the SessionStart source, "" for other events."""
        self.event = event
        self.session_id = session_id
        self.cwd = cwd
        self.prompt = prompt
        self.source = source

    def as_json(self) -> dict[str, str]:
        """The fields as a JSON object (what the hook sends the server)."""
        return {
            "event": self.event,
            "session_id": self.session_id,
            "cwd": self.cwd,
            "prompt": self.prompt,
            "source": self.source,
        }


def _text(data: dict[str, object], key: str) -> str:
    value = data.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise HookInputError(f"{key!r} is {type(value).__name__}, not a string")
    return value


def parse_input(raw: bytes, event: str) -> HookInput:
    """The host's JSON for ``event``; HookInputError when it cannot be used."""
    if event not in EVENTS:
        raise HookInputError(f"unknown event {event!r}; known: {', '.join(EVENTS)}")
    if len(raw) > MAX_INPUT_BYTES:
        raise HookInputError(f"input of {len(raw):,} bytes is over the {MAX_INPUT_BYTES:,}-byte limit")
    if not raw.strip():
        raise HookInputError("no input on stdin")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HookInputError(f"input is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise HookInputError(f"input is JSON {type(data).__name__}, not an object")
    named = data.get("hook_event_name")
    if named is not None and named != EVENTS[event]:
        raise HookInputError(f"hook_event_name is {named!r}, this hook handles {EVENTS[event]}")
    return HookInput(
        event=event,
        session_id=_text(data, "session_id"),
        cwd=_text(data, "cwd"),
        prompt=_text(data, "prompt") if event == "prompt" else "",
        source=_text(data, "source") if event == "session-start" else "",
    )


def render_output(event: str, context: str | None) -> str:
    """What the hook prints: the host's JSON carrying ``context``, or "" (print nothing)."""
    if not context or event not in INJECTING:
        return ""
    payload = {"hookSpecificOutput": {"hookEventName": EVENTS[event], "additionalContext": context}}
    return json.dumps(payload, ensure_ascii=False)
