"""Confirmation before destruction: ``delete_agent_data`` asks the user first, when the client can ask.

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

#: The tools that ask first, and the argument naming what they erase.
CONFIRMED_TOOLS = {"delete_agent_data": "agent_id"}
ANSWER_KEY = "confirm"
_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {ANSWER_KEY: {"type": "boolean", "title": "Delete everything of this agent"}},
    "required": [ANSWER_KEY],
}
#: The first revision where the question travels as an input_required result.
_INPUT_REQUIRED_REVISION = "2026-07-28"


def can_ask(ctx: Any) -> bool:
    """True when the client behind ``ctx`` declared the elicitation capability."""
    capabilities = getattr(getattr(ctx, "session", None), "client_capabilities", None)
    return getattr(capabilities, "elicitation", None) is not None


def question(agent: str, counts: dict[str, Any] | None) -> str:
    """The question, with what would be erased."""
    if counts is None:
        held = "no rows"
    else:
        held = ", ".join(f"{counts.get(k, 0):,} {k}" for k in ("memories", "episodes", "profiles"))
    return (
        f"Permanently delete everything stored for agent {agent[:80]!r} ({held}), locked memories "
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
    ctx: Any, params: types.CallToolRequestParams, count: Callable[[str], Awaitable[dict[str, Any] | None]]
) -> bool | types.InputRequiredResult:
    """True to run the call, False when the user said no, or the ``input_required`` result to answer
    with (2026-07-28, first round). Only called for ``CONFIRMED_TOOLS`` when ``can_ask(ctx)``."""
    arguments = params.arguments or {}
    agent = arguments.get(CONFIRMED_TOOLS[params.name])
    if not isinstance(agent, str):
        return True  # the schema check refuses it with a clear message; nothing to ask about
    modern = str(getattr(ctx, "protocol_version", "")) >= _INPUT_REQUIRED_REVISION
    if modern and params.input_responses is not None:
        return accepted(params.input_responses.get(ANSWER_KEY))
    form = types.ElicitRequestFormParams(
        message=question(agent, await count(agent)), requested_schema=_SCHEMA
    )
    if modern:
        return types.InputRequiredResult(
            input_requests={ANSWER_KEY: types.ElicitRequest(params=form)}, request_state=params.name
        )
    answer = await ctx.session.elicit_form(
        form.message, form.requested_schema, related_request_id=getattr(ctx, "request_id", None)
    )
    return accepted(answer)
