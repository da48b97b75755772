"""Tool argument types for service signatures, loaded when first read: ``arg.MemoryRef``, ``arg.Field``.

A service method annotates a parameter ``Annotated[int, arg.Field(ge=1, description=...)]`` or with
a shared type (``arg.ProjectRead``); ``scripts/gen_tool_arguments.py`` reads those into the tool's
input schema. The annotations are strings (``from __future__ import annotations``), so nothing
here runs when the services are imported: the types (and pydantic, ~120 ms) load only when an
annotation is evaluated (``typing.get_type_hints``, the generator).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # at run time the names come from __getattr__ below, on first use
    from cpersona.arguments.types import *  # noqa: F403 - the names of types.__all__


def __getattr__(name: str) -> Any:
    types = importlib.import_module("cpersona.arguments.types")  # not "from ... import": that asks here again
    return getattr(types, name)
