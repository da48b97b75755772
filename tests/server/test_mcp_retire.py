"""retire_memory / unretire_memory and store's ttl through real MCP clients (issue 39).

Over stdio and HTTP: the retired memory leaves recall and stays in get_history; a store with ttl says
when it expires; any value for the new arguments (reason, include_retired, ttl, expires_at) is answered
with a clear refusal, never an internal error (hypothesis); under an ACL file only write on the row's
agent may retire or unretire it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.client.streamable_http import streamable_http_client
from mcp_helpers import McpSession, http_server, mcp_session, transport_session, unique

from cpersona.acl import Level, add_client

pytestmark = pytest.mark.slow

REFUSALS = {"invalid_input", "not_found", "locked"}
next_agent = unique("ret")


@pytest.fixture(scope="module", params=["stdio", "http"])
def session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpSession]:
    with transport_session(request.param, tmp_path_factory.mktemp(request.param)) as opened:
        yield opened


def test_retire_hides_from_recall_and_keeps_history(session: McpSession) -> None:
    agent = next_agent()
    ref = session.call("store", {"agent_id": agent, "message": {"content": "standup in room Osprey"}})["ref"]
    retired = session.call("retire_memory", {"memory_id": ref, "agent_id": agent, "reason": "moved rooms"})
    assert retired["ok"] and retired["retired"] is True and retired["retire_reason"] == "moved rooms"
    assert session.call("recall", {"agent_id": agent, "query": "standup Osprey"})["count"] == 0
    wide = session.call("recall", {"agent_id": agent, "query": "standup Osprey", "include_retired": True})
    assert [r["ref"] for r in wide["results"]] == [ref] and wide["results"][0]["retired_at"]
    history = session.call("get_history", {"memory_id": ref, "agent_id": agent})
    assert history["history"][0]["retire_reason"] == "moved rooms"
    back = session.call("unretire_memory", {"memory_id": ref, "agent_id": agent})
    assert back["ok"] and back["retired"] is False and back["was_retired"] is True
    assert session.call("recall", {"agent_id": agent, "query": "standup Osprey"})["count"] == 1
    session.call("lock_memory", {"memory_id": ref, "agent_id": agent})
    locked = session.call("retire_memory", {"memory_id": ref, "agent_id": agent})
    assert locked["ok"] is False and locked["error_code"] == "locked"
    other = session.call("retire_memory", {"memory_id": ref, "agent_id": next_agent()})
    assert other["ok"] is False and other["error_code"] == "not_found"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    tool=st.sampled_from(["retire_memory", "unretire_memory", "recall"]),
    memory_id=st.one_of(
        st.integers(), st.text(max_size=6), st.sampled_from(["mem:1", "ep:1", "mem:0"]), st.none()
    ),
    value=st.one_of(
        st.none(), st.booleans(), st.integers(), st.text(max_size=8), st.lists(st.integers(), max_size=2)
    ),
)
def test_any_input_is_answered_without_an_internal_error(
    session: McpSession, tool: str, memory_id: Any, value: Any
) -> None:
    if tool == "recall":
        args: dict[str, Any] = {"agent_id": "p", "query": "anything", "include_retired": value}
    else:
        args = {"memory_id": memory_id, "agent_id": "p"}
        if tool == "retire_memory":
            args["reason"] = value
    out = session.call(tool, args)
    if not out["ok"]:
        assert out["error_code"] in REFUSALS and out["error"], out


def _client(url: str, token: str) -> Any:
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=120)
    )
    return streamable_http_client(url, http_client=http)


def test_under_an_acl_only_write_on_the_rows_agent_retires_it(tmp_path: Path) -> None:
    acl = tmp_path / "acl.toml"
    writer = add_client(acl, "writer", {"a": Level.WRITE})
    reader = add_client(acl, "reader", {"a": Level.READ, "b": Level.WRITE})
    with (
        http_server(tmp_path, CPERSONA_ACL_FILE=str(acl)) as (url, _proc),
        mcp_session(_client(url, writer)) as w,
        mcp_session(_client(url, reader)) as r,
    ):
        ref = w.call("store", {"agent_id": "a", "message": {"content": "the on-call rota for March"}})["ref"]
        for tool in ("retire_memory", "unretire_memory"):
            named = r.call(tool, {"memory_id": ref, "agent_id": "a"})
            assert named["ok"] is False and named["error_code"] == "forbidden", named
            unnamed = r.call(tool, {"memory_id": ref})  # narrowed to b: a's row looks absent
            assert unnamed["ok"] is False and unnamed["error_code"] == "not_found", unnamed
        assert r.call("recall", {"agent_id": "a", "query": "on-call rota"})["count"] == 1
        assert w.call("retire_memory", {"memory_id": ref})["retired"] is True
        assert r.call("recall", {"agent_id": "a", "query": "on-call rota"})["count"] == 0


def test_store_with_ttl_over_the_wire(session: McpSession) -> None:
    agent = next_agent()
    stored = session.call(
        "store", {"agent_id": agent, "message": {"content": "room Osprey this week"}, "ttl": 3600}
    )
    assert stored["ok"] and stored["expires_at"]
    listed = session.call("list_memories", {"agent_id": agent})
    assert listed["items"][0]["expires_at"] == stored["expires_at"]
    for bad in (
        {"ttl": 0},
        {"ttl": "soon"},
        {"expires_at": "2001-01-01T00:00:00Z"},
        {"ttl": 5, "expires_at": 1},
    ):
        refused = session.call("store", {"agent_id": agent, "message": {"content": "never stored"}, **bad})
        assert refused["ok"] is False and refused["error_code"] in {"invalid_input", "rejected"}, refused
        assert "ttl" in refused["error"] or "expires_at" in refused["error"], refused
    assert session.call("list_memories", {"agent_id": agent})["total"] == 1


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    ttl=st.one_of(st.none(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5), st.booleans()),
    expires_at=st.one_of(st.none(), st.integers(), st.text(max_size=25), st.floats(allow_nan=False)),
)
def test_any_expiry_is_stored_or_refused_never_an_internal_error(
    session: McpSession, ttl: Any, expires_at: Any
) -> None:
    args: dict[str, Any] = {"agent_id": "p", "message": {"content": f"expiring {ttl!r} {expires_at!r}"}}
    if ttl is not None:
        args["ttl"] = ttl
    if expires_at is not None:
        args["expires_at"] = expires_at
    out = session.call("store", args)
    if not out["ok"]:
        assert out["error_code"] in {"invalid_input", "rejected"} and out["error"], out
