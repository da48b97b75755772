"""The marker that makes a service method part of the Python API (a method of ``cpersona.Memory``).

``@public`` on a service method is the whole declaration: ``scripts/gen_memory_api.py``
writes ``Memory``'s binding lines from the marked methods (a test fails when
cpersona/memory.py is not in step), and the method's result shapes are read from its
return annotation (a TypedDict, or a union of them; docs/api-shapes.md).

``@public(tool=Tool(...))`` also makes it an MCP tool of the same name: its arguments are the
method's parameters, its results the return annotation, and ``Tool`` says the rest (what a
signature cannot say). The server reads these declarations from
cpersona/server/tools/derived.json (``scripts/gen_tool_arguments.py``), so listing tools imports
no service. Access and hints are named here, not imported: this layer sits below the server
(cpersona/server/tools/declared.py maps the names).
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, get_type_hints, overload

F = TypeVar("F", bound=Callable[..., Any])

_MARK = "__cpersona_public__"
_TOOL = "__cpersona_tool__"

#: The access classes (docs/tools.md; cpersona/server/rules.py): read / write / admin on the named
#: agent; edit_row / list_rows act by row id, an omitted agent_id narrowing to the granted agents;
#: process_state / process_control act on the server process.
Access = Literal["read", "write", "admin", "edit_row", "list_rows", "process_state", "process_control"]
#: The hint kinds (docs/tools.md#annotations): look only; add a row each call; set a state; overwrite or delete.
HintKind = Literal["reads", "adds", "keeps", "overwrites"]
#: How the MCP layer trims the answer (cpersona/server/calls.py): listing budgets, row previews.
Preview = Literal["listing", "rows", "contents", "history"]


@dataclass(frozen=True)
class Tool:
    """What makes a ``@public`` method an MCP tool, beyond its signature and return annotation."""

    title: str
    summary: str  # the README's one line (scripts/gen_readme_tools.py); Markdown
    description: (
        str  # for the calling agent: what it needs to choose and call the tool (docs/tools.md has the rest)
    )
    access: Access
    hints: HintKind
    admin_when: str | None = None  # a boolean argument that, when true, makes the call admin
    preview: Preview | None = None
    group: str = "operations"  # listed after that group's tools (cpersona/server/tools/__init__.py)


@overload
def public(function: F, *, name: str | None = None, tool: Tool | None = None) -> F: ...
@overload
def public(
    function: None = None, *, name: str | None = None, tool: Tool | None = None
) -> Callable[[F], F]: ...


def public(
    function: F | None = None, *, name: str | None = None, tool: Tool | None = None
) -> F | Callable[[F], F]:
    """Mark ``function`` as a ``Memory`` method (``name``: its name there, when it differs), and
    with ``tool`` as the MCP tool of that name."""

    def mark(target: F) -> F:
        setattr(target, _MARK, name or target.__name__)
        if tool is not None:
            setattr(target, _TOOL, tool)
        return target

    return mark if function is None else mark(function)


def public_tool(function: Any) -> Tool | None:
    """The tool declaration of a marked service method, None when it is no tool."""
    value = getattr(function, _TOOL, None)
    return value if isinstance(value, Tool) else None


def public_name(function: Any) -> str | None:
    """The ``Memory`` name of a marked service method, None when it is not marked."""
    value = getattr(function, _MARK, None)
    return value if isinstance(value, str) else None


def public_methods(service: type) -> list[tuple[str, str]]:
    """``(Memory name, method name)`` of every marked method of ``service``, in definition order."""
    found = []
    for attribute, value in vars(service).items():
        name = public_name(value)
        if name is not None:
            found.append((name, attribute))
    return found


def annotated_results(function: Callable[..., Any]) -> tuple[type, ...]:
    """The TypedDicts ``function``'s return annotation names (empty when it names none).

    Only the return annotation is read: the parameters' (cpersona/arguments) would load pydantic.
    """
    only_return = _Annotations({"return": getattr(function, "__annotations__", {}).get("return")})
    try:
        returned = get_type_hints(only_return, getattr(function, "__globals__", None)).get("return")
    except (NameError, TypeError):  # an annotation that only type checkers can resolve
        return ()
    members = typing.get_args(returned) if typing.get_origin(returned) in (typing.Union, _UnionType) else ()
    candidates = members or (returned,)
    if all(isinstance(tp, type) and typing.is_typeddict(tp) for tp in candidates):
        return tuple(candidates)
    return ()


_UnionType = type(int | str)


class _Annotations:
    """An object with just these ``__annotations__`` (for ``get_type_hints`` on one of them)."""

    def __init__(self, annotations: dict[str, Any]) -> None:
        self.__annotations__ = {k: v for k, v in annotations.items() if v is not None}
