"""MCP resources, prompts and completions: thin handlers over ``Memory`` and ``cpersona.server.prompts``.

The behaviour (URIs, ACL filtering, argument checks, prompt texts) is plain Python in
``cpersona.services.resources`` and ``cpersona.server.prompts``; this module turns their dicts into MCP
types and their refusals into JSON-RPC errors. Bad input of any kind (an unknown URI, a
prompt argument missing, an agent the client may not read) is ``-32602`` with
``data: {"error_code": ...}`` the tools use; only a server fault (the database cannot be
opened, a storage fault) is ``-32603``.

Under an ACL every handler uses the grants of the HTTP request's client, like the tools:
resources need ``read`` on the agent; a prompt needs the level of the tool it leads to.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.to_thread
import mcp.types as types
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS

from cpersona.acl import Client, Level
from cpersona.errors import CPersonaError, Forbidden, InvalidInput, NotFound
from cpersona.server import prompts
from cpersona.server.access import TOOL_ACCESS, authorise
from cpersona.server.client_auth import request_client
from cpersona.server.pending_memory import PendingMemory
from cpersona.services.resources import ROW_TEMPLATES, TEMPLATES, resource_templates

if TYPE_CHECKING:
    from cpersona.memory import Memory

log = logging.getLogger("cpersona.server")

T = TypeVar("T")

#: Refusals caused by the request itself (answered -32602); every other CPersonaError is a server fault.
_BAD_REQUEST = (InvalidInput, NotFound, Forbidden)


#: Resource not found before 2026-07-28 (a server-defined code those revisions recommend); SEP-2164 moved it
#: to -32602 and asks clients to accept both.
RESOURCE_NOT_FOUND_BEFORE_2026 = -32002
#: The first revision that answers a resource not found with -32602.
_SEP_2164_REVISION = "2026-07-28"


def mcp_error(exc: CPersonaError) -> MCPError:
    """The JSON-RPC error for a refusal, carrying the tools' ``error_code`` in ``data``."""
    code = INVALID_PARAMS if isinstance(exc, _BAD_REQUEST) else INTERNAL_ERROR
    return MCPError(code, str(exc), {"error_code": exc.code})


def resource_error(error: MCPError, uri: str, protocol_version: str | None) -> MCPError:
    """A refused ``resources/read`` as the negotiated revision says: ``data.uri`` always; a URI that
    names no resource (``not_found``, ``invalid_input``) is ``-32002`` before 2026-07-28 and
    ``-32602`` from it. A refusal by grant (``forbidden``) stays ``-32602``, and a server fault
    ``-32603``, on every revision."""
    data = {**(error.error.data or {}), "uri": uri}
    code = error.error.code
    not_found = data.get("error_code") in ("not_found", "invalid_input")
    # Revision strings are dates, so they order as text.
    if not_found and protocol_version is not None and protocol_version < _SEP_2164_REVISION:
        code = RESOURCE_NOT_FOUND_BEFORE_2026
    return MCPError(code, error.error.message, data)


