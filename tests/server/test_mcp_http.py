"""Streamable HTTP: a real server process on a loopback port, real MCP clients with a bearer token."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from index_standin import index_standin, release
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_helpers import (
    ALL_TOOL_NAMES,
    cpersona_executable,
    full_env,
    http_server,
    mcp_session,
    refused_connect,
    server_env,
)

pytestmark = pytest.mark.slow

TOKEN = "s3cret-token-for-tests"


def authed_transport(url: str, token: str = TOKEN) -> Any:
    """A streamable-HTTP transport whose every request carries the bearer token."""
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=300)
    )
    return streamable_http_client(url, http_client=http)


@pytest.fixture(scope="module")
def token_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One token-guarded server for the tests below that need nothing else (each writes under its own
    agent id, or nothing): its URL."""
    with http_server(tmp_path_factory.mktemp("http-token"), CPERSONA_AUTH_TOKEN=TOKEN) as (url, _proc):
        yield url


def test_store_and_recall_over_http_with_token(token_server: str) -> None:
    with mcp_session(authed_transport(token_server)) as session:
        tools = session.list_tools().tools
        assert sorted(t.name for t in tools) == sorted(ALL_TOOL_NAMES)
        stored = session.call("store", {"agent_id": "web", "message": {"content": "HTTP works: port check"}})
        assert stored["result"] == "stored", stored
        recalled = session.call("recall", {"agent_id": "web", "query": "port check"})
        assert recalled["results"][-1]["id"] == stored["id"]


