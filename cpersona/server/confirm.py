"""Confirmation before destruction: the calls that erase or overwrite an agent's rows ask the user
first, when the client can ask: ``delete_agent_data``, ``merge_memories`` with ``mode: move`` (it
empties the source agent) and ``import_memories`` with ``target_agent_id`` naming an agent that
already holds rows. Dry runs are never asked about.

MCP lets a server ask the client's user (elicitation): on 2026-07-28 the call answers an
``input_required`` result carrying the question and the client calls again with the answer
(``inputResponses``); on the handshake revisions the server sends ``elicitation/create`` during
the call. Either way the question names what would go (the agent's counts), and only an explicit
yes (``accept`` with ``confirm: true``) lets the call run; a no, a dismissal or an unreadable
answer changes nothing. A client that declared no elicitation capability is not asked: the call
runs as it always has (docs/tools.md, ``delete_agent_data``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import mcp.types as types

from cpersona.core.text import counted

#: The tools that may ask first.
CONFIRMED_TOOLS = frozenset({"delete_agent_data", "merge_memories", "import_memories"})
ANSWER_KEY = "confirm"
_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {ANSWER_KEY: {"type": "boolean", "title": "Go ahead"}},
    "required": [ANSWER_KEY],
}


def agent_at_stake(name: str, arguments: dict[str, Any]) -> str | None:
    """The agent whose rows the call would erase or change, or None when it needs no question."""
    if arguments.get("dry_run") is True:
        return None
    wanted = {
        "delete_agent_data": arguments.get("agent_id"),
        "merge_memories": arguments.get("source_agent_id") if arguments.get("mode") == "move" else None,
        "import_memories": arguments.get("target_agent_id"),
    }.get(name)
    return wanted if isinstance(wanted, str) else None


#: The first revision where the question travels as an input_required result.
_INPUT_REQUIRED_REVISION = "2026-07-28"


def can_ask(ctx: Any) -> bool:
    """True when the client behind ``ctx`` declared the elicitation capability."""
    capabilities = getattr(getattr(ctx, "session", None), "client_capabilities", None)
    return getattr(capabilities, "elicitation", None) is not None


def question(name: str, arguments: dict[str, Any], agent: str, counts: dict[str, Any] | None) -> str | None:
    """The question, with what is at stake; None when nothing is (an import into an empty agent)."""
    if counts is None and name == "import_memories":
        return None
    held = (
        "no rows"
        if counts is None
        else ", ".join(
            counted(int(counts.get(kind, 0)), noun, kind)
            for kind, noun in (("memories", "memory"), ("episodes", "episode"), ("profiles", "profile"))
        )
    )
    shown = repr(agent[:80])
    if name == "merge_memories":
        target = str(arguments.get("target_agent_id", ""))[:80]
        return f"Move everything of agent {shown} ({held}) into agent {target!r}, leaving {shown} empty?"
    if name == "import_memories":
        path = str(arguments.get("input_path", ""))[:200]
        return f"Import {path!r} into agent {shown}, which already holds {held}? Rows already there are kept."
    return (
        f"Permanently delete everything stored for agent {shown} ({held}), locked memories "
        "included? This cannot be undone."
    )


def accepted(answer: Any) -> bool:
    """Only an explicit yes: ``accept`` whose content says ``confirm: true``."""
    return (
        isinstance(answer, types.ElicitResult)
        and answer.action == "accept"
        and (answer.content or {}).get(ANSWER_KEY) is True
    )


async def ask(
    ctx: Any,
    name: str,
    arguments: dict[str, Any],
    input_responses: dict[str, Any] | None,
    count: Callable[[str], Awaitable[dict[str, Any] | None]],
) -> bool | types.InputRequiredResult:
    """True to run the call, False when the user said no, or the ``input_required`` result to answer
    with (2026-07-28, first round). Only called for ``CONFIRMED_TOOLS`` when ``can_ask(ctx)``.

    An import into an agent that holds nothing yet asks nothing (``count`` says None)."""
    agent = agent_at_stake(name, arguments)
    if agent is None:
        return True  # nothing at stake: a copy, a dry run
    modern = str(getattr(ctx, "protocol_version", "")) >= _INPUT_REQUIRED_REVISION
    if modern and input_responses is not None:
        return accepted(input_responses.get(ANSWER_KEY))
    text = question(name, arguments, agent, await count(agent))
    if text is None:
        return True
    form = types.ElicitRequestFormParams(message=text, requested_schema=_SCHEMA)
    if modern:
        return types.InputRequiredResult(
            input_requests={ANSWER_KEY: types.ElicitRequest(params=form)}, request_state=name
        )
    answer = await ctx.session.elicit_form(
        form.message, form.requested_schema, related_request_id=getattr(ctx, "request_id", None)
    )
    return accepted(answer)
