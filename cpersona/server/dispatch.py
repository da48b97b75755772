"""The tool layer: validate arguments, call ``Memory``, shape the response, never raise.

``dispatch_tool`` is the one function both the MCP handler (in a worker thread)
and the in-process tests call. Whatever happens, it returns a JSON-ready dict
with ``ok``; failures carry a non-empty ``error`` (and ``error_code``).
"""

from __future__ import annotations

import logging
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

from cpersona.acl import Client, Level
from cpersona.config import Settings
from cpersona.core.limits import MAX_ERROR_CHARS
from cpersona.core.text import clean_json, clean_text
from cpersona.core.work import Work
from cpersona.errors import CPersonaError
from cpersona.memory import Memory
from cpersona.portability.grants import FileScope
from cpersona.server.access import authorise
from cpersona.server.calls import ApiCall, Call, Handler
from cpersona.server.tools import TOOLS, TOOLS_BY_NAME, ToolSpec

log = logging.getLogger("cpersona.server")

_VALIDATORS: dict[str, Draft202012Validator] = {
    spec.name: Draft202012Validator(spec.input_schema) for spec in TOOLS
}

_JSON_TYPE_NAMES = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
    type(None): "null",
}

#: Every tool's handler, from its declaration (``call=``; cpersona/server/calls.py).
HANDLERS: dict[str, Handler] = {spec.name: spec.call for spec in TOOLS}
#: The long tools: they honour a cancel at their batch boundaries and report progress (docs/tools.md).
#: Export and import also get the caller's reach through files (grants.py; docs/decisions.md#portability).
WORK_HANDLERS: dict[str, Handler] = {spec.name: spec.call for spec in TOOLS if spec.long}


def failure(message: str, code: str, **extra: Any) -> dict[str, Any]:
    """The uniform failure shape: ``{"ok": false, "error": ..., "error_code": ...}``."""
    text = message.strip() or code
    if len(text) > MAX_ERROR_CHARS:
        text = text[:MAX_ERROR_CHARS] + "…"
    return {"ok": False, "error": text, "error_code": code, **extra}


def _json_type(value: Any) -> str:
    return _JSON_TYPE_NAMES.get(type(value), type(value).__name__)


def _describe(error: ValidationError, tool: str) -> str:
    """A short message naming the argument, without echoing huge values."""
    path = ".".join(str(part) for part in error.absolute_path)
    where = f"argument '{path}'" if path else f"arguments of {tool}"
    kind = error.validator
    if kind == "required":
        missing = [name for name in error.validator_value if name not in error.instance]
        name = missing[0] if missing else "?"
        full = f"{path}.{name}" if path else name
        return f"missing required argument '{full}'"
    if kind == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extras = sorted(str(k) for k in error.instance if k not in allowed)
        names = ", ".join(repr(e[:60]) for e in extras[:5])
        scope = f"in '{path}' " if path else ""
        return f"unknown argument {names} {scope}for tool {tool}; allowed: {', '.join(allowed) or 'none'}"
    if kind == "anyOf" and all("type" in branch for branch in error.validator_value):
        # The schemas spell "one of these types" as anyOf (portable JSON Schema): name the types.
        expected_text = " or ".join(str(branch["type"]) for branch in error.validator_value)
        return f"{where} must be of type {expected_text}, got {_json_type(error.instance)}"
    if kind == "type":
        expected = error.validator_value
        expected_text = " or ".join(expected) if isinstance(expected, list) else str(expected)
        return f"{where} must be of type {expected_text}, got {_json_type(error.instance)}"
    if kind == "pattern":
        if path in {"memory_id", "episode_id"}:
            prefix = "mem" if path == "memory_id" else "ep"
            return (
                f"{where} must be an integer id or a '{prefix}:<id>' ref string, got {error.instance[:60]!r}"
            )
        return f"{where} does not match the expected form {error.validator_value}"
    if kind in {"minimum", "maximum"}:
        bound = "at least" if kind == "minimum" else "at most"
        return f"{where} must be {bound} {error.validator_value}, got {error.instance!r}"[:MAX_ERROR_CHARS]
    if kind in {"maxItems", "minItems"}:
        bound = "at most" if kind == "maxItems" else "at least"
        return f"{where} must have {bound} {error.validator_value} items, got {len(error.instance)}"
    return f"{where}: {error.message}"


