"""Long tools as tasks (docs/tasks.md) through a real MCP client (the SDK's ``Client`` on 2026-07-28, with
the tasks extension declared and its ``resultType: "task"`` claimed), over stdio and streamable HTTP.

A 20,000-row import runs as a task that the client polls, sees progress on and cancels: the task ends
``cancelled``, its message says what stayed, and the database holds exactly that, in whole batches.
Finished results are kept for ``CPERSONA_TASK_RESULT_TTL_SECONDS`` and then forgotten; under an ACL one
client's task is invisible to another; a client that did not declare the extension is answered
synchronously, as before, and is refused the ``tasks/*`` methods (-32021).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
import httpx2
import mcp.types as types
import pytest
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_helpers import full_env, http_server, server_env, stdio_target
from mcp_types import Result
from pydantic import Field, TypeAdapter
from test_mcp_cancel import ROWS, write_export

from cpersona.acl import Level, add_client
from cpersona.portability.importer import BATCH

pytestmark = pytest.mark.slow

EXTENSION = "io.modelcontextprotocol/tasks"
ANY_DICT = TypeAdapter(dict[str, Any])


class CreatedTask(Result):
    """The extension's ``CreateTaskResult`` as this client reads it."""

    result_type: Literal["task"]
    task_id: Annotated[str, Field(alias="taskId")]
    status: str
    ttl_ms: Annotated[int | None, Field(alias="ttlMs")]
    poll_interval_ms: Annotated[int | None, Field(alias="pollIntervalMs")] = None


async def _not_resolved(created: CreatedTask, context: ClaimContext) -> types.CallToolResult:
    raise AssertionError("these tests drive the task themselves (allow_claimed=True)")


class TasksExtension(ClientExtension):
    """Declares the tasks extension and claims its result shape."""

    identifier = EXTENSION

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=_not_resolved)]


class TaskParams(types.RequestParams):
    task_id: Annotated[str, Field(alias="taskId")]


class TaskRequest(types.Request[TaskParams, str]):
    name_param = "taskId"  # the extension routes tasks/* by Mcp-Name over HTTP


