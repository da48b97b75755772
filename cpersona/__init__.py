"""CPersona Embedded: persistent memory for AI agents over MCP.

``from cpersona import Memory, Settings`` is the short form of the public Python API.
Both are imported on first use (PEP 562), so ``import cpersona`` alone stays light:
the CLI reads ``__version__`` without loading NumPy, ONNX Runtime or the storage engine, and
``__version__`` itself is read on first use too (importlib.metadata costs tens of milliseconds,
which every host hook call, ``python -m cpersona.hooks``, would pay for nothing).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cpersona.config import Settings
    from cpersona.memory import Memory

#: Public names served lazily: name -> the module that defines it.
_LAZY = {"Memory": "cpersona.memory", "Settings": "cpersona.config"}

__all__ = ["Memory", "Settings", "__version__"]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cpersona-embedded")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0.0.0"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        globals()[name] = value = _version()
        return value
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'cpersona' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | {"__version__"})
