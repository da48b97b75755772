"""The operator's context file (docs/tools.md#get_operating_context): a TOML file every client is served.

The operator writes ``CPERSONA_OPERATING_CONTEXT_PATH`` (default
``~/.cpersona/operating-context.toml``): house rules, who the agents work for,
conventions. It is read-only over MCP. The server reads it once at start-up
for the MCP ``initialize`` instructions; ``get_operating_context`` re-reads it
on every call, so edits show there without a restart. A missing file is
normal; a malformed one is reported (with the TOML error and line), never
fatal.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cpersona.config import Settings
from cpersona.errors import InvalidInput

log = logging.getLogger("cpersona.operating_context")

#: Largest file read; an operator note bigger than this is almost certainly the wrong file.
MAX_FILE_BYTES = 256 * 1024
#: Most characters of the file carried in the ``initialize`` instructions; the tool serves the rest.
MAX_INSTRUCTION_CHARS = 8000

OFF = "off"
MISSING = "missing"
LOADED = "loaded"
BROKEN = "error"

_LINE = re.compile(r"at line (\d+), column (\d+)")


@dataclass(frozen=True)
class ContextFile:
    """One read of the file: ``status`` off | missing | loaded | error, with what was found."""

    status: str
    path: Path
    data: dict[str, Any] | None = None
    text: str | None = None
    error: str | None = None
    line: int | None = None
    column: int | None = None


def _jsonable(value: Any) -> Any:
    # TOML has dates and times; JSON does not, so they travel as ISO-8601 text.
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return value


def load(settings: Settings) -> ContextFile:
    """Read and parse the file now; never raises."""
    path = settings.operating_context_path
    if not settings.operating_context:
        return ContextFile(OFF, path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return ContextFile(MISSING, path)
    except OSError as exc:
        return ContextFile(BROKEN, path, error=f"cannot read {path}: {exc.strerror or exc}")
    if not path.is_file():
        return ContextFile(BROKEN, path, error=f"{path} is not a regular file")
    if size > MAX_FILE_BYTES:
        return ContextFile(BROKEN, path, error=f"{path} is {size} bytes; the limit is {MAX_FILE_BYTES}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        return ContextFile(BROKEN, path, error=f"{path} is not UTF-8 text: {exc.reason} at byte {exc.start}")
    except OSError as exc:
        return ContextFile(BROKEN, path, error=f"cannot read {path}: {exc.strerror or exc}")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = _LINE.search(str(exc))
        line, column = (int(match[1]), int(match[2])) if match else (None, None)
        if line is None and "end of document" in str(exc):
            line = text.count("\n") + 1
        error = f"invalid TOML in {path}: {exc}"
        return ContextFile(BROKEN, path, text=text, error=error, line=line, column=column)
    return ContextFile(LOADED, path, data=_jsonable(data), text=text)


def get(settings: Settings, section: str | None = None) -> dict[str, Any]:
    """The tool answer: the whole file, or one top-level section of it.

    Off → ``{ok: true, enabled: false, context: null}``. Missing → ``ok: true``,
    ``context: null`` and a ``hint`` naming the path. Malformed → ``ok: false``
    with the TOML error, ``line`` and ``column``. Unknown section → ``ok: false``
    naming the sections that exist.
    """
    if section is not None and not isinstance(section, str):
        raise InvalidInput("section must be a string")
    found = load(settings)
    base: dict[str, Any] = {"enabled": found.status != OFF, "path": str(found.path)}
    if found.status == OFF:
        return {"ok": True, **base, "context": None, "hint": "disabled by CPERSONA_OPERATING_CONTEXT=off"}
    if found.status == MISSING:
        return {
            "ok": True,
            **base,
            "context": None,
            "sections": [],
            "hint": f"no operating context: the operator can write a TOML file at {found.path} "
            "(or point CPERSONA_OPERATING_CONTEXT_PATH elsewhere)",
        }
    if found.status == BROKEN:
        return {
            "ok": False,
            "error": found.error,
            "error_code": "operating_context_invalid",
            **base,
            "line": found.line,
            "column": found.column,
        }
    data = found.data or {}
    sections = list(data)
    if section is None:
        return {"ok": True, **base, "context": data, "sections": sections}
    if section not in data:
        names = ", ".join(sections) or "none (the file is empty)"
        return {
            "ok": False,
            "error": f"unknown section {section[:80]!r}; the file's sections are: {names}",
            "error_code": "unknown_section",
            **base,
            "sections": sections,
        }
    return {"ok": True, **base, "section": section, "context": data[section], "sections": sections}


def instructions_block(settings: Settings) -> str | None:
    """Text appended to the ``initialize`` instructions, or None (off, missing, malformed, empty).

    A malformed or unreadable file logs one warning and is left out: start-up never fails on it.
    """
    found = load(settings)
    if found.status == BROKEN:
        log.warning("operating context left out of the instructions: %s", _describe(found))
        return None
    if found.status != LOADED or not (found.text or "").strip():
        return None
    text = (found.text or "").strip()
    if len(text) > MAX_INSTRUCTION_CHARS:
        text = text[:MAX_INSTRUCTION_CHARS] + "\n# … cut here; get_operating_context has the whole file"
    return (
        "Operating context from the operator of this server (TOML; also served by get_operating_context, "
        "which shows edits made since start-up):\n" + text
    )


def problem(settings: Settings) -> str | None:
    """A one-line problem for check_health (None when off, missing or fine)."""
    found = load(settings)
    return _describe(found) if found.status == BROKEN else None


def _describe(found: ContextFile) -> str:
    error = found.error or "unreadable"
    if found.line is not None and f"line {found.line}" not in error:
        return f"{error} (line {found.line})"
    return error
