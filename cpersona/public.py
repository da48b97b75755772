"""The marker that makes a service method part of the Python API (a method of ``cpersona.Memory``).

``@public`` on a service method is the whole declaration: ``scripts/gen_memory_api.py``
writes ``Memory``'s binding lines from the marked methods (a test fails when
cpersona/memory.py is not in step), and the method's result shapes are read from its
return annotation (a TypedDict, or a union of them; docs/api-shapes.md).
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any, TypeVar, get_type_hints, overload

F = TypeVar("F", bound=Callable[..., Any])

_MARK = "__cpersona_public__"


@overload
def public(function: F, *, name: str | None = None) -> F: ...
@overload
def public(function: None = None, *, name: str | None = None) -> Callable[[F], F]: ...


def public(function: F | None = None, *, name: str | None = None) -> F | Callable[[F], F]:
    """Mark ``function`` as a ``Memory`` method (``name``: its name there, when it differs)."""

    def mark(target: F) -> F:
        setattr(target, _MARK, name or target.__name__)
        return target

    return mark if function is None else mark(function)


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


def annotated_results(function: Callable[..., Any], names: dict[str, Any] | None = None) -> tuple[type, ...]:
    """The TypedDicts ``function``'s return annotation names (empty when it names none).

    Only the return annotation is read: parameter annotations may name types imported for type
    checkers only (cpersona/arguments.py); ``names`` resolves further names.
    """
    only_return = _Annotations({"return": getattr(function, "__annotations__", {}).get("return")})
    try:
        returned = get_type_hints(only_return, getattr(function, "__globals__", None), names).get("return")
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