class SurfaceHandlers:
    """The request handlers beside tools, bound to one server's memory, ACL mode and call limiter."""

    def __init__(self, source: Memory | PendingMemory, *, acl: bool, limiter: anyio.CapacityLimiter) -> None:
        self.source = source
        self.acl = acl
        self.limiter = limiter

    # -- plumbing ------------------------------------------------------------------------------

    def _client(self, ctx: Any) -> Client | None:
        client = request_client(ctx)
        if self.acl and client is None:  # deny by default: the middleware should have answered 401 already
            raise mcp_error(Forbidden("no authenticated ACL client for this request"))
        return client

    @staticmethod
    def _one_page(params: types.PaginatedRequestParams | None, what: str) -> None:
        # Static lists have no second page: any cursor is one we never handed out.
        if params is not None and params.cursor is not None:
            raise mcp_error(InvalidInput(f"invalid cursor: the {what} list has one page"))

    @staticmethod
    def _allowed(client: Client | None, level: Level = Level.READ) -> frozenset[str] | None:
        return None if client is None else client.agents_at(level)

    def _memory(self) -> Memory:
        try:
            return self.source.get() if isinstance(self.source, PendingMemory) else self.source
        except CPersonaError as exc:
            raise mcp_error(exc) from None
        except Exception as exc:
            raise MCPError(
                INTERNAL_ERROR,
                f"the memory database could not be opened: {exc}",
                {"error_code": "database_unavailable"},
            ) from None

    async def _run(self, call: Callable[[Memory], T]) -> T:
        """Run ``call`` on the Memory in a worker thread (SQLite blocks), refusals mapped to errors."""

        def work() -> T:
            memory = self._memory()
            try:
                return call(memory)
            except CPersonaError as exc:
                raise mcp_error(exc) from None

        return await anyio.to_thread.run_sync(work, limiter=self.limiter)

    # -- resources -----------------------------------------------------------------------------

    async def list_resources(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        """resources/list: the agents list, then each readable agent's profile and recent memories."""
        allowed = self._allowed(self._client(ctx))
        cursor = params.cursor if params is not None else None
        page = await self._run(lambda m: m.list_resources(cursor=cursor, allowed_agents=allowed))
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=r["uri"],
                    name=r["name"],
                    title=r["title"],
                    description=r["description"],
                    mime_type=r["mime_type"],
                )
                for r in page["resources"]
            ],
            next_cursor=page["next_cursor"],
        )

    async def list_resource_templates(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        """resources/templates/list: static, answered without waiting for the database."""
        self._client(ctx)
        self._one_page(params, "template")
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=t["uri_template"],
                    name=t["name"],
                    title=t["title"],
                    description=t["description"],
                    mime_type=t["mime_type"],
                )
                for t in resource_templates()["templates"]
            ]
        )

    async def read_resource(
        self, ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        """resources/read: one resource through the client's read grants."""
        try:
            allowed = self._allowed(self._client(ctx))
            read = await self._run(lambda m: m.read_resource(params.uri, allowed_agents=allowed))
        except MCPError as exc:
            raise resource_error(exc, params.uri, getattr(ctx, "protocol_version", None)) from None
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(uri=read["uri"], mime_type=read["mime_type"], text=read["text"])
            ]
        )

    # -- prompts -------------------------------------------------------------------------------

    async def list_prompts(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        """prompts/list: every prompt with its declared arguments."""
        self._client(ctx)
        self._one_page(params, "prompt")
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name=p["name"],
                    title=p["title"],
                    description=p["description"],
                    arguments=[
                        types.PromptArgument(
                            name=a["name"], description=a["description"], required=a["required"]
                        )
                        for a in p["arguments"]
                    ],
                )
                for p in prompts.list_prompts()["prompts"]
            ]
        )

    async def get_prompt(self, ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        """prompts/get: the filled-in prompt; its agent_id needs the grant of the tool it leads to."""
        client = self._client(ctx)
        try:
            spec = prompts.prompt_spec(params.name)
            values = prompts.validated_arguments(spec, params.arguments)
            authorise(client, spec.leads_to, values)
            rendered = prompts.get_prompt(spec.name, values)
        except CPersonaError as exc:
            raise mcp_error(exc) from None
        return types.GetPromptResult(
            description=rendered["description"],
            messages=[
                types.PromptMessage(role=m["role"], content=types.TextContent(type="text", text=m["text"]))
                for m in rendered["messages"]
            ],
        )

    # -- completion ----------------------------------------------------------------------------

    async def complete(self, ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
        """completion/complete: agent ids (and project ids) the client may use, for prompts and templates."""
        client = self._client(ctx)
        ref, argument = params.ref, params.argument
        context = dict(params.context.arguments or {}) if params.context is not None else {}
        level = Level.READ
        try:
            if isinstance(ref, types.PromptReference):
                spec = prompts.prompt_spec(ref.name)
                if argument.name not in {a.name for a in spec.arguments}:
                    raise InvalidInput(f"prompt {spec.name} has no argument {argument.name[:80]!r}")
                level = TOOL_ACCESS[spec.leads_to].level
            elif ref.uri not in {t.uri_template for t in TEMPLATES} | {t[0] for t in ROW_TEMPLATES}:
                raise InvalidInput(
                    f"unknown resource template {ref.uri[:200]!r}; see resources/templates/list"
                )
            elif argument.name != "agent_id" and not (argument.name == "id" and "{id}" in ref.uri):
                raise InvalidInput(f"resource template {ref.uri} has no variable {argument.name[:80]!r}")
        except CPersonaError as exc:
            raise mcp_error(exc) from None
        allowed = self._allowed(client, level)
        value = argument.value
        if argument.name == "agent_id":
            found = await self._run(lambda m: m.complete_agent_id(value, allowed_agents=allowed))
        elif argument.name == "project_id":
            agent = context.get("agent_id")
            found = await self._run(
                lambda m: m.complete_project_id(value, agent_id=agent, allowed_agents=allowed)
            )
        else:  # free text (a question, a focus) or a row id: nothing to offer
            found = {"ok": True, "values": [], "total": 0, "has_more": False}
        return types.CompleteResult(
            completion=types.Completion(
                values=found["values"], total=found["total"], has_more=found["has_more"]
            )
        )
