"""MCP prompts as plain Python: texts that help an agent use the memory well, with no model of ours.

A prompt is a template the host fills in and hands to its own model; the model then calls the
tools. Each prompt declares its arguments (all strings, as MCP prompts take) and the tool it
leads to, whose access class (``cpersona.server.access``) its ``agent_id`` must hold under an
ACL. ``get_prompt`` validates the arguments (unknown names, missing required ones, overlong
values) and raises ``InvalidInput`` saying which; it never reads the store.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cpersona.core.limits import MAX_IDENTIFIER_CHARS, PROMPT_TEXT_ARGUMENT_CHARS
from cpersona.errors import InvalidInput


@dataclass(frozen=True)
class PromptArgument:
    """One declared argument of a prompt."""

    name: str
    description: str
    required: bool = False
    identifier: bool = False  # an id (agent_id, project_id): at most MAX_IDENTIFIER_CHARS

    @property
    def max_chars(self) -> int:
        """The longest value accepted."""
        return MAX_IDENTIFIER_CHARS if self.identifier else PROMPT_TEXT_ARGUMENT_CHARS


@dataclass(frozen=True)
class PromptSpec:
    """One prompt: its name, what it is for, its arguments and the tool it leads the model to call."""

    name: str
    title: str
    description: str
    arguments: tuple[PromptArgument, ...]
    leads_to: str


_AGENT = PromptArgument("agent_id", "Your agent id (the same one you pass to every tool).", True, True)
_PROJECT = PromptArgument(
    "project_id", "Optional project id: scope the call to this project (plus the global pool).", False, True
)

PROMPTS: tuple[PromptSpec, ...] = (
    PromptSpec(
        name="archive_session",
        title="Archive this session",
        description=(
            "Turn the current session into the arguments of archive_episode (summary, keywords, resolved) "
            "and call it, so the next session can pick up where this one stopped."
        ),
        arguments=(
            _AGENT,
            _PROJECT,
            PromptArgument(
                "focus", "Optional: what the summary must not leave out (a decision, an open item)."
            ),
        ),
        leads_to="archive_episode",
    ),
    PromptSpec(
        name="recall_before_answering",
        title="Recall before answering",
        description=(
            "Ask the model to call recall with the question first and ground its answer in what the "
            "memory returns (or say plainly that nothing relevant is stored)."
        ),
        arguments=(
            _AGENT,
            PromptArgument("question", "The question or task to answer.", True),
            _PROJECT,
        ),
        leads_to="recall",
    ),
)
PROMPTS_BY_NAME: dict[str, PromptSpec] = {p.name: p for p in PROMPTS}


def prompt_spec(name: Any) -> PromptSpec:
    """The prompt called ``name``; InvalidInput naming the known prompts otherwise."""
    spec = PROMPTS_BY_NAME.get(name) if isinstance(name, str) else None
    if spec is None:
        shown = str(name)[:80] if isinstance(name, str) else type(name).__name__
        raise InvalidInput(f"unknown prompt {shown!r}; prompts: {', '.join(PROMPTS_BY_NAME)}")
    return spec


def list_prompts() -> dict[str, Any]:
    """Every prompt with its declared arguments: ``{ok, prompts: [{name, title, description, arguments}]}``."""
    return {
        "ok": True,
        "prompts": [
            {
                "name": p.name,
                "title": p.title,
                "description": p.description,
                "arguments": [
                    {"name": a.name, "description": a.description, "required": a.required}
                    for a in p.arguments
                ],
            }
            for p in PROMPTS
        ],
    }


def validated_arguments(spec: PromptSpec, arguments: Mapping[str, Any] | None) -> dict[str, str]:
    """The prompt's arguments checked against its declaration (omitted optional ones are absent)."""
    given = dict(arguments or {})
    declared = {a.name: a for a in spec.arguments}
    unknown = sorted(k for k in given if k not in declared)
    if unknown:
        raise InvalidInput(
            f"prompt {spec.name} has no argument {str(unknown[0])[:80]!r}; its arguments: {', '.join(declared)}"
        )
    values: dict[str, str] = {}
    for arg in spec.arguments:
        value = given.get(arg.name)
        if value is None or value == "":
            if arg.required:
                raise InvalidInput(f"prompt {spec.name} needs the argument {arg.name!r}")
            continue
        if not isinstance(value, str):
            raise InvalidInput(f"argument {arg.name!r} must be a string")
        if len(value) > arg.max_chars:
            raise InvalidInput(f"argument {arg.name!r} is longer than {arg.max_chars:,} characters")
        if "\x00" in value:
            raise InvalidInput(f"argument {arg.name!r} contains a NUL character")
        values[arg.name] = value
    return values


def get_prompt(name: Any, arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The filled-in prompt: ``{ok, name, description, leads_to, messages: [{role, text}]}``.

    Raises InvalidInput for an unknown prompt or bad arguments.
    """
    spec = prompt_spec(name)
    values = validated_arguments(spec, arguments)
    text = _RENDER[spec.name](values)
    return {
        "ok": True,
        "name": spec.name,
        "description": spec.description,
        "leads_to": spec.leads_to,
        "messages": [{"role": "user", "text": text}],
    }


def _json(value: Mapping[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


def _archive_session(values: Mapping[str, str]) -> str:
    skeleton: dict[str, Any] = {
        "agent_id": values["agent_id"],
        "summary": "<what happened, what was decided, what is still open>",
        "keywords": ["<3 to 8 words someone would search for>"],
        "resolved": False,
    }
    if "project_id" in values:
        skeleton["project_id"] = values["project_id"]
    focus = values.get("focus")
    focus_line = f"\nMake sure the summary covers: {focus}\n" if focus else ""
    return (
        "Archive this session in long-term memory by calling the archive_episode tool.\n\n"
        "Write the summary for a reader who was not here (your future self in a new session):\n"
        "- what the task was and what was done, with the concrete names, numbers and paths;\n"
        "- decisions made and why;\n"
        "- what is still open, and the next step.\n"
        "Keep it self-contained and under a few paragraphs; do not paste the transcript.\n"
        "Set resolved to true only when nothing is left open. Durable facts or preferences that "
        "should be found on their own belong in separate store calls.\n"
        f"{focus_line}\n"
        "Call archive_episode with arguments of this shape (replace the <...> parts):\n"
        f"{_json(skeleton)}"
    )


def _recall_before_answering(values: Mapping[str, str]) -> str:
    call: dict[str, Any] = {"agent_id": values["agent_id"], "query": values["question"]}
    if "project_id" in values:
        call["project_id"] = values["project_id"]
    return (
        "Before you answer, check your long-term memory.\n\n"
        "1. Call the recall tool with these arguments:\n"
        f"{_json(call)}\n"
        "2. Results come worst to best: the LAST one is the best match. Texts marked "
        "content_truncated are previews; call get_contents with their refs for the full text.\n"
        "3. If recall returns nothing relevant, say that nothing about it is stored and answer "
        "from what you know; never present a guess as a memory.\n"
        "4. Answer, naming which memories you relied on. If you learn a durable fact while "
        "answering, store it.\n\n"
        f"Question: {values['question']}"
    )


_RENDER = {"archive_session": _archive_session, "recall_before_answering": _recall_before_answering}
