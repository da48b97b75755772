"""CPersona Embedded: persistent memory for AI agents over MCP."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("cpersona-embedded")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"

__all__ = ["__version__"]
