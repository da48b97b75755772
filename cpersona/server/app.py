"""The MCP server object: the lowlevel ``Server`` with tools/list and tools/call over a ``Memory``.

Behaviour lives in ``Memory``; this module only lists the registry and hands
calls to ``dispatch_tool`` in a worker thread, because Memory calls block
(SQLite, ONNX inference) and the event loop must keep answering other requests.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import anyio.to_thread
import mcp.types as types
from mcp.server.lowlevel import Server

from cpersona import __version__, operating_context
from cpersona.config import Settings
from cpersona.memory import Memory
from cpersona.server.dispatch import dispatch_tool
from cpersona.server.schemas import TOOLS, TOOLS_BY_NAME

SERVER_NAME = "cpersona"

#: How many tool calls may run Memory code at once; more wait their turn instead of piling threads.
MAX_CONCURRENT_CALLS = 8

INSTRUCTIONS = """\
CPersona is your long-term memory across sessions.
- At the start of a task, call recall with your agent_id and what the task is about. Results are \
ordered worst to best: the LAST element is the best match. Long texts arrive as 500-character \
previews (content_truncated: true); call get_contents with their refs ('mem:<id>', 'ep:<id>') for \
the full text.
- When you learn a durable fact, decision or preference, call store with a self-contained message \
(message.content). Duplicates are skipped, never overwritten; use update_memory to change one.
- At the end of a session, call archive_episode with a summary of what happened and what is open.
- Keep a short standing profile with get_profile / update_profile.
- Always pass the same agent_id; rows are isolated per agent. Any response with "error" is a failure.\
"""


def instructions(settings: Settings) -> str:
    """The ``initialize`` instructions: the fixed guidance plus the operator's context file, if any.

    The file is read once here, at start-up; ``get_operating_context`` re-reads it per call.
    """
    block = operating_context.instructions_block(settings)
    return INSTRUCTIONS if block is None else f"{INSTRUCTIONS}\n\n{block}"


def tool_list() -> list[types.Tool]:
    """The registry as MCP ``Tool`` objects."""
    return [
        types.Tool(
            name=spec.name,
            title=spec.title or None,
            description=spec.description,
            input_schema=spec.input_schema,
            annotations=types.ToolAnnotations(
                title=spec.title or None,
                read_only_hint=spec.read_only,
                destructive_hint=spec.destructive,
                idempotent_hint=spec.idempotent,
                open_world_hint=spec.open_world,
            ),
        )
        for spec in TOOLS
    ]


def to_call_result(response: dict[str, Any]) -> types.CallToolResult:
    """One TextContent with the JSON plus the same object as structured content."""
    text = json.dumps(response, ensure_ascii=False)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=response,
        is_error=response.get("ok") is False,
    )


def build_server(memory: Memory, settings: Settings) -> Server[Any]:
    """Build the lowlevel MCP server named "cpersona" over ``memory``.

    Nothing here waits for the embedding model: ``initialize`` and
    ``tools/list`` answer at once while Memory loads the model in the background.
    """
    tools = tool_list()
    limiter = anyio.CapacityLimiter(MAX_CONCURRENT_CALLS)

    async def on_list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        response = await anyio.to_thread.run_sync(
            dispatch_tool, memory, settings, params.name, params.arguments, limiter=limiter
        )
        return to_call_result(response)

    def input_schema(name: str) -> dict[str, Any] | None:
        spec = TOOLS_BY_NAME.get(name)
        return None if spec is None else spec.input_schema

    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=instructions(settings),
        get_tool_input_schema=input_schema,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )
