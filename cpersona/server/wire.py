"""Screening one raw JSON-RPC message before the MCP SDK sees it (every request gets a reply: docs/decisions.md#trust-boundary-issue-9).

The SDK's parser silently drops what it cannot read (a lone surrogate escape, nesting past its
recursion limit, text that is not JSON): over stdio the client then waits forever. Both transports
run each message through ``screen`` first, which either hands back a validated message (lone
surrogates replaced by U+FFFD, as docs/input-rules.md says for any text) or the JSON-RPC error to
answer with - carrying the request's id whenever it can be recovered, ``null`` otherwise.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from pydantic import ValidationError

from cpersona.core.limits import MAX_MESSAGE_DEPTH
from cpersona.core.text import LONE_SURROGATE, clean_json, clean_text, json_depth

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602

RequestId = int | str | None

# Tokens of a JSON text, enough to find the top-level "id" of a message the decoder refused.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+')


@dataclass(frozen=True)
class Screened:
    """What to do with one message: forward ``message`` (its JSON is ``text``) or answer ``reply``.

    ``notification`` marks a refused message that had a method but no id: JSON-RPC forbids
    answering notifications, so stream transports only log it.
    """

    message: types.JSONRPCMessage | None = None
    text: str = ""
    reply: types.JSONRPCError | None = None
    notification: bool = False


def error_reply(request_id: RequestId, code: int, message: str) -> types.JSONRPCError:
    """A JSON-RPC error object for ``request_id`` (None when it could not be recovered)."""
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))


def error_text(reply: types.JSONRPCError | None) -> str:
    """A refusal in one log line: id, code and the start of the message."""
    return f"id={reply.id!r} {reply.error.code} {reply.error.message[:120]}" if reply is not None else ""


def screen(text: str) -> Screened:
    """Parse, bound and validate one JSON-RPC message; never raises."""
    try:
        obj = json.loads(text)
    except RecursionError:
        return _refused(recover_id(text), INVALID_REQUEST, _too_deep(), notification=False)
    except ValueError as exc:
        return _refused(recover_id(text), PARSE_ERROR, f"Parse error: {str(exc)[:200]}", notification=False)
    request_id = _top_level_id(obj)
    notification = isinstance(obj, dict) and "id" not in obj and isinstance(obj.get("method"), str)
    if json_depth(obj, MAX_MESSAGE_DEPTH) > MAX_MESSAGE_DEPTH:
        return _refused(request_id, INVALID_REQUEST, _too_deep(), notification)
    bad_id = unusable_request_id(obj)
    if bad_id is not None:
        return _refused(None, INVALID_REQUEST, bad_id, notification=False)
    problem = tools_call_problem(obj)
    if problem is not None:
        return _refused(request_id, INVALID_PARAMS, f"Invalid params: {problem}", notification)
    if _has_lone_surrogate(obj):
        obj = clean_json(obj)  # depth is already bounded by MAX_MESSAGE_DEPTH
        text = json.dumps(obj, ensure_ascii=False)
    try:
        message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except (ValidationError, ValueError) as exc:
        detail = str(exc).splitlines()[0][:200]
        return _refused(
            request_id,
            INVALID_REQUEST,
            f"Invalid Request: not a JSON-RPC 2.0 message ({detail})",
            notification,
        )
    return Screened(message=message, text=text)


def unusable_request_id(obj: Any) -> str | None:
    """Why a request's ``id`` cannot be answered with, or None (also for notifications and responses).

    JSON-RPC 2.0 ids are strings or numbers without a fraction; the SDK reads a request whose id is
    null, a boolean, a fraction, an object or an array as a notification and never answers it (the
    client waits forever). Such a request is refused, and the reply's id is null, as JSON-RPC says
    for an id that cannot be detected.
    """
    if not isinstance(obj, dict) or "id" not in obj or "method" not in obj:
        return None
    value = obj["id"]
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return None
    kind = (
        "null"
        if value is None
        else "a number with a fraction"
        if isinstance(value, float)
        else _json_kind(value)
    )
    return f"Invalid Request: the request id must be a string or an integer, got {kind}"


def tools_call_problem(obj: Any) -> str | None:
    """Why a ``tools/call`` request's params cannot name a tool call, or None.

    The SDK answers these with a bare "Invalid request parameters"; an agent needs to know which
    part to fix. Other methods are left to the SDK.
    """
    if not isinstance(obj, dict) or obj.get("method") != "tools/call" or "id" not in obj:
        return None
    params = obj.get("params")
    if not isinstance(params, dict):
        return f"tools/call needs params as a JSON object with a tool name, got {_json_kind(params)}"
    name = params.get("name")
    if not isinstance(name, str):
        return f"tools/call params.name must be the tool's name as a string, got {_json_kind(name)}"
    if (
        "arguments" in params
        and params["arguments"] is not None
        and not isinstance(params["arguments"], dict)
    ):
        return (
            f"tools/call params.arguments must be a JSON object of the tool's arguments, "
            f"got {_json_kind(params['arguments'])}"
        )
    return None


def _json_kind(value: Any) -> str:
    if value is None:
        return "null or nothing"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def recover_id(text: str) -> RequestId:
    """The top-level ``"id"`` of a message the decoder refused, or None.

    A tokenizer that only tracks nesting, so keys named ``id`` inside ``params`` (a stored
    message's id) are not mistaken for the request's.
    """
    depth = 0
    expecting: str | None = None  # "colon" after a top-level "id" key, then "value"
    for match in _TOKEN.finditer(text):
        token = match.group()
        if expecting == "colon":
            expecting = "value" if token == ":" else None
            continue
        if expecting == "value":
            return _id_value(token)
        if token in "{[":
            depth += 1
        elif token in "}]":
            depth -= 1
        elif depth == 1 and token == '"id"':
            expecting = "colon"
    return None


def _id_value(token: str) -> RequestId:
    if re.fullmatch(r"-?\d{1,19}", token):
        return int(token)
    if token.startswith('"'):
        try:
            value = json.loads(token)
        except ValueError:
            return None
        return clean_text(value) if isinstance(value, str) else None
    return None


def _top_level_id(obj: Any) -> RequestId:
    if not isinstance(obj, dict):
        return None
    value = obj.get("id")
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    return clean_text(value) if isinstance(value, str) else value


def _refused(request_id: RequestId, code: int, message: str, notification: bool) -> Screened:
    return Screened(
        reply=error_reply(request_id, code, message), notification=notification and request_id is None
    )


def _too_deep() -> str:
    return f"Invalid Request: the message is nested deeper than {MAX_MESSAGE_DEPTH} levels"


def _has_lone_surrogate(obj: Any) -> bool:
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if LONE_SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False
