"""The thin MCP layer: tool schemas, argument validation, response shaping, transports.

Behaviour lives in ``cpersona.memory.Memory``; this package only translates.
Entry points: ``dispatch_tool`` (one call, in-process), ``build_server`` (the
lowlevel MCP server), ``run_stdio`` / ``run_http`` (blocking transports).

The names resolve on first use: importing one submodule (the tool schemas,
say) must not pull in the others, so ``serve`` answers ``initialize`` before
numpy, jsonschema and the model runtime are imported.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "build_server": "cpersona.server.app",
    "dispatch_tool": "cpersona.server.dispatch",
    "TOOLS": "cpersona.server.tools",
    "tool_names": "cpersona.server.tools",
    "http_refusal": "cpersona.server.transport",
    "run_http": "cpersona.server.transport",
    "run_stdio": "cpersona.server.transport",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'cpersona.server' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
