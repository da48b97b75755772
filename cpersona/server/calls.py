"""What a tool declaration calls: ``api(method)`` binds a tool to the ``Memory`` method of that name.

A tool's validated arguments go to the method by name, so the method's signature
holds the one set of defaults (an argument the caller omitted is not passed); the
MCP-only arguments (``full_content``) and the few wire spellings that differ from
the API's (``store``'s nested ``message``) are the only mapping written here.
``shape`` turns the API's full rows into the MCP response (previews, budgets:
cpersona/server/previews.py). The process-wide tools that are no ``Memory`` method
(pause, operating context, update check) are plain handlers at the end.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from cpersona.config import Settings
from cpersona.core.work import Work
from cpersona.result_types import (
    CheckUpdateResult,
    OperatingContextResult,
    PauseResult,
    PersistenceState,
    ResumeResult,
)
from cpersona.runtime import operating_context
from cpersona.server import previews
from cpersona.server.update_check import UpdateChecker

if TYPE_CHECKING:  # the registry is read by tools/list before Memory (numpy, SQLite) is imported
    from cpersona.memory import Memory
    from cpersona.portability.grants import FileScope


@dataclass(frozen=True)
class Call:
    """One tool call as its handler sees it: validated arguments plus what the dispatcher adds."""

    memory: Memory
    settings: Settings
    arguments: dict[str, Any]
    allowed: frozenset[str] | None  # the ACL narrowing of an unscoped call (cpersona.server.access)
    work: Work  # cancel flag and progress (cpersona.core.work); only long tools look at it
    scope: FileScope | None  # the caller's reach through files (export/import; grants.py)
    #: The agents an ACL client may read (None: no ACL, or a wildcard): a "no rows" notice names only these.
    visible_agents: frozenset[str] | None = None


Handler = Callable[[Call], dict[str, Any]]
#: Turns the API result into the MCP response.
Shape = Callable[[dict[str, Any], Call], dict[str, Any]]
#: What the dispatcher supplies to a method that takes it (never an agent's argument).
_SUPPLIED = ("allowed_agents", "readable_agents", "visible_agents", "work", "scope")


class ApiCall:
    """A handler that calls ``Memory.<method>`` with the tool's arguments as keyword arguments.

    ``wire``: arguments the method does not take, ``name -> (annotation, parameters it replaces)``,
    the annotation written as in a signature under ``from __future__ import annotations`` (a string,
    resolved by scripts/gen_tool_arguments.py against cpersona/arguments/types.py, so tools/list imports
    no service): the argument schema lists it where the first replaced parameter stood;
    one that replaces exactly one parameter is passed as that parameter, others are read by the MCP
    layer or turned into the method's keyword arguments by ``expand``. ``convert``: per-argument
    wire-to-API conversions; ``shape``: the API result into the MCP response.
    """

    def __init__(
        self,
        method: str,
        *,
        shape: Shape | None = None,
        wire: Mapping[str, tuple[str, tuple[str, ...]]] | None = None,
        convert: Mapping[str, Callable[[Any], Any]] | None = None,
        expand: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        self.method = method
        self.shape = shape
        self.wire = dict(wire or {})
        self.tool_only = tuple(self.wire)
        self.convert = dict(convert or {})
        self.expand = expand
        #: wire names that are one parameter renamed (traverse's ``from`` is ``start``)
        self.renamed = {name: params[0] for name, (_, params) in self.wire.items() if len(params) == 1}

    @functools.cached_property
    def parameters(self) -> Mapping[str, inspect.Parameter]:
        """The method's parameters (read on first use: the handshake must not import ``Memory``)."""
        from cpersona.memory import Memory

        function = getattr(Memory, self.method, None)
        if function is None:
            raise RuntimeError(f"a tool calls Memory.{self.method}, which does not exist")
        return inspect.signature(function).parameters

    @property
    def narrows_notice(self) -> bool:
        """The method names only the client's readable agents in its notice (takes ``visible_agents``)."""
        return "visible_agents" in self.parameters

    @property
    def long(self) -> bool:
        """A long tool: its method takes the call's ``Work`` (cancel at batch boundaries, progress)."""
        return "work" in self.parameters

    def default(self, argument: str) -> Any:
        """The method's default for ``argument`` (``inspect.Parameter.empty`` when it has none)."""
        parameter = self.parameters.get(argument)
        return inspect.Parameter.empty if parameter is None else parameter.default

    def __call__(self, call: Call) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        for name, value in call.arguments.items():
            if name in self.renamed or name not in self.tool_only:
                kwargs[self.renamed.get(name, name)] = self.convert.get(name, _same)(value)
        if self.expand is not None:
            kwargs.update(self.expand(call.arguments))
        # readable_agents: what a follows_links rule hands over (the agents the client may read).
        supplied = {
            "allowed_agents": call.allowed,
            "readable_agents": call.allowed,
            "visible_agents": call.visible_agents,
            "work": call.work,
            "scope": call.scope,
        }
        kwargs.update({name: supplied[name] for name in _SUPPLIED if name in self.parameters})
        result = getattr(call.memory, self.method)(**kwargs)
        return result if self.shape is None else self.shape(result, call)


