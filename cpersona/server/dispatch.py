"""The tool layer: validate arguments, call ``Memory``, shape the response, never raise.

``dispatch_tool`` is the one function both the MCP handler (in a worker thread)
and the in-process tests call. Whatever happens, it returns a JSON-ready dict
with ``ok``; failures carry a non-empty ``error`` (and ``error_code``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

from cpersona import operating_context
from cpersona.acl import Client, Level
from cpersona.config import Settings
from cpersona.errors import CPersonaError
from cpersona.health import persistence
from cpersona.limits import (
    LIST_EPISODES_LIMIT_DEFAULT,
    LIST_MEMORIES_LIMIT_DEFAULT,
    MAX_ERROR_CHARS,
    RECALL_LIMIT_DEFAULT,
)
from cpersona.memory import Memory
from cpersona.portability.grants import FileScope
from cpersona.server import shaping
from cpersona.server.access import TOOL_ACCESS, authorise
from cpersona.server.schemas import TOOLS, TOOLS_BY_NAME, ToolSpec
from cpersona.text import clean_json, clean_text
from cpersona.update_check import UpdateChecker
from cpersona.work import Work

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

#: The agents an unscoped call is narrowed to by the caller's ACL grants (None: no narrowing).
Allowed = frozenset[str] | None
#: A handler gets the validated arguments and the ACL narrowing (cpersona.server.access.authorise).
Handler = Callable[[Memory, Settings, dict[str, Any], Allowed], dict[str, Any]]
#: A long tool's handler also gets the call's ``Work``: cancel flag and progress (cpersona.work).
WorkHandler = Callable[[Memory, Settings, dict[str, Any], Allowed, Work, FileScope | None], dict[str, Any]]


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


def _row_id(value: Any) -> int:
    # The schema already restricted strings to "mem:<digits>" / "ep:<digits>".
    if isinstance(value, str):
        return int(value.split(":", 1)[1])
    return int(value)


def _strings(value: Any) -> list[str] | None:
    if value is None:
        return None
    return [value] if isinstance(value, str) else list(value)


# -- handlers: map validated arguments onto Memory calls -------------------------------------


def _store(memory: Memory, settings: Settings, a: dict[str, Any], allowed: Allowed) -> dict[str, Any]:
    message = a["message"]
    msg_id = message.get("id")
    return memory.store(
        a["agent_id"],
        message["content"],
        msg_id=None if msg_id is None else str(msg_id),
        source=message.get("source"),
        timestamp=message.get("timestamp"),
        metadata=message.get("metadata"),
        channel=a.get("channel"),
        project_id=a.get("project_id"),
        supersedes=a.get("supersedes"),
    )


def _recall(memory: Memory, settings: Settings, a: dict[str, Any], allowed: Allowed) -> dict[str, Any]:
    result = memory.recall(
        a["agent_id"],
        a.get("query", ""),
        limit=a.get("limit", RECALL_LIMIT_DEFAULT),
        deep=a.get("deep", False),
        channel=a.get("channel"),
        project_id=a.get("project_id"),
        exclude_contents=_strings(a.get("exclude_contents")),
        source_id=a.get("source_id"),
        trace=a.get("trace", False),
        time_cue=a.get("time_cue"),
        include_superseded=a.get("include_superseded", False),
    )
    return shaping.shape_recall(
        result, preview_chars=settings.recall_preview_chars, full_content=a.get("full_content", False)
    )


def _recall_with_context(
    memory: Memory, settings: Settings, a: dict[str, Any], allowed: Allowed
) -> dict[str, Any]:
    result = memory.recall_with_context(
        a["agent_id"],
        a["query"],
        a["external_context"],
        limit=a.get("limit", RECALL_LIMIT_DEFAULT),
        deep=a.get("deep", False),
        channel=a.get("channel"),
        project_id=a.get("project_id"),
        time_cue=a.get("time_cue"),
        include_superseded=a.get("include_superseded", False),
    )
    return shaping.shape_context_results(result, preview_chars=settings.recall_preview_chars)


def _get_contents(memory: Memory, settings: Settings, a: dict[str, Any], allowed: Allowed) -> dict[str, Any]:
    return shaping.shape_get_contents(memory.get_contents(a["agent_id"], a["refs"]))


def _archive_episode(
    memory: Memory, settings: Settings, a: dict[str, Any], allowed: Allowed
) -> dict[str, Any]:
    return memory.archive_episode(
        a["agent_id"],
        a["summary"],
        keywords=a.get("keywords"),
        resolved=a.get("resolved", False),
        history=a.get("history"),
        project_id=a.get("project_id"),
        channel=a.get("channel"),
    )


def _update_memory(memory: Memory, settings: Settings, a: dict[str, Any], allowed: Allowed) -> dict[str, Any]:
    return memory.update_memory(
        _row_id(a["memory_id"]),
        a.get("content"),
        agent_id=a.get("agent_id"),
        allowed_agents=allowed,
        supersedes=a.get("supersedes"),
    )


def _get_history(memory: Memory, settings: Settings, a: dict[str, Any], allowed: Allowed) -> dict[str, Any]:
    result = memory.get_history(_row_id(a["memory_id"]), agent_id=a.get("agent_id"), allowed_agents=allowed)
    return shaping.shape_listing(result, preview_chars=settings.recall_preview_chars, key="history")


def _get_profile(memory: Memory, settings: Settings, a: dict[str, Any], allowed: Allowed) -> dict[str, Any]:
    return memory.get_profile(a["agent_id"], project_id=a.get("project_id", ""), user_id=a.get("user_id", ""))


def _update_profile(
    memory: Memory, settings: Settings, a: dict[str, Any], allowed: Allowed
) -> dict[str, Any]:
    return memory.update_profile(
        a["agent_id"], a["profile"], project_id=a.get("project_id", ""), user_id=a.get("user_id", "")
    )


def _list_memories(memory: Memory, settings: Settings, a: dict[str, Any], allowed: Allowed) -> dict[str, Any]:
    result = memory.list_memories(
        a.get("agent_id"),
        limit=a.get("limit", LIST_MEMORIES_LIMIT_DEFAULT),
        project_id=a.get("project_id"),
        allowed_agents=allowed,
    )
    return shaping.shape_listing(result, preview_chars=settings.recall_preview_chars)


def _list_episodes(memory: Memory, settings: Settings, a: dict[str, Any], allowed: Allowed) -> dict[str, Any]:
    result = memory.list_episodes(
        a.get("agent_id"),
        limit=a.get("limit", LIST_EPISODES_LIMIT_DEFAULT),
        project_id=a.get("project_id"),
        allowed_agents=allowed,
    )
    return shaping.shape_listing(result, preview_chars=settings.recall_preview_chars)


def _row_call(method: str, id_arg: str) -> Handler:
    def handler(memory: Memory, settings: Settings, a: dict[str, Any], allowed: Allowed) -> dict[str, Any]:
        return getattr(memory, method)(_row_id(a[id_arg]), agent_id=a.get("agent_id"), allowed_agents=allowed)

    return handler


def _check_update(memory: Memory, settings: Settings, a: dict[str, Any], allowed: Allowed) -> dict[str, Any]:
    checker = UpdateChecker(settings)
    return checker.apply() if a.get("apply", False) else checker.report()


HANDLERS: dict[str, Handler] = {
    "store": _store,
    "recall": _recall,
    "recall_with_context": _recall_with_context,
    "get_contents": _get_contents,
    "get_history": _get_history,
    "archive_episode": _archive_episode,
    "update_memory": _update_memory,
    "get_profile": _get_profile,
    "update_profile": _update_profile,
    "list_memories": _list_memories,
    "list_episodes": _list_episodes,
    "get_queue_status": lambda memory, settings, a, allowed: memory.get_queue_status(),
    "lock_memory": _row_call("lock_memory", "memory_id"),
    "unlock_memory": _row_call("unlock_memory", "memory_id"),
    "delete_memory": _row_call("delete_memory", "memory_id"),
    "delete_episode": _row_call("delete_episode", "episode_id"),
    "delete_agent_data": lambda memory, settings, a, allowed: memory.delete_agent_data(a["agent_id"]),
    "pause_persistence": lambda memory, settings, a, allowed: persistence.PROCESS.pause(a["ttl_seconds"]),
    "resume_persistence": lambda memory, settings, a, allowed: persistence.PROCESS.resume(),
    "persistence_status": lambda memory, settings, a, allowed: persistence.PROCESS.status(),
    "get_operating_context": lambda memory, settings, a, allowed: operating_context.get(
        settings, a.get("section")
    ),
    "check_update": _check_update,
    "deep_check": lambda memory, settings, a, allowed: memory.deep_check(
        a["agent_id"], fix=a.get("fix", False), checks=a.get("checks")
    ),
    "set_recall_precision": lambda memory, settings, a, allowed: memory.set_recall_precision(
        a["agent_id"], a.get("precision"), a.get("beta")
    ),
    "get_recall_precision": lambda memory, settings, a, allowed: memory.get_recall_precision(a["agent_id"]),
    "migrate_channel_axis": lambda memory, settings, a, allowed: memory.migrate_channel_axis(
        a.get("agent_id"),
        a.get("dry_run", True),
        a.get("globalize_unrecoverable", False),
        a.get("bridge_channels"),
    ),
}

#: The long tools: they honour a cancel at their batch boundaries and report progress (docs/tools.md).
#: Export and import also get the caller's reach through files (grants.py; docs/decisions.md#portability).
WORK_HANDLERS: dict[str, WorkHandler] = {
    "check_health": lambda memory, settings, a, allowed, work, scope: memory.check_health(
        a.get("agent_id"), fix=a.get("fix", False), checks=a.get("checks"), work=work
    ),
    "calibrate_threshold": lambda memory, settings, a, allowed, work, scope: memory.calibrate_threshold(
        a["agent_id"],
        a.get("sample_size"),
        a.get("method", "separation"),
        a.get("z_factor"),
        a.get("percentile"),
        work=work,
    ),
    "export_memories": lambda memory, settings, a, allowed, work, scope: memory.export_memories(
        a["agent_id"],
        a["output_path"],
        a.get("include_embeddings", False),
        overwrite=a.get("overwrite", False),
        work=work,
        scope=scope,
    ),
    "import_memories": lambda memory, settings, a, allowed, work, scope: memory.import_memories(
        a["input_path"], a.get("target_agent_id"), a.get("dry_run", False), work=work, scope=scope
    ),
    "merge_memories": lambda memory, settings, a, allowed, work, scope: memory.merge_memories(
        a["source_agent_id"],
        a["target_agent_id"],
        a.get("strategy", "skip"),
        a.get("mode", "copy"),
        a.get("dry_run", False),
        work=work,
    ),
}

_ALL_HANDLERS = set(HANDLERS) | set(WORK_HANDLERS)
if set(TOOLS_BY_NAME) != _ALL_HANDLERS or set(HANDLERS) & set(WORK_HANDLERS):
    # a registry entry without a handler would fail only at call time
    raise RuntimeError(f"tool registry and handlers disagree: {sorted(_ALL_HANDLERS ^ set(TOOLS_BY_NAME))}")
if set(TOOL_ACCESS) != set(TOOLS_BY_NAME):  # every tool needs an access class (read / write / admin)
    raise RuntimeError(
        f"tool registry and access classes disagree: {sorted(set(TOOL_ACCESS) ^ set(TOOLS_BY_NAME))}"
    )


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
    ``result: "rejected"`` and ``reason``). ``work`` reaches the long tools (``WORK_HANDLERS``):
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
    if name in WORK_HANDLERS:
        # Grants hold inside files (docs/decisions.md#portability).
        scope = FileScope.of(client) if client is not None else None
        result = WORK_HANDLERS[name](memory, settings, arguments, allowed, work or Work(), scope)
    else:
        result = HANDLERS[name](memory, settings, arguments, allowed)
    if client is not None and isinstance(result, dict) and "notice" in result:
        # The API names every known agent; an ACL client hears only of the agents it may read.
        result["notice"] = memory.agent_notice(arguments.get("agent_id"), client.agents_at(Level.READ))
        if result["notice"] is None:
            result.pop("notice")
    return _finish(name, result)
