"""The MCP server object: the lowlevel ``Server`` with tools (and resources, prompts) over a ``Memory``.

Behaviour lives in ``Memory``; this module only lists the registry and hands
calls to ``dispatch_tool`` in a worker thread, because Memory calls block
(SQLite, ONNX inference) and the event loop must keep answering other requests.

Nothing the handshake does not need is imported here: ``Memory`` (numpy, the
model runtime) and the dispatcher (jsonschema) are imported by the first tool
call, or by the thread ``PendingMemory`` runs, so ``initialize`` is answered
as soon as the MCP SDK itself is loaded.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.to_thread
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INVALID_PARAMS

from cpersona import __version__
from cpersona.config import OutputSchemaDetail, Settings
from cpersona.core.work import Work
from cpersona.hooks.wire import bound_agent_id
from cpersona.runtime import operating_context
from cpersona.server import identity
from cpersona.server.client_auth import request_client
from cpersona.server.confirm import CONFIRMED_TOOLS, can_ask
from cpersona.server.confirm import ask as ask_user
from cpersona.server.long_calls import run_cancellable, work_for
from cpersona.server.output_schemas import output_schema
from cpersona.server.pending_memory import PendingMemory
from cpersona.server.resources_prompts import SurfaceHandlers
from cpersona.server.tasks import TaskStore, cancelled_summary, wants_task, worth_a_task
from cpersona.server.tasks import register as register_tasks
from cpersona.server.tools import ToolSpec, offered_tools

if TYPE_CHECKING:
    from cpersona.memory import Memory

log = logging.getLogger("cpersona.server")

SERVER_NAME = "cpersona"

#: How many tool calls may run Memory code at once; more wait their turn instead of piling threads.
MAX_CONCURRENT_CALLS = 8

_INSTRUCTIONS = """\
CPersona is your long-term memory across sessions.
- At the start of a task, call recall with your agent_id and what the task is about. Results are \
ordered worst to best: the LAST element is the best match. Long texts arrive as {preview}-character \
previews (content_truncated: true); call get_contents with their refs ('mem:<id>', 'ep:<id>') for \
the full text.
- When you learn a durable fact, decision or preference, call store with a self-contained message \
(message.content). Duplicates are skipped, never overwritten; use update_memory to change one.
- At the end of a session, call archive_episode with a summary of what happened and what is open.
- Keep a short standing profile with get_profile / update_profile.
- Always pass the same agent_id; rows are isolated per agent. Any response with "error" is a failure.\
"""


def base_instructions(settings: Settings) -> str:
    """The fixed guidance every client gets, quoting the configured preview size."""
    return _INSTRUCTIONS.format(preview=f"{settings.recall_preview_chars:,}")


def instructions(settings: Settings) -> str:
    """The ``initialize`` instructions: the fixed guidance (quoting the configured preview size) plus
    the operator's context file, if any.

    The file is read once here, at start-up; ``get_operating_context`` re-reads it per call.
    """
    base = base_instructions(settings)
    bound = bound_agent_id()
    if bound is not None:  # the host's hooks name the same id (cpersona register --hooks)
        base += f'\n- This host is bound to agent_id "{bound}": pass it on every call.'
    block = operating_context.instructions_block(settings)
    return base if block is None else f"{base}\n\n{block}"


def tool_list(specs: tuple[ToolSpec, ...], detail: OutputSchemaDetail = "full") -> list[types.Tool]:
    """The registry as MCP ``Tool`` objects (annotations come from ``ToolSpec.annotations``, the
    output schema from the tool's result shapes at ``detail``: cpersona/server/output_schemas.py)."""
    return [
        types.Tool(
            name=spec.name,
            title=spec.title or None,
            description=spec.description,
            input_schema=spec.input_schema,
            output_schema=output_schema(spec.name, detail),
            annotations=types.ToolAnnotations.model_validate(spec.annotations()),
        )
        for spec in specs
    ]


def unknown_tool_error(name: str, listed: Mapping[str, ToolSpec]) -> MCPError:
    """The JSON-RPC error for a tool name the server does not list.

    Every MCP revision (2024-11-05 to 2026-07-28) counts an unknown tool as a protocol error,
    ``-32602``, not a tool result: a model cannot fix it by retrying with other arguments. The
    ``data`` keeps the ``error_code`` the tools use and names the tools a caller can pick from.
    """
    shown = name if len(name) <= 80 else name[:80] + "…"
    return MCPError(
        INVALID_PARAMS,
        f"Unknown tool: {shown!r}; see tools/list",
        {"error_code": "unknown_tool", "tools": sorted(listed)},
    )


#: The tools whose answers link each row as a resource, and the key holding their rows.
LINKED_ROWS = {"recall": "results", "reconstruct": "items"}


def wire_result(response: dict[str, Any], tool: str) -> dict[str, Any]:
    """A tool's answer as the 2026-07-28 wire writes its ``CallToolResult`` (a task's ``result``)."""
    dumped = to_call_result(response, tool).model_dump(by_alias=True, mode="json", exclude_none=True)
    return {"resultType": "complete", **dumped}


def to_call_result(response: dict[str, Any], tool: str = "") -> types.CallToolResult:
    """One TextContent with the JSON plus the same object as structured content; after the text, for
    recall and reconstruct, a ``resource_link`` per row (``cpersona://agents/<id>/memories/<n>``, read
    with resources/read), so a client can fetch or attach a row without parsing the JSON."""
    from cpersona.services.resources import resource_links

    text = json.dumps(response, ensure_ascii=False)
    content: list[types.ContentBlock] = [types.TextContent(type="text", text=text)]
    if tool in LINKED_ROWS and response.get("ok") is True:
        content += [
            types.ResourceLink(
                type="resource_link", uri=link["uri"], name=link["name"], mime_type=link["mime_type"]
            )
            for link in resource_links(response.get(LINKED_ROWS[tool]))
        ]
    return types.CallToolResult(
        content=content,
        structured_content=response,
        is_error=response.get("ok") is False,
    )


def _call(
    source: Memory | PendingMemory,
    settings: Settings,
    name: str,
    arguments: Any,
    client: Any = None,
    work: Work | None = None,
) -> dict[str, Any]:
    from cpersona.errors import CPersonaError
    from cpersona.server.dispatch import dispatch_tool, failure

    try:
        memory = source.get() if isinstance(source, PendingMemory) else source
    except CPersonaError as exc:
        return failure(str(exc), exc.code)
    except Exception as exc:
        return failure(f"the memory database could not be opened: {exc}", "database_unavailable")
    response = dispatch_tool(memory, settings, name, arguments, client, work)
    if response.get("error_code") == "cancelled":
        # The SDK never sends a cancelled call's reply (MCP says so): the log is where it is told.
        log.info("%s", cancelled_summary(response))
    return response


def _agent_counts(source: Memory | PendingMemory, agent: str) -> dict[str, Any] | None:
    """The agent's row counts for the confirmation question (None: it owns no rows)."""
    memory = source.get() if isinstance(source, PendingMemory) else source
    return next((dict(a) for a in memory.list_agents()["agents"] if a["agent_id"] == agent), None)


def build_server(memory: Memory | PendingMemory, settings: Settings, *, acl: bool = False) -> Server[Any]:
    """Build the lowlevel MCP server named "cpersona" over ``memory`` (open, or being opened).

    Nothing here waits for the embedding model or the database: ``initialize``
    and ``tools/list`` answer at once while Memory opens and loads the model in
    the background.

    With ``acl`` (HTTP behind an ACL file) every tool call runs with the grants
    of the client the HTTP middleware authenticated; a call without one is refused.
    """
    specs = offered_tools(settings)
    specs_by_name = {spec.name: spec for spec in specs}
    tools = tool_list(specs, settings.output_schemas)
    limiter = anyio.CapacityLimiter(MAX_CONCURRENT_CALLS)
    tasks = TaskStore(settings.task_result_ttl_seconds)

    def owner(ctx: Any) -> str | None:
        """Whose tasks a request sees: its ACL (or OAuth) client's; one owner when there is no ACL."""
        client = request_client(ctx)
        return None if client is None else client.name

    @asynccontextmanager
    async def lifespan(_: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        try:
            yield {}
        finally:  # stop running tasks at a batch boundary before the database is closed
            await anyio.to_thread.run_sync(tasks.close)

    async def on_list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def on_call_tool(
        ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        if params.name not in specs_by_name:
            raise unknown_tool_error(params.name, specs_by_name)
        client = request_client(ctx)
        if acl and client is None:  # deny by default: the middleware should have answered 401 already
            from cpersona.server.dispatch import failure

            return to_call_result(failure("no authenticated ACL client for this call", "forbidden"))
        if params.name in CONFIRMED_TOOLS and can_ask(ctx):
            from cpersona.server.dispatch import admitted

            # Only a call the dispatcher will run is asked about: a refused one (bad arguments, no
            # grant) is answered as usual, and nobody hears the counts of an agent it may not touch.
            arguments = admitted(params.name, params.arguments, client)
            decision = (
                True
                if arguments is None
                else await ask_user(
                    ctx,
                    params.name,
                    arguments,
                    params.input_responses,
                    lambda agent: anyio.to_thread.run_sync(_agent_counts, memory, agent, limiter=limiter),
                )
            )
            if isinstance(decision, types.InputRequiredResult):
                return decision
            if not decision:
                from cpersona.server.dispatch import failure

                return to_call_result(
                    failure(f"{params.name}: the user did not confirm; nothing was changed", "declined")
                )
        if (
            specs_by_name[params.name].long
            and worth_a_task(params.name, params.arguments)
            and wants_task(ctx)
        ):
            name, arguments = params.name, params.arguments
            record = tasks.start(
                owner(ctx),
                name,
                lambda work: _call(memory, settings, name, arguments, client, work),
                lambda response: wire_result(response, name),
            )
            if record is not None:
                # A CreateTaskResult (resultType "task"): the SDK passes an extension's result through as is.
                return cast(types.CallToolResult, tasks.created(record))
        work = work_for(ctx)
        response = await run_cancellable(
            work, _call, memory, settings, params.name, params.arguments, client, work, limiter=limiter
        )
        return to_call_result(response, params.name)

    def input_schema(name: str) -> dict[str, Any] | None:
        spec = specs_by_name.get(name)
        return None if spec is None else spec.input_schema

    # Resources, prompts and completions (docs/resources.md); their presence declares the capabilities in
    # initialize. Logging is left out on purpose: docs/decisions.md, "MCP resources and prompts".
    surface = SurfaceHandlers(memory, acl=acl, limiter=limiter)
    server: Server[Any] = Server(
        SERVER_NAME,
        version=__version__,
        title=identity.TITLE,
        description=identity.DESCRIPTION,
        website_url=identity.WEBSITE_URL,
        icons=[types.Icon(src=identity.icon_data_uri(), mime_type=identity.ICON_MIME_TYPE, sizes=["any"])],
        instructions=instructions(settings),
        get_tool_input_schema=input_schema,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=surface.list_resources,
        on_list_resource_templates=surface.list_resource_templates,
        on_read_resource=surface.read_resource,
        on_list_prompts=surface.list_prompts,
        on_get_prompt=surface.get_prompt,
        on_completion=surface.complete,
        lifespan=lifespan,
    )
    register_tasks(server, tasks, owner)  # long tools as tasks (docs/tasks.md)
    return server