#: ``api("<method>", ...)``: the handler of a tool that is that ``Memory`` method (a declaration's ``call=``).
api = ApiCall


def _same(value: Any) -> Any:
    return value


def strings(value: Any) -> list[str]:
    """One string or a list of them, as the list the API takes (the wire accepts either)."""
    return [value] if isinstance(value, str) else list(value)


# -- shaping: full API rows into MCP responses --------------------------------------------------


def shape_recall(result: dict[str, Any], call: Call) -> dict[str, Any]:
    """recall's rows as previews, or whole texts within a budget (``full_content``)."""
    return previews.shape_recall(
        result,
        preview_chars=call.settings.recall_preview_chars,
        full_content=call.arguments.get("full_content", False),
    )


def shape_context(result: dict[str, Any], call: Call) -> dict[str, Any]:
    """recall_with_context's merged entries, memory rows as previews."""
    return previews.shape_context_results(result, preview_chars=call.settings.recall_preview_chars)


def shape_contents(result: dict[str, Any], call: Call) -> dict[str, Any]:
    """get_contents' whole texts within the response budget."""
    return previews.shape_get_contents(result)


def shape_history(result: dict[str, Any], call: Call) -> dict[str, Any]:
    """get_history's chain like a listing: whole texts within the budget, previews after."""
    return previews.shape_listing(result, preview_chars=call.settings.recall_preview_chars, key="history")


def shape_rows(result: dict[str, Any], call: Call) -> dict[str, Any]:
    """A walk's memory rows as previews, like recall's (entities pass unchanged)."""
    rows = [previews.preview_row(dict(row), call.settings.recall_preview_chars) for row in result["results"]]
    return {**result, "results": rows}


def shape_listing(result: dict[str, Any], call: Call) -> dict[str, Any]:
    """A listing's rows as previews within the listing budget."""
    return previews.shape_listing(result, preview_chars=call.settings.recall_preview_chars)


# -- wire forms that differ from the API call's --------------------------------------------


def store_message(arguments: dict[str, Any]) -> dict[str, Any]:
    """store's nested ``message`` ({id, content, source, timestamp, metadata}) as the API's arguments."""
    message = arguments["message"]
    msg_id = message.get("id")
    return {
        "content": message["content"],
        "msg_id": None if msg_id is None else str(msg_id),
        "source": message.get("source"),
        "timestamp": message.get("timestamp"),
        "metadata": message.get("metadata"),
    }


# -- process-wide tools (no Memory method: they act on the server process) ----------------------


class LocalCall:
    """A handler that is a typed function of the server process: ``function(call, **arguments)``.

    Its keyword parameters after ``call`` are the tool's arguments (the argument schema is read
    from them, like a ``Memory`` method's) and its return annotation is the result shape.
    """

    def __init__(self, function: Callable[..., Any]) -> None:
        self.function = function

    def __call__(self, call: Call) -> dict[str, Any]:
        result: dict[str, Any] = self.function(call, **call.arguments)
        return result


#: ``local(function)``: the handler of a process-wide tool (a declaration's ``call=``).
local = LocalCall


def pause_persistence(
    call: Call,
    *,
    ttl_seconds: Annotated[
        int, Field(ge=1, le=86400, description="How long the pause lasts, in seconds (1 to 86400).")
    ],
) -> PauseResult:
    """Stop this process writing for ``ttl_seconds``."""
    from cpersona.runtime import persistence

    return persistence.PROCESS.pause(ttl_seconds)  # type: ignore[return-value]


def resume_persistence(call: Call) -> ResumeResult:
    """End a pause now."""
    from cpersona.runtime import persistence

    return persistence.PROCESS.resume()  # type: ignore[return-value]


def persistence_status(call: Call) -> PersistenceState:
    """Whether writes are paused, and until when."""
    from cpersona.runtime import persistence

    return persistence.PROCESS.status()  # type: ignore[return-value]


def get_operating_context(
    call: Call,
    *,
    section: Annotated[str | None, Field(description="One top-level table, e.g. 'rules'.")] = None,
) -> OperatingContextResult:
    """The operating context (one section, or all)."""
    return operating_context.get(call.settings, section)  # type: ignore[return-value]


def check_update(
    call: Call, *, apply: Annotated[bool, Field(description="Install the newer release with pip.")] = False
) -> CheckUpdateResult:
    """Report a newer release, or install it with ``apply``."""
    checker = UpdateChecker(call.settings)
    return checker.apply() if apply else checker.report()  # type: ignore[return-value]