class Tasks:
    """One client's view of the task methods."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def start(self, tool: str, arguments: dict[str, Any]) -> CreatedTask | types.CallToolResult:
        return await self.client.session.call_tool(tool, arguments, allow_claimed=True)  # type: ignore[return-value]

    async def send(self, method: str, task_id: str) -> dict[str, Any]:
        request = TaskRequest(method=method, params=TaskParams(taskId=task_id))
        return await self.client.session.send_request(request, ANY_DICT)

    async def get(self, task_id: str) -> dict[str, Any]:
        return await self.send("tasks/get", task_id)

    async def until_terminal(
        self, task_id: str, timeout: float = 120
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        seen: list[dict[str, Any]] = []
        with anyio.fail_after(timeout):
            while True:
                task = await self.get(task_id)
                seen.append(task)
                if task["status"] in {"completed", "failed", "cancelled"}:
                    return task, seen
                await anyio.sleep(0.05)

    async def rows(self, agent: str) -> int:
        result = await self.client.call_tool("list_memories", {"agent_id": agent, "limit": 1})
        return int(result.structured_content["total"])


def stdio_tasks_client(env: dict[str, str], log: Path, *, declare: bool = True) -> Client:
    errlog = log.open("a", encoding="utf-8")  # noqa: SIM115 - the server process holds it
    return Client(
        stdio_client(stdio_target(env), errlog=errlog),
        read_timeout_seconds=120,
        mode="2026-07-28",
        extensions=[TasksExtension()] if declare else None,
    )


def http_tasks_client(url: str, token: str) -> Client:
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=120)
    )
    return Client(
        streamable_http_client(url, http_client=http),
        read_timeout_seconds=120,
        mode="2026-07-28",
        extensions=[TasksExtension()],
    )


async def poll_cancel_import(connect: Callable[[], AbstractAsyncContextManager[Client]]) -> dict[str, Any]:
    """Start the 20,000-row import as a task, poll until a batch is in, cancel, poll to the end."""
    async with connect() as client:
        tasks = Tasks(client)
        created = await tasks.start("import_memories", {"input_path": "big.jsonl", "target_agent_id": "big"})
        assert isinstance(created, CreatedTask), created
        polled: list[dict[str, Any]] = []
        with anyio.fail_after(120):
            while True:
                task = await tasks.get(created.task_id)
                polled.append(task)
                assert task["status"] == "working", task
                if task["_meta"]["cpersona/progress"]["done"] >= BATCH:
                    break
                await anyio.sleep(0.02)
        ack = await tasks.send("tasks/cancel", created.task_id)
        final, after = await tasks.until_terminal(created.task_id)
        again = await tasks.send("tasks/cancel", created.task_id)  # a finished task: acknowledged, unchanged
        return {
            "created": created,
            "polled": polled + after,
            "ack": ack,
            "again": again,
            "final": final,
            "final_again": await tasks.get(created.task_id),
            "rows": await tasks.rows("big"),
        }


def check_cancelled_import(outcome: dict[str, Any]) -> None:
    created: CreatedTask = outcome["created"]
    assert created.status == "working" and created.ttl_ms and created.poll_interval_ms
    progress = [t["_meta"]["cpersona/progress"] for t in outcome["polled"]]
    assert any(p["done"] >= BATCH and p["total"] == ROWS and p["unit"] == "records" for p in progress)
    assert [p["done"] for p in progress] == sorted(p["done"] for p in progress)  # it only moves forward
    assert any(
        "records imported" in t["statusMessage"] for t in outcome["polled"] if t["status"] == "working"
    )
    assert {k: v for k, v in outcome["ack"].items() if k != "_meta"} == {"resultType": "complete"}
    final = outcome["final"]
    assert final["status"] == "cancelled", final
    assert "result" not in final and "error" not in final
    message = final["statusMessage"]
    assert "import_memories was cancelled after" in message and "written whole and stay" in message
    reported = json.loads(message[message.index("{") :])
    rows = outcome["rows"]
    assert 0 < rows < ROWS, rows  # the work stopped
    assert rows % BATCH == 0  # nothing half-written: whole batches only
    assert reported["counts"]["memories"]["inserted"] == rows  # and the task says exactly what stayed
    assert reported["progress"]["done"] == rows
    assert outcome["final_again"]["status"] == "cancelled"


def test_an_import_task_is_polled_shows_progress_and_is_cancelled_over_stdio(tmp_path: Path) -> None:
    write_export(tmp_path / "exports" / "big.jsonl", ROWS)
    env = full_env(server_env(tmp_path, CPERSONA_EXPORT_DIR=str(tmp_path / "exports")))
    outcome = anyio.run(poll_cancel_import, lambda: stdio_tasks_client(env, tmp_path / "stderr.log"))
    check_cancelled_import(outcome)


def test_a_finished_task_keeps_its_result_for_the_set_time_then_is_forgotten(tmp_path: Path) -> None:
    write_export(tmp_path / "exports" / "small.jsonl", 3)
    env = full_env(
        server_env(
            tmp_path, CPERSONA_EXPORT_DIR=str(tmp_path / "exports"), CPERSONA_TASK_RESULT_TTL_SECONDS="2"
        )
    )

    async def run() -> dict[str, Any]:
        async with stdio_tasks_client(env, tmp_path / "stderr.log") as client:
            tasks = Tasks(client)
            created = await tasks.start("import_memories", {"input_path": "small.jsonl"})
            assert isinstance(created, CreatedTask)
            final, _ = await tasks.until_terminal(created.task_id)
            kept = await tasks.get(created.task_id)  # well inside the kept time: still there
            await anyio.sleep(2.5)
            with pytest.raises(MCPError) as gone:
                await tasks.get(created.task_id)
            with pytest.raises(MCPError) as unknown:
                await tasks.get("no-such-task")
            return {"final": final, "kept": kept, "gone": gone.value, "unknown": unknown.value}

    out = anyio.run(run)
    final = out["final"]
    assert final["status"] == "completed", final
    result = final["result"]
    assert result["isError"] is False and result["structuredContent"]["counts"]["memories"]["inserted"] == 3
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]  # the tool's own answer
    assert final["ttlMs"] >= 2000 and "pollIntervalMs" not in final
    assert out["kept"]["result"] == result
    assert out["gone"].error.code == -32602 and "expired" in out["gone"].error.message
    assert out["unknown"].error.code == -32602


def test_a_client_without_the_extension_is_answered_synchronously_and_refused_tasks(tmp_path: Path) -> None:
    write_export(tmp_path / "exports" / "small.jsonl", 3)
    env = full_env(server_env(tmp_path, CPERSONA_EXPORT_DIR=str(tmp_path / "exports")))

    async def run() -> tuple[Any, MCPError]:
        async with stdio_tasks_client(env, tmp_path / "stderr.log", declare=False) as client:
            result = await client.call_tool("import_memories", {"input_path": "small.jsonl"})
            with pytest.raises(MCPError) as refused:
                await Tasks(client).get("anything")
            return result, refused.value

    result, refused = anyio.run(run)
    assert isinstance(result, types.CallToolResult)
    assert result.structured_content["counts"]["memories"]["inserted"] == 3
    assert refused.error.code == -32021
    assert refused.error.data == {"requiredCapabilities": {"extensions": {EXTENSION: {}}}}


def test_a_quick_tool_is_never_a_task(tmp_path: Path) -> None:
    env = full_env(server_env(tmp_path))

    async def run() -> list[Any]:
        async with stdio_tasks_client(env, tmp_path / "stderr.log") as client:
            tasks = Tasks(client)
            stored = await tasks.start("store", {"agent_id": "a", "message": {"content": "a plain fact"}})
            checked = await tasks.start("check_health", {})  # no repair: quick, so answered at once
            return [stored, checked]

    for result in anyio.run(run):
        assert isinstance(result, types.CallToolResult) and result.is_error is False


@asynccontextmanager
async def both(url: str, tokens: dict[str, str]) -> AsyncIterator[dict[str, Tasks]]:
    async with http_tasks_client(url, tokens["alice"]) as alice, http_tasks_client(url, tokens["bob"]) as bob:
        yield {"alice": Tasks(alice), "bob": Tasks(bob)}


def test_one_acl_clients_task_is_invisible_to_another_over_http(tmp_path: Path) -> None:
    write_export(tmp_path / "exports" / "clients" / "alice" / "big.jsonl", ROWS)  # an ACL client's own folder
    acl = tmp_path / "acl.toml"
    tokens = {
        "alice": add_client(acl, "alice", {"big": Level.ADMIN}),
        "bob": add_client(acl, "bob", {"*": Level.ADMIN}),  # even an admin of every agent
    }

    async def run(url: str) -> dict[str, Any]:
        async with both(url, tokens) as clients:
            alice, bob = clients["alice"], clients["bob"]
            created = await alice.start(
                "import_memories", {"input_path": "big.jsonl", "target_agent_id": "big"}
            )
            assert isinstance(created, CreatedTask), created
            refusals = []
            for method in ("tasks/get", "tasks/cancel", "tasks/update"):
                with pytest.raises(MCPError) as refused:
                    await bob.send(method, created.task_id)
                refusals.append(refused.value.error)
            with pytest.raises(MCPError) as unknown:
                await bob.get("no-such-task")
            final, _ = await alice.until_terminal(created.task_id)  # bob's cancel did not touch it
            return {"refusals": refusals, "unknown": unknown.value.error, "final": final}

    with http_server(tmp_path, CPERSONA_ACL_FILE=str(acl), CPERSONA_EXPORT_DIR=str(tmp_path / "exports")) as (
        url,
        _proc,
    ):
        out = anyio.run(run, url)
    for error in out["refusals"]:  # answered exactly like an id that does not exist
        assert error.code == out["unknown"].code == -32602
        assert error.message.replace(error.message.split("'")[1], "X") == out["unknown"].message.replace(
            "no-such-task", "X"
        )
    assert out["final"]["status"] == "completed", out["final"]
    imported = out["final"]["result"]["structuredContent"]
    assert imported.get("ok") is True, imported
    assert imported["counts"]["memories"]["inserted"] == ROWS


def test_an_import_task_is_cancelled_over_http(tmp_path: Path) -> None:
    write_export(tmp_path / "exports" / "clients" / "alice" / "big.jsonl", ROWS)
    acl = tmp_path / "acl.toml"
    token = add_client(acl, "alice", {"big": Level.ADMIN})
    with http_server(tmp_path, CPERSONA_ACL_FILE=str(acl), CPERSONA_EXPORT_DIR=str(tmp_path / "exports")) as (
        url,
        _proc,
    ):
        outcome = anyio.run(poll_cancel_import, lambda: http_tasks_client(url, token))
    check_cancelled_import(outcome)


def test_a_task_request_whose_mcp_name_is_another_task_is_refused(tmp_path: Path) -> None:
    acl = tmp_path / "acl.toml"
    token = add_client(acl, "alice", {"*": Level.ADMIN})
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXTENSION: {}}},
    }
    body = {"jsonrpc": "2.0", "id": 7, "method": "tasks/get", "params": {"taskId": "one", "_meta": meta}}
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tasks/get",
    }
    with http_server(tmp_path, CPERSONA_ACL_FILE=str(acl)) as (url, _proc):
        wrong = httpx2.post(url, json=body, headers={**headers, "Mcp-Name": "another"}, timeout=30)
        right = httpx2.post(url, json=body, headers={**headers, "Mcp-Name": "one"}, timeout=30)
    assert wrong.status_code == 400 and wrong.json()["error"]["code"] == -32020 and wrong.json()["id"] == 7
    assert right.json()["error"]["code"] == -32602  # routed to tasks/get: no task "one"


class PollingTasksExtension(ClientExtension):
    """The extension as a host would use it: ``Client.call_tool`` polls the task to its end and returns the
    tool's result, so the caller never sees the task (every poll is recorded)."""

    identifier = EXTENSION

    def __init__(self, polls: list[dict[str, Any]]) -> None:
        self.polls = polls

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self.resolve)]

    async def resolve(self, created: CreatedTask, context: ClaimContext) -> types.CallToolResult:
        request = TaskRequest(method="tasks/get", params=TaskParams(taskId=created.task_id))
        with anyio.fail_after(120):
            while True:
                task = await context.session.send_request(request, ANY_DICT)
                self.polls.append(task)
                if task["status"] == "completed":
                    return types.CallToolResult.model_validate(task["result"], by_name=False)
                assert task["status"] == "working", task
                await anyio.sleep(0.05)