def test_missing_or_wrong_token_is_401(token_server: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    url = token_server
    for auth in (None, "Bearer wrong-token", f"Basic {TOKEN}", f"Bearer {TOKEN}x", "Bearer", TOKEN):
        sent = dict(headers) if auth is None else {**headers, "Authorization": auth}
        response = httpx2.post(url, json=body, headers=sent, timeout=10)
        assert response.status_code == 401, (auth, response.status_code)
        payload = response.json()
        assert payload["ok"] is False and "unauthorized" in payload["error"]
        assert response.headers["www-authenticate"].startswith("Bearer")
    # The right token reaches the MCP endpoint (whatever it then says about a bare ping).
    ok = httpx2.post(url, json=body, headers={**headers, "Authorization": f"Bearer {TOKEN}"}, timeout=10)
    assert ok.status_code != 401
    # A real MCP client with the wrong token cannot open a session.
    error, statuses = refused_connect(url, "wrong-token")
    assert statuses and set(statuses) == {401}, (statuses, repr(error))


def test_refuses_to_start_without_auth(tmp_path: Path) -> None:
    env = full_env(server_env(tmp_path))
    done = subprocess.run(
        [cpersona_executable(), "serve", "--transport", "streamable-http", "--port", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "CPERSONA_AUTH_TOKEN" in done.stderr and "CPERSONA_ALLOW_UNAUTHENTICATED_HTTP" in done.stderr
    assert done.stdout == ""
    assert not (tmp_path / "memory.db").exists()  # refused before touching the database


def test_missing_acl_file_refuses_start(tmp_path: Path) -> None:
    env = full_env(
        server_env(tmp_path, CPERSONA_AUTH_TOKEN=TOKEN, CPERSONA_ACL_FILE=str(tmp_path / "acl.toml"))
    )
    done = subprocess.run(
        [cpersona_executable(), "serve", "--transport", "streamable-http", "--port", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "cannot read ACL file" in done.stderr and "acl.toml" in done.stderr
    assert not (tmp_path / "memory.db").exists()


def test_two_clients_storing_concurrently_lose_nothing(token_server: str) -> None:
    per_client = 50

    async def client_run(url: str, name: str, responses: list[dict[str, Any]]) -> None:
        async with Client(authed_transport(url), read_timeout_seconds=60) as client:

            async def one(i: int) -> None:
                result = await client.call_tool(
                    "store", {"agent_id": "shared", "message": {"content": f"{name} concurrent note {i}"}}
                )
                responses.append(result.structured_content)

            async with anyio.create_task_group() as tg:
                for i in range(per_client):
                    tg.start_soon(one, i)

    async def both(url: str) -> list[dict[str, Any]]:
        responses: list[dict[str, Any]] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(client_run, url, "left", responses)
            tg.start_soon(client_run, url, "right", responses)
        return responses

    url = token_server
    responses = anyio.run(both, url)
    assert len(responses) == 2 * per_client
    failures = [r for r in responses if r.get("result") != "stored"]
    assert failures == []
    assert not any("locked" in str(r) for r in responses)
    with mcp_session(authed_transport(url)) as session:
        listed = session.call("list_memories", {"agent_id": "shared", "limit": 1000})
        assert listed["total"] == 2 * per_client
        assert len({row["content"] for row in listed["items"]}) == 2 * per_client


def test_operations_tools_over_http(tmp_path: Path) -> None:
    """Issue 7's tools through a real MCP client over streamable HTTP (stdio has its own tests)."""
    ctx = tmp_path / "operating-context.toml"
    ctx.write_text('[rules]\nlanguage = "English"\n', encoding="utf-8")
    exports = tmp_path / "exports"
    with (
        index_standin({"0.1.0": release(), "9.9.9": release()}) as index,
        http_server(
            tmp_path,
            CPERSONA_AUTH_TOKEN=TOKEN,
            CPERSONA_EXPORT_DIR=str(exports),
            CPERSONA_OPERATING_CONTEXT="on",
            CPERSONA_OPERATING_CONTEXT_PATH=str(ctx),
            CPERSONA_UPDATE_CHECK="false",
            CPERSONA_UPDATE_INDEX_URL=index.url,
        ) as (url, _proc),
        mcp_session(authed_transport(url)) as session,
    ):
        for i in range(3):
            assert session.call(
                "store", {"agent_id": "src", "message": {"content": f"http portable fact {i}"}}
            )["ok"]

        health = session.call("check_health", {"agent_id": "src"})
        assert health["status"] == "healthy" and "operating_context" in health["checks_run"]
        assert health["stats"]["rows_per_agent"]["src"]["memories"] == 3
        deep = session.call("deep_check", {"agent_id": "src"})
        assert deep["ok"] is True and deep["fixed"] == 0

        out = session.call("export_memories", {"agent_id": "src", "output_path": "src.jsonl"})
        assert out["counts"] == {"memories": 3, "episodes": 0, "profiles": 0}
        assert (exports / "src.jsonl").is_file()
        imported = session.call("import_memories", {"input_path": "src.jsonl", "target_agent_id": "dst"})
        assert imported["counts"]["memories"] == {"inserted": 3, "duplicates": 0}
        listed = session.call("list_memories", {"agent_id": "dst"})["items"]
        assert sorted(r["content"] for r in listed) == [f"http portable fact {i}" for i in range(3)]
        escape = session.call("export_memories", {"agent_id": "src", "output_path": "../out.jsonl"})
        assert escape["ok"] is False and not (tmp_path / "out.jsonl").exists()

        assert session.call("pause_persistence", {"ttl_seconds": 120})["paused"] is True
        assert session.call("persistence_status")["paused"] is True
        skipped = session.call("store", {"agent_id": "dst", "message": {"content": "not while paused"}})
        assert skipped["ok"] is True and skipped["persisted"] is False
        assert session.call("resume_persistence")["was_paused"] is True
        assert session.call("persistence_status")["paused"] is False
        assert (
            session.call("list_memories", {"agent_id": "dst"})["total"] == 3
        )  # the paused store wrote nothing

        context = session.call("get_operating_context", {"section": "rules"})
        assert context["ok"] is True and context["context"] == {"language": "English"}

        # Disabled: a plain answer that says so, and neither the index nor the cache file is touched.
        report = session.call("check_update")
        assert report["ok"] is True and report["enabled"] is False and report["latest"] is None
        assert report["current"] and "CPERSONA_UPDATE_CHECK=false" in report["note"]
        applied = session.call("check_update", {"apply": True})
        assert applied["ok"] is False and applied["error_code"] == "update_check_disabled"
        assert index.seen == []
        assert not (tmp_path / "update-check.json").exists()
