"""Confirmation before destruction through a real MCP client (docs/tools.md, ``delete_agent_data``):
asked on 2026-07-28 (an input_required result) and on the handshake revisions (elicitation/create);
a no or a dismissal deletes nothing; a client that cannot be asked is not."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from anyio.from_thread import start_blocking_portal
from mcp import Client
from mcp_helpers import server_env, stdio_target

pytestmark = pytest.mark.slow


@contextmanager
def client(tmp: Path, mode: str, answers: list[types.ElicitResult] | None, asked: list[str]) -> Iterator[Any]:
    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        assert answers, "asked more often than the test expected"
        return answers.pop(0)

    with start_blocking_portal() as portal:
        made = Client(
            stdio_target(server_env(tmp)),
            read_timeout_seconds=60,
            mode=mode,  # type: ignore[arg-type]
            elicitation_callback=on_elicit if answers is not None else None,
        )
        with portal.wrap_async_context_manager(made) as entered:

            def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
                result = portal.call(entered.call_tool, name, arguments)
                return dict(json.loads(result.content[0].text))

            call.protocol_version = entered.protocol_version  # type: ignore[attr-defined]
            yield call


def seed(call: Any, agent: str) -> None:
    for text in ("first thing", "second thing"):
        assert call("store", {"agent_id": agent, "message": {"content": text}})["result"] == "stored"


@pytest.mark.parametrize(
    "mode", ["auto", "legacy"]
)  # 2026-07-28 (input_required), the handshake (elicitation)
def test_a_refusal_deletes_nothing_and_a_yes_deletes(tmp_path: Path, mode: str) -> None:
    asked: list[str] = []
    answers = [
        types.ElicitResult(action="decline"),
        types.ElicitResult(action="cancel"),
        types.ElicitResult(action="accept", content={"confirm": False}),
        types.ElicitResult(action="accept", content={"confirm": True}),
    ]
    with client(tmp_path, mode, answers, asked) as call:
        assert (call.protocol_version >= "2026-07-28") is (mode == "auto"), call.protocol_version
        seed(call, "doomed")
        for _ in range(3):
            refused = call("delete_agent_data", {"agent_id": "doomed"})
            assert refused["ok"] is False and refused["error_code"] == "declined", refused
            assert call("list_memories", {"agent_id": "doomed"})["total"] == 2
        deleted = call("delete_agent_data", {"agent_id": "doomed"})
        assert deleted["ok"] is True, deleted
        assert call("list_memories", {"agent_id": "doomed"})["total"] == 0
    assert len(asked) == 4 and "'doomed' (2 memories, 0 episodes, 0 profiles)" in asked[0], asked


def test_a_client_that_cannot_be_asked_is_not(tmp_path: Path) -> None:
    asked: list[str] = []
    with client(tmp_path, "auto", None, asked) as call:
        seed(call, "plain")
        assert call("delete_agent_data", {"agent_id": "plain"})["ok"] is True
        assert call("list_memories", {"agent_id": "plain"})["total"] == 0
    assert asked == []


def test_a_move_and_an_import_over_rows_ask_a_copy_and_a_dry_run_do_not(tmp_path: Path) -> None:
    asked: list[str] = []
    no, yes = (
        types.ElicitResult(action="decline"),
        types.ElicitResult(action="accept", content={"confirm": True}),
    )
    with client(tmp_path, "auto", [no, yes, no, yes], asked) as call:
        seed(call, "src")
        move = {"source_agent_id": "src", "target_agent_id": "dst", "mode": "move"}
        assert call("merge_memories", {**move, "dry_run": True})["ok"] is True  # not asked
        assert call("merge_memories", {**move, "mode": "copy"})["ok"] is True  # not asked: dst gets copies
        assert call("merge_memories", move)["error_code"] == "declined"
        assert call("list_memories", {"agent_id": "src"})["total"] == 2
        assert call("merge_memories", move)["ok"] is True
        assert call("list_memories", {"agent_id": "src"})["total"] == 0
        assert len(asked) == 2 and "'src' (2 memories" in asked[0] and "'dst'" in asked[0], asked

        assert call("export_memories", {"agent_id": "dst", "output_path": "dst.jsonl"})["ok"] is True
        into_empty = call("import_memories", {"input_path": "dst.jsonl", "target_agent_id": "fresh"})
        assert into_empty["ok"] is True and len(asked) == 2  # an empty agent: nothing to ask
        over_rows = {"input_path": "dst.jsonl", "target_agent_id": "dst"}
        assert call("import_memories", over_rows)["error_code"] == "declined"
        assert call("import_memories", over_rows)["ok"] is True
        assert len(asked) == 4 and "into agent 'dst', which already holds 2 memories" in asked[2], asked


def test_only_a_call_the_dispatcher_would_run_is_asked_about() -> None:
    from cpersona.acl import Client, Level
    from cpersona.server.dispatch import admitted

    admin_of_a = Client(name="a-admin", token_sha256="", grants={"a": Level.ADMIN})
    assert admitted("delete_agent_data", {"agent_id": "a"}, admin_of_a) == {"agent_id": "a"}
    assert admitted("delete_agent_data", {"agent_id": "b"}, admin_of_a) is None  # no grant: no counts told
    assert admitted("delete_agent_data", {"agent_id": 7}, None) is None  # the schema refuses it
    assert admitted(
        "merge_memories", {"source_agent_id": "a", "target_agent_id": "b", "dry_run": None}, None
    ) == {
        "source_agent_id": "a",
        "target_agent_id": "b",
    }
