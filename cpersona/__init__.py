"""CPersona Embedded: persistent memory for AI agents over MCP.

``from cpersona import Memory`` gives the Python API. It is loaded lazily (PEP 562), so
``import cpersona`` stays cheap for the CLI and the MCP server.
"""

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cpersona.memory import Memory

try:
    __version__ = version("cpersona-embedded")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"

__all__ = ["Memory", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "Memory":
        from cpersona.memory import Memory

        return Memory
    raise AttributeError(f"module 'cpersona' has no attribute {name!r}")