def test_an_import_over_rows_asks_first_then_runs_as_a_task_the_client_resolves(tmp_path: Path) -> None:
    """The extension's composition rule: the confirmation (input_required) is settled on the request
    itself, before any task exists; a no creates no task; a yes gets a task the client polls."""
    write_export(tmp_path / "exports" / "big.jsonl", 3 * BATCH)
    env = full_env(server_env(tmp_path, CPERSONA_EXPORT_DIR=str(tmp_path / "exports")))
    polls: list[dict[str, Any]] = []
    asked: list[str] = []
    answers = [
        types.ElicitResult(action="decline"),
        types.ElicitResult(action="accept", content={"confirm": True}),
    ]

    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return answers.pop(0)

    async def run() -> list[dict[str, Any]]:
        async with Client(
            stdio_target(env),
            read_timeout_seconds=120,
            mode="2026-07-28",
            extensions=[PollingTasksExtension(polls)],
            elicitation_callback=on_elicit,
        ) as client:
            await client.call_tool("store", {"agent_id": "big", "message": {"content": "already here"}})
            arguments = {"input_path": "big.jsonl", "target_agent_id": "big"}
            declined = await client.call_tool("import_memories", arguments)
            polls_after_no = len(polls)
            imported = await client.call_tool("import_memories", arguments)
            rows = await client.call_tool("list_memories", {"agent_id": "big", "limit": 1})
            return [
                dict(declined.structured_content),
                {"polls": polls_after_no},
                dict(imported.structured_content),
                dict(rows.structured_content),
            ]

    declined, after_no, imported, rows = anyio.run(run)
    assert declined["error_code"] == "declined" and after_no["polls"] == 0  # no task was made for a no
    assert len(asked) == 2 and "which already holds 1 memory, 0 episodes, 0 profiles" in asked[0], asked
    assert imported["ok"] is True and imported["counts"]["memories"]["inserted"] == 3 * BATCH
    assert polls and polls[-1]["status"] == "completed"  # it ran as a task
    assert rows["total"] == 3 * BATCH + 1
