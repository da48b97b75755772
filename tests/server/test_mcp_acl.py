"""Per-client ACLs over streamable HTTP, through a real server process and real MCP clients (docs/architecture.md#access-control-http-with-an-acl-file)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.client.streamable_http import streamable_http_client
from mcp_helpers import (
    cpersona_executable,
    full_env,
    http_server,
    mcp_session,
    refused_connect,
    server_env,
    stdio_target,
)

from cpersona.acl import WILDCARD, Level, add_client

pytestmark = pytest.mark.slow

SHARED_TOKEN = "shared-token-that-must-not-work"


def transport(url: str, token: str) -> Any:
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=120)
    )
    return streamable_http_client(url, http_client=http)


@dataclass
class AclServer:
    url: str
    tmp: Path
    log: Path
    tokens: dict[str, str]
    seeded: dict[str, Any]

    def session(self, client: str) -> Any:
        return mcp_session(transport(self.url, self.tokens[client]))


@pytest.fixture(scope="module")
def acl_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AclServer]:
    tmp = tmp_path_factory.mktemp("acl")
    acl = tmp / "acl.toml"
    tokens = {
        "reader": add_client(acl, "reader", {"agent-a": Level.READ}),
        "writer": add_client(acl, "writer", {"agent-a": Level.WRITE}),
        "admin": add_client(acl, "admin", {WILDCARD: Level.ADMIN}),
    }
    with http_server(tmp, CPERSONA_ACL_FILE=str(acl), CPERSONA_AUTH_TOKEN=SHARED_TOKEN) as (url, _proc):
        with mcp_session(transport(url, tokens["admin"])) as admin:
            seeded = {
                "a": admin.call(
                    "store", {"agent_id": "agent-a", "message": {"content": "alpha keeps the keys"}}
                ),
                "b": admin.call(
                    "store", {"agent_id": "agent-b", "message": {"content": "bravo secret plan"}}
                ),
                "b_locked": admin.call(
                    "store", {"agent_id": "agent-b", "message": {"content": "bravo locked"}}
                ),
                "b_ep": admin.call("archive_episode", {"agent_id": "agent-b", "summary": "bravo's episode"}),
            }
            assert all(r["ok"] for r in seeded.values()), seeded
        yield AclServer(url, tmp, tmp / "server.log", tokens, seeded)


def forbidden(response: dict[str, Any]) -> bool:
    return response["ok"] is False and response["error_code"] == "forbidden"


def test_read_client_cannot_store_to_its_own_agent(acl_server: AclServer) -> None:
    with acl_server.session("reader") as reader:
        refused = reader.call(
            "store", {"agent_id": "agent-a", "message": {"content": "reader tries to write"}}
        )
        assert forbidden(refused), refused
        assert "reader" in refused["error"] and "write" in refused["error"]
        assert (
            reader.call("recall", {"agent_id": "agent-a", "query": "keys"})["results"][-1]["id"]
            == acl_server.seeded["a"]["id"]
        )
        for tool, args in [
            ("update_profile", {"agent_id": "agent-a", "profile": "nope"}),
            ("archive_episode", {"agent_id": "agent-a", "summary": "nope"}),
            ("delete_memory", {"memory_id": acl_server.seeded["a"]["id"]}),
            ("delete_agent_data", {"agent_id": "agent-a"}),
        ]:
            assert (
                forbidden(reader.call(tool, args)) or reader.call(tool, args)["error_code"] == "not_found"
            ), tool


def test_read_client_sees_and_touches_nothing_of_another_agent(acl_server: AclServer) -> None:
    b_id, b_ep = acl_server.seeded["b"]["id"], acl_server.seeded["b_ep"]["id"]
    with acl_server.session("reader") as reader:
        # naming agent B is refused outright
        for tool, args in [
            ("recall", {"agent_id": "agent-b", "query": "secret"}),
            ("recall_with_context", {"agent_id": "agent-b", "query": "secret", "external_context": []}),
            ("get_contents", {"agent_id": "agent-b", "refs": [f"mem:{b_id}"]}),
            ("get_profile", {"agent_id": "agent-b"}),
            ("list_memories", {"agent_id": "agent-b"}),
            ("list_episodes", {"agent_id": "agent-b"}),
            ("update_memory", {"memory_id": b_id, "content": "defaced", "agent_id": "agent-b"}),
            ("delete_memory", {"memory_id": b_id, "agent_id": "agent-b"}),
            ("check_health", {"agent_id": "agent-b"}),
            ("export_memories", {"agent_id": "agent-b", "output_path": "b.jsonl"}),
        ]:
            assert forbidden(reader.call(tool, args)), tool
        # listing without agent_id shows agent A only
        listed = reader.call("list_memories", {"limit": 100})
        assert {row["agent_id"] for row in listed["items"]} == {"agent-a"} and listed["total"] == 1
        assert reader.call("list_episodes", {})["items"] == []
        # rows of B by id look absent
        for tool, args in [
            ("update_memory", {"memory_id": b_id, "content": "defaced"}),
            ("delete_memory", {"memory_id": b_id}),
            ("lock_memory", {"memory_id": b_id}),
            ("unlock_memory", {"memory_id": b_id}),
            ("delete_episode", {"episode_id": b_ep}),
        ]:
            response = reader.call(tool, args)
            assert response["ok"] is False and response["error_code"] in {"not_found", "forbidden"}, (
                tool,
                response,
            )
        # get_contents of B's ref under A's id: missing, never revealed
        got = reader.call("get_contents", {"agent_id": "agent-a", "refs": [f"mem:{b_id}"]})
        assert got["items"] == [] and got["missing"] == [f"mem:{b_id}"]
    with acl_server.session("writer") as writer:
        # a write client on A cannot edit or delete B's rows by id either
        assert (
            writer.call("update_memory", {"memory_id": b_id, "content": "defaced"})["error_code"]
            == "not_found"
        )
        assert writer.call("delete_memory", {"memory_id": b_id})["error_code"] == "not_found"
        assert writer.call("delete_episode", {"episode_id": b_ep})["error_code"] == "not_found"
    with acl_server.session("admin") as admin:
        intact = admin.call("get_contents", {"agent_id": "agent-b", "refs": [f"mem:{b_id}", f"ep:{b_ep}"]})
        assert [row["content"] for row in intact["items"]][0] == "bravo secret plan"
        assert len(intact["items"]) == 2


def test_write_client_stores_edits_and_deletes_its_own_agent(acl_server: AclServer) -> None:
    with acl_server.session("writer") as writer:
        stored = writer.call("store", {"agent_id": "agent-a", "message": {"content": "writer was here"}})
        assert stored["result"] == "stored", stored
        assert writer.call("update_memory", {"memory_id": stored["id"], "content": "writer edited"})["ok"]
        assert writer.call("lock_memory", {"memory_id": stored["id"]})["ok"]
        assert writer.call("unlock_memory", {"memory_id": stored["id"]})["ok"]
        assert writer.call("delete_memory", {"memory_id": stored["id"]})["ok"]
        assert forbidden(writer.call("store", {"agent_id": "agent-b", "message": {"content": "into b"}}))
        assert forbidden(writer.call("delete_agent_data", {"agent_id": "agent-a"}))  # admin only
        assert forbidden(writer.call("export_memories", {"agent_id": "agent-a", "output_path": "a.jsonl"}))
        assert forbidden(writer.call("check_health", {"agent_id": "agent-a", "fix": True}))
        assert forbidden(writer.call("pause_persistence", {"ttl_seconds": 5}))
        assert writer.call("persistence_status", {})["ok"]  # process-wide status is open to every client
        assert writer.call("check_health", {"agent_id": "agent-a"})["ok"] is not None


def test_admin_client_can_export_and_manage(acl_server: AclServer) -> None:
    with acl_server.session("admin") as admin:
        exported = admin.call("export_memories", {"agent_id": "agent-b", "output_path": "b.jsonl"})
        assert exported["ok"], exported
        assert admin.call("list_memories", {})["total"] >= 3  # wildcard: every agent
        assert admin.call("pause_persistence", {"ttl_seconds": 30})["ok"]
        assert admin.call("resume_persistence", {})["ok"]


def test_wrong_or_shared_token_is_401(acl_server: AclServer) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    for auth in (
        None,
        "Bearer wrong-token-0123456789",
        f"Bearer {SHARED_TOKEN}",
        f"Bearer {acl_server.tokens['reader']}x",
        f"Basic {acl_server.tokens['reader']}",
    ):
        sent = dict(headers) if auth is None else {**headers, "Authorization": auth}
        response = httpx2.post(acl_server.url, json=body, headers=sent, timeout=10)
        assert response.status_code == 401, auth
        assert response.json()["error_code"] == "unauthorized"
    ok = httpx2.post(
        acl_server.url,
        json=body,
        timeout=10,
        headers={**headers, "Authorization": f"bearer {acl_server.tokens['reader']}"},
    )
    assert ok.status_code != 401
    error, statuses = refused_connect(acl_server.url, SHARED_TOKEN)
    assert statuses and set(statuses) == {401}, (statuses, repr(error))
    log = acl_server.log.read_text(errors="replace")
    assert "CPERSONA_AUTH_TOKEN is ignored" in log
    assert acl_server.tokens["reader"] not in log


def test_malformed_acl_refuses_start_with_the_line(tmp_path: Path) -> None:
    acl = tmp_path / "acl.toml"
    acl.write_text(
        '# comment\n[clients.x]\ntoken_sha256 = "' + "a" * 64 + '"\ngrants = { "a" = "superuser" }\n'
    )
    env = full_env(server_env(tmp_path, CPERSONA_ACL_FILE=str(acl)))
    done = subprocess.run(
        [cpersona_executable(), "serve", "--transport", "streamable-http", "--port", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "line 4" in done.stderr and "superuser" in done.stderr and str(acl) in done.stderr
    assert done.stdout == ""
    assert not (tmp_path / "memory.db").exists()


def test_stdio_says_the_acl_does_not_apply(tmp_path: Path) -> None:
    acl = tmp_path / "acl.toml"
    add_client(acl, "someone", {"agent-a": Level.READ})
    env = full_env(server_env(tmp_path, CPERSONA_ACL_FILE=str(acl)))
    # stdin at EOF: the server starts, says its piece on stderr and exits when the client "closes".
    done = subprocess.run(
        [cpersona_executable(), "serve"], env=env, input="", capture_output=True, text=True, timeout=60
    )
    assert "does not apply over stdio" in done.stderr, done.stderr
    assert done.stdout == ""


def test_stdio_with_an_acl_still_serves_every_agent(tmp_path: Path) -> None:
    acl = tmp_path / "acl.toml"
    add_client(acl, "someone", {"agent-a": Level.READ})
    with mcp_session(stdio_target(full_env(server_env(tmp_path, CPERSONA_ACL_FILE=str(acl))))) as session:
        assert session.call("store", {"agent_id": "agent-b", "message": {"content": "stdio writes"}})["ok"]


def test_supersede_never_reaches_an_ungranted_agent(acl_server: AclServer) -> None:
    a_ref, b_ref = acl_server.seeded["a"]["ref"], acl_server.seeded["b"]["ref"]
    with acl_server.session("writer") as writer:
        before = writer.call("list_memories", {"agent_id": "agent-a"})["total"]
        hidden = writer.call(
            "store",
            {
                "agent_id": "agent-a",
                "message": {"content": "writer replaces bravo's plan"},
                "supersedes": [b_ref],
            },
        )
        assert hidden["ok"] is False and hidden["error_code"] == "not_found", hidden
        linked = writer.call("update_memory", {"memory_id": a_ref, "supersedes": [b_ref]})
        assert linked["ok"] is False and linked["error_code"] == "not_found", linked
        assert writer.call("list_memories", {"agent_id": "agent-a"})["total"] == before
        assert writer.call("get_history", {"memory_id": a_ref})["current"] == a_ref
        assert writer.call("get_history", {"memory_id": b_ref})["error_code"] == "not_found"
    with acl_server.session("reader") as reader:
        assert reader.call("get_history", {"memory_id": a_ref})["count"] == 1
        assert reader.call("get_history", {"memory_id": b_ref})["error_code"] == "not_found"
        assert forbidden(reader.call("get_history", {"memory_id": b_ref, "agent_id": "agent-b"}))
        refused = reader.call("update_memory", {"memory_id": a_ref, "supersedes": [a_ref]})
        assert forbidden(refused) or refused["error_code"] == "not_found", refused
    with acl_server.session("admin") as admin:
        assert admin.call("get_history", {"memory_id": b_ref})["current"] == b_ref  # untouched
