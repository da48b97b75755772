"""The thin MCP layer: tool schemas, argument validation, response shaping, transports.

Behaviour lives in ``cpersona.memory.Memory``; this package only translates.
Entry points: ``dispatch_tool`` (one call, in-process), ``build_server`` (the
lowlevel MCP server), ``run_stdio`` / ``run_http`` (blocking transports).
"""

from cpersona.server.app import build_server
from cpersona.server.dispatch import dispatch_tool
from cpersona.server.schemas import TOOLS, tool_names
from cpersona.server.transport import http_refusal, run_http, run_stdio

__all__ = ["TOOLS", "build_server", "dispatch_tool", "http_refusal", "run_http", "run_stdio", "tool_names"]
