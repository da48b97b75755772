"""Issue 17 defect 9 with a real MCP client over stdio and streamable HTTP: a 20,000-row import sends
progress notifications while it runs, and ``notifications/cancelled`` stops the work itself within one
batch (it used to stop only the reply while every row was still written).

The client cancels its call at the first progress notification, as a host's "stop" button does; the
SDK client then sends ``notifications/cancelled``. MCP forbids answering a cancelled request, so the
server says how far the import got in its log, and the rows in the database must match that line.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import stdio_client
from mcp_helpers import full_env, http_server, server_env, stdio_target
from test_mcp_http import TOKEN, authed_transport

from cpersona.portability.importer import BATCH

pytestmark = pytest.mark.slow

ROWS = 20_000


def write_export(path: Path, n: int) -> None:
    head = {
        "type": "header",
        "format": "cpersona-export",
        "version": 1,
        "exported_at": "2026-01-01T00:00:00Z",
        "source_schema_version": 1,
        "agent_id": "big",
        "include_embeddings": False,
        "embedding_model": None,
        "embedding_dim": None,
        "counts": {"memories": n, "episodes": 0, "profiles": 0},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        out.write(json.dumps(head) + "\n")
        for i in range(n):
            line = {
                "type": "memory",
                "agent_id": "big",
                "content": f"imported fact number {i} of the big file",
            }
            out.write(json.dumps(line) + "\n")


async def total_rows(client: Client) -> int:
    result = await client.call_tool("list_memories", {"agent_id": "big", "limit": 1})
    return int(result.structured_content["total"])


async def settled_total(client: Client, quiet: float = 1.5, timeout: float = 60.0) -> int:
    """The row count once it stopped changing for ``quiet`` seconds (the import has stopped)."""
    last, since = await total_rows(client), anyio.current_time()
    with anyio.fail_after(timeout):
        while anyio.current_time() - since < quiet:
            await anyio.sleep(0.25)
            now = await total_rows(client)
            if now != last:
                last, since = now, anyio.current_time()
    return last


async def cancel_during_import(connect: Callable[[], AbstractAsyncContextManager[Any]]) -> dict[str, Any]:
    """Start the import, cancel at the first progress notification; what the client saw and the rows left."""
    progress: list[tuple[float, float | None, str | None]] = []
    first = anyio.Event()
    finished: list[Any] = []
    async with connect() as client:

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            progress.append((done, total, message))
            first.set()

        async with anyio.create_task_group() as tg:
            scope = anyio.CancelScope()

            async def call() -> None:
                with scope:
                    finished.append(
                        await client.call_tool(
                            "import_memories", {"input_path": "big.jsonl"}, progress_callback=on_progress
                        )
                    )

            tg.start_soon(call)
            with anyio.fail_after(120):
                await first.wait()
            seen_at_cancel = len(progress)
            scope.cancel()  # the SDK client sends notifications/cancelled for the call
        rows = await settled_total(client)
    return {"progress": progress, "seen_at_cancel": seen_at_cancel, "finished": finished, "rows": rows}


def cancelled_line(log: str) -> dict[str, Any]:
    lines = [line for line in log.splitlines() if "import_memories was cancelled after" in line]
    assert len(lines) == 1, log[-3000:]
    return dict(json.loads(lines[0][lines[0].index("{") :]))


def check(outcome: dict[str, Any], log: str) -> None:
    progress = outcome["progress"]
    assert outcome["finished"] == []  # the cancelled call got no reply, as MCP says
    assert progress, "no progress notification arrived"
    done, total, message = progress[0]
    assert total == ROWS and done == BATCH and "records imported" in str(message)
    rows = outcome["rows"]
    assert 0 < rows < ROWS, rows  # the work stopped, not only the reply
    reported = cancelled_line(log)
    assert reported["cancelled"] is True
    assert reported["counts"]["memories"]["inserted"] == rows  # the log says exactly what was written
    assert rows % BATCH == 0  # whole batches only
    stop = reported["progress"]
    assert stop["unit"] == "records" and stop["done"] == rows
    assert stop["done"] - stop["done_when_cancelled"] <= BATCH  # within one batch of the cancel
    assert "Traceback" not in log


def test_a_cancelled_import_over_stdio_stops_within_one_batch(tmp_path: Path) -> None:
    write_export(tmp_path / "exports" / "big.jsonl", ROWS)
    env = full_env(server_env(tmp_path, CPERSONA_EXPORT_DIR=str(tmp_path / "exports")))
    log_path = tmp_path / "stderr.log"

    def connect() -> AbstractAsyncContextManager[Any]:
        errlog = log_path.open("a", encoding="utf-8")  # noqa: SIM115 - the server process holds it
        return Client(stdio_client(stdio_target(env), errlog=errlog), read_timeout_seconds=120)

    outcome = anyio.run(cancel_during_import, connect)
    check(outcome, log_path.read_text(errors="replace"))


def test_a_cancelled_import_over_http_stops_within_one_batch(tmp_path: Path) -> None:
    write_export(tmp_path / "exports" / "big.jsonl", ROWS)
    with http_server(tmp_path, CPERSONA_AUTH_TOKEN=TOKEN, CPERSONA_EXPORT_DIR=str(tmp_path / "exports")) as (
        url,
        _proc,
    ):
        outcome = anyio.run(
            cancel_during_import, lambda: Client(authed_transport(url), read_timeout_seconds=120)
        )
    check(outcome, (tmp_path / "server.log").read_text(errors="replace"))


def test_progress_arrives_to_the_end_of_an_uncancelled_import_and_export(tmp_path: Path) -> None:
    write_export(tmp_path / "exports" / "small.jsonl", 3 * BATCH + 1)
    env = full_env(server_env(tmp_path, CPERSONA_EXPORT_DIR=str(tmp_path / "exports")))

    async def with_progress(client: Client, tool: str, arguments: dict[str, Any], reports: int) -> Any:
        seen: list[float] = []

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            seen.append(done)

        result = await client.call_tool(tool, arguments, progress_callback=on_progress)
        with anyio.fail_after(10):  # the client runs progress callbacks as tasks of their own
            while len(seen) < reports:
                await anyio.sleep(0.05)
        return seen, dict(result.structured_content)

    async def run() -> list[tuple[list[float], dict[str, Any]]]:
        async with Client(stdio_target(env), read_timeout_seconds=120) as client:
            imported = await with_progress(client, "import_memories", {"input_path": "small.jsonl"}, 4)
            exported = await with_progress(
                client, "export_memories", {"agent_id": "big", "output_path": "out.jsonl"}, 4
            )
            return [imported, exported]

    (seen, result), (export_seen, exported) = anyio.run(run)
    assert result["counts"]["memories"]["inserted"] == 3 * BATCH + 1
    assert seen == [BATCH, 2 * BATCH, 3 * BATCH, 3 * BATCH + 1]
    assert exported["counts"]["memories"] == 3 * BATCH + 1
    assert export_seen == [500, 1000, 1500, 3 * BATCH + 1]
