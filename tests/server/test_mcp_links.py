"""declare_associations / traverse / store(associations) through a real stdio server: bad input is
``ok: false`` with its error code (never ``internal``), and long contents come back previewed."""

from __future__ import annotations

from typing import Any

import pytest
from mcp_helpers import McpSession

pytestmark = pytest.mark.slow

BAD: list[tuple[str, dict[str, Any], str]] = [
    ("declare_associations", {"agent_id": "w", "from": "mem:1", "associations": []}, "invalid_input"),
    (
        "declare_associations",
        {"agent_id": "w", "from": "ep:1", "associations": [{"relation": "r", "entity": "E"}]},
        "invalid_input",
    ),
    (
        "declare_associations",
        {"agent_id": "w", "from": "SRC", "associations": [{"relation": "Bad Name", "entity": "E"}]},
        "invalid_input",
    ),
    (
        "declare_associations",
        {"agent_id": "w", "from": "SRC", "associations": [{"relation": "r"}]},
        "invalid_input",
    ),
    (
        "declare_associations",
        {"agent_id": "w", "from": "SRC", "associations": [{"relation": "r", "to": "SRC", "entity": "E"}]},
        "invalid_input",
    ),
    (
        "declare_associations",
        {"agent_id": "w", "from": "SRC", "associations": [{"relation": "r", "to": "SRC"}]},
        "invalid_input",
    ),
    (
        "declare_associations",
        {"agent_id": "w", "from": "SRC", "associations": [{"relation": "r", "entity": " \t "}]},
        "invalid_input",
    ),
    (
        "declare_associations",
        {"agent_id": "w", "from": "SRC", "associations": [{"relation": "r", "to": "mem:999999"}]},
        "not_found",
    ),
    (
        "declare_associations",
        {"agent_id": "other", "from": "SRC", "associations": [{"relation": "r", "entity": "E"}]},
        "not_found",
    ),
    (
        "declare_associations",
        {"agent_id": "w", "from": "SRC", "associations": [{"relation": "r", "entity": "E" * 900}]},
        "invalid_input",
    ),
    ("traverse", {"agent_id": "w", "from": "SRC", "depth": 6}, "invalid_input"),
    ("traverse", {"agent_id": "w", "from": "SRC", "limit": 0}, "invalid_input"),
    ("traverse", {"agent_id": "w", "from": "SRC", "direction": "sideways"}, "invalid_input"),
    ("traverse", {"agent_id": "w", "from": "SRC", "relation": "NO"}, "invalid_input"),
    ("traverse", {"agent_id": "w", "from": "   "}, "invalid_input"),
    ("traverse", {"agent_id": "w", "from": {"entity": "E"}}, "invalid_input"),
    ("traverse", {"agent_id": "w", "from": "mem:999999"}, "not_found"),
    (
        "store",
        {
            "agent_id": "w",
            "message": {"content": "x"},
            "associations": [{"relation": "r", "to": "mem:999999"}],
        },
        "not_found",
    ),
    (
        "store",
        {"agent_id": "w", "message": {"content": "y"}, "associations": [{"relation": "1r", "entity": "E"}]},
        "invalid_input",  # the schema refuses it before store's own check (which says rejected)
    ),
    (
        "store",
        {
            "agent_id": "w",
            "message": {"content": "v"},
            "associations": [{"relation": "r", "to": "SRC", "entity": "E"}],
        },
        "rejected",  # store's own refusal of unusable input
    ),
    ("store", {"agent_id": "w", "message": {"content": "z"}, "associations": "E"}, "invalid_input"),
]


def _with_source(value: Any, ref: str) -> Any:
    if value == "SRC":
        return ref
    if isinstance(value, dict):
        return {k: _with_source(v, ref) for k, v in value.items()}
    if isinstance(value, list):
        return [_with_source(v, ref) for v in value]
    return value


def test_bad_association_input_is_refused_with_its_code(stdio_session: McpSession) -> None:
    source = stdio_session.call("store", {"agent_id": "w", "message": {"content": "the source memory"}})
    for tool, arguments, code in BAD:
        answer = stdio_session.call(tool, _with_source(arguments, source["ref"]))
        assert answer["ok"] is False and answer["error_code"] == code, (tool, arguments, answer)
    listed = stdio_session.call("list_memories", {"agent_id": "w"})
    assert listed["count"] == 1  # no refused store wrote its row


def test_traverse_previews_long_rows_like_recall(stdio_session: McpSession) -> None:
    long = stdio_session.call("store", {"agent_id": "p", "message": {"content": "long text " * 200}})
    short = stdio_session.call(
        "store",
        {
            "agent_id": "p",
            "message": {"content": "points at the long one"},
            "associations": [{"relation": "r", "to": long["ref"]}],
        },
    )
    walk = stdio_session.call("traverse", {"agent_id": "p", "from": short["ref"]})
    (row,) = walk["results"]
    assert row["ref"] == long["ref"] and row["content_truncated"] is True and row["content_len"] >= 1999
    assert row["path"] == [{"from": short["ref"], "relation": "r", "to": long["ref"]}]