def validate_arguments(spec: ToolSpec, arguments: dict[str, Any]) -> str | None:
    """Check ``arguments`` against the tool's own JSON schema; return a message or None."""
    error = best_match(_VALIDATORS[spec.name].iter_errors(arguments))
    return None if error is None else _describe(error, spec.name)


def _drop_nulls(spec: ToolSpec, arguments: dict[str, Any]) -> dict[str, Any]:
    # Agents often send null for an optional argument; treat it as omitted (documented in docs/tools.md).
    required = set(spec.input_schema.get("required", ()))
    return {k: v for k, v in arguments.items() if v is not None or k in required}


# -- response hygiene -----------------------------------------------------------------------


def _finish(name: str, result: Any) -> dict[str, Any]:
    if not isinstance(result, dict):
        return failure(f"internal error: {name} returned {type(result).__name__}, not an object", "internal")
    if result.get("ok") is False or "error" in result:
        out = dict(result)
        out["ok"] = False
        if not (isinstance(out.get("error"), str) and out["error"].strip()):
            out["error"] = f"{name} failed"
        out.setdefault("error_code", "error")
        return out
    if "ok" not in result:
        result = {"ok": True, **result}
    return result


def dispatch_tool(
    memory: Memory,
    settings: Settings,
    name: str,
    arguments: Any,
    client: Client | None = None,
    work: Work | None = None,
) -> dict[str, Any]:
    """Run one tool call end to end; always returns a JSON-ready dict, never raises.

    Order: look up the tool, validate ``arguments`` against its schema, check
    the HTTP client's ACL grants (``client``; None = no ACL: stdio or a shared
    token), call ``Memory``, shape the result (previews, budgets). Failures are
    ``{"ok": false, "error", "error_code"}`` plus whatever fields the refusal
    itself carries (``CPersonaError.details``: ``store``'s ``Rejected`` adds
    ``result: "rejected"`` and ``reason``). ``work`` reaches the long tools (``ToolSpec.long``):
    a cancelled one answers ``error_code: "cancelled"`` with how far it got.
    """
    try:
        response = _dispatch(memory, settings, name, arguments, client, work)
    except CPersonaError as exc:
        response = failure(str(exc) or exc.code, exc.code, **exc.details())
    except Exception as exc:  # the server must keep answering whatever Memory raises
        log.exception("tool %s failed with an unexpected exception", clean_text(str(name))[:80])
        response = failure(f"internal error: {type(exc).__name__}: {exc}", "internal")
    return clean_json(response, coerce=True)


def admitted(name: str, arguments: Any, client: Client | None) -> dict[str, Any] | None:
    """The arguments as the tool will get them, when the call passes the same schema and access
    checks ``dispatch_tool`` makes first; None when it would be refused (it then says why)."""
    spec = TOOLS_BY_NAME.get(name)
    if spec is None or not isinstance(arguments if arguments is not None else {}, dict):
        return None
    cleaned = _drop_nulls(spec, arguments or {})
    if validate_arguments(spec, cleaned) is not None:
        return None
    try:
        authorise(client, name, cleaned)
    except CPersonaError:
        return None
    return cleaned


def _dispatch(
    memory: Memory, settings: Settings, name: str, arguments: Any, client: Client | None, work: Work | None
) -> dict[str, Any]:
    spec = TOOLS_BY_NAME.get(name) if isinstance(name, str) else None
    if spec is None:
        shown = clean_text(str(name))[:80]
        return failure(f"unknown tool {shown!r}; available tools: {', '.join(TOOLS_BY_NAME)}", "unknown_tool")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return failure(
            f"arguments of {name} must be a JSON object, got {_json_type(arguments)}", "invalid_input"
        )
    arguments = _drop_nulls(spec, arguments)
    problem = validate_arguments(spec, arguments)
    if problem is not None:
        return failure(problem, "invalid_input")
    allowed = authorise(client, name, arguments)  # raises Forbidden
    # Grants hold inside files (docs/decisions.md#portability).
    scope = FileScope.of(client) if client is not None and spec.long else None
    visible = client.agents_at(Level.READ) if client is not None else None
    result = spec.call(Call(memory, settings, arguments, allowed, work or Work(), scope, visible))
    narrowed = isinstance(spec.call, ApiCall) and spec.call.narrows_notice  # built for this client already
    if client is not None and isinstance(result, dict) and "notice" in result and not narrowed:
        # The API names every known agent; an ACL client hears only of the agents it may read.
        result["notice"] = memory.agent_notice(arguments.get("agent_id"), visible)
        if result["notice"] is None:
            result.pop("notice")
    return _finish(name, result)
