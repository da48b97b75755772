"""A real MCP client over stdio against the installed ``cpersona serve`` (keyword-only mode)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError
from mcp_helpers import ALL_TOOL_NAMES, McpSession, mcp_session, server_env, stdio_target, unique
from pg_cluster import ENGINES, PG_VECTOR_INDEX, PgCluster
from strict_schema import strict_problems

from cpersona.server.tools import tool_names

pytestmark = pytest.mark.slow

next_agent = unique("stdio")


@pytest.fixture(scope="module", params=ENGINES)
def stdio_session(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[McpSession]:
    """One keyword-only stdio server per engine for the module (overrides conftest's SQLite-only one)."""
    tmp = tmp_path_factory.mktemp("stdio")
    extra: dict[str, str] = {}
    cluster: PgCluster | None = None
    if request.param == "postgres":
        cluster = request.getfixturevalue("pg_cluster")
        extra = {"CPERSONA_DB_URL": cluster.create(), "CPERSONA_PG_VECTOR_INDEX": PG_VECTOR_INDEX}
    with mcp_session(stdio_target(server_env(tmp, **extra))) as session:
        yield session
    if cluster is not None:
        cluster.drop(extra["CPERSONA_DB_URL"])


def test_two_server_processes_on_one_postgresql_see_each_others_writes(
    tmp_path: Path, pg_cluster: PgCluster
) -> None:
    url = pg_cluster.create()
    env = {"CPERSONA_DB_URL": url, "CPERSONA_PG_VECTOR_INDEX": PG_VECTOR_INDEX}
    with (
        mcp_session(stdio_target(server_env(tmp_path / "one", **env))) as one,
        mcp_session(stdio_target(server_env(tmp_path / "two", **env))) as two,
    ):
        first = store(one, "shared", "the on-call rota moves to Tuesdays")
        seen = two.call("recall", {"agent_id": "shared", "query": "on-call rota"})["results"]
        assert [r["id"] for r in seen] == [first["id"]]
        second = store(two, "shared", "the on-call phone lives in the top drawer")
        seen = one.call("recall", {"agent_id": "shared", "query": "on-call phone drawer"})["results"]
        assert seen[-1]["id"] == second["id"]
        assert (
            one.call(
                "store", {"agent_id": "shared", "message": {"content": "the on-call rota moves to Tuesdays"}}
            )["result"]
            == "skipped"
        )
    pg_cluster.drop(url)


def store(session: McpSession, agent: str, content: str, **extra: Any) -> dict[str, Any]:
    message = {"content": content}
    if "msg_id" in extra:
        message["id"] = extra.pop("msg_id")
    response = session.call("store", {"agent_id": agent, "message": message, **extra})
    assert response["ok"] is True, response
    return response


def contents(rows: list[dict[str, Any]]) -> list[str]:
    return [row["content"] for row in rows]


def test_initialize_and_tools_list(stdio_session: McpSession) -> None:
    client = stdio_session.client
    assert client.server_info is not None and client.server_info.name == "cpersona"
    assert "recall" in (client.instructions or "")
    tools = {tool.name: tool for tool in stdio_session.list_tools().tools}
    assert sorted(tools) == sorted(tool_names()) == sorted(ALL_TOOL_NAMES)
    assert len(tools) == len(ALL_TOOL_NAMES)
    for tool in tools.values():
        schema = tool.input_schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False, tool.name
        # What a strict client (Ajv strict, the inspector) would refuse, on the wire as listed.
        assert strict_problems(schema) == [], tool.name
        assert tool.output_schema is not None and tool.output_schema["type"] == "object", tool.name
        assert strict_problems(tool.output_schema) == [], tool.name
        assert tool.description and len(tool.description) > 40, tool.name
        hints = tool.annotations
        assert hints is not None, tool.name
        for hint in (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint):
            assert isinstance(hint, bool), tool.name
        # Only check_update reaches outside the database (the package index).
        assert hints.open_world_hint is (tool.name == "check_update"), tool.name
    limit = tools["recall"].input_schema["properties"]["limit"]
    assert (limit["type"], limit["minimum"], limit["maximum"]) == ("integer", 0, 100)
    assert "LAST" in tools["recall"].description
    assert tools["get_contents"].input_schema["properties"]["refs"]["maxItems"] == 20
    assert tools["get_profile"].annotations.read_only_hint is True
    assert tools["delete_memory"].annotations.destructive_hint is True
    assert tools["store"].annotations.read_only_hint is False
    # Recall keeps statistics (bookkeeping), not user data: hosts may auto-approve it (issue 19).
    for name in ("recall", "recall_with_context"):
        hints = tools[name].annotations
        assert hints.read_only_hint is True and hints.destructive_hint is False, name
    assert set(tools["store"].input_schema["properties"]["message"]["properties"]) == {
        "id",
        "content",
        "source",
        "timestamp",
        "metadata",
    }


def test_a_configured_preview_size_is_what_descriptions_instructions_and_previews_say(tmp_path: Path) -> None:
    with mcp_session(stdio_target(server_env(tmp_path, CPERSONA_RECALL_PREVIEW_CHARS="321"))) as session:
        assert "321-character" in (session.client.instructions or "")
        assert "500" not in (session.client.instructions or "")
        tools = {tool.name: tool for tool in session.list_tools().tools}
        recall_text = tools["recall"].description + str(tools["recall"].input_schema)
        assert "321 characters" in recall_text and "321-character previews" in recall_text
        assert "500" not in recall_text
        stored = store(session, "preview-size", "kestrel " * 100)
        row = session.call("recall", {"agent_id": "preview-size", "query": "kestrel"})["results"][-1]
        assert row["id"] == stored["id"] and row["content_truncated"] is True and len(row["content"]) == 321


def test_store_then_recall(stdio_session: McpSession) -> None:
    agent = next_agent()
    stored = store(
        stdio_session, agent, "The deploy key for staging lives in vault path secret/staging/deploy"
    )
    assert stored["result"] == "stored" and stored["embedded"] is False
    assert stored["ref"] == f"mem:{stored['id']}"
    recalled = stdio_session.call("recall", {"agent_id": agent, "query": "deploy key staging"})
    assert recalled["ok"] is True
    assert recalled["results"], recalled
    assert recalled["results"][-1]["id"] == stored["id"]


def test_last_result_is_the_best_match(stdio_session: McpSession) -> None:
    agent = next_agent()
    store(stdio_session, agent, "We painted the kitchen wall a pale colour last spring.")
    store(stdio_session, agent, "Migration of the billing database finished on Tuesday.")
    best = store(stdio_session, agent, "Zebra migration across the Serengeti follows the seasonal rains.")
    store(stdio_session, agent, "The zebra crossing near the office was repainted.")
    store(stdio_session, agent, "Seasonal flu shots are available at the clinic.")
    recalled = stdio_session.call(
        "recall", {"agent_id": agent, "query": "zebra migration Serengeti seasonal rains", "limit": 10}
    )
    assert recalled["ok"] is True and len(recalled["results"]) >= 2, recalled
    assert recalled["results"][-1]["id"] == best["id"], contents(recalled["results"])


def test_dedup_on_msg_id_and_content_without_upsert(stdio_session: McpSession) -> None:
    agent = next_agent()
    first = store(stdio_session, agent, "Ana prefers tea over coffee.", msg_id="m-1")
    same_content = store(stdio_session, agent, "Ana prefers tea over coffee.")
    assert same_content["result"] == "skipped" and same_content["id"] == first["id"]
    same_id_new_text = store(stdio_session, agent, "Ana now prefers coffee.", msg_id="m-1")
    assert same_id_new_text["result"] == "skipped" and same_id_new_text["id"] == first["id"]
    listed = stdio_session.call("list_memories", {"agent_id": agent})
    assert contents(listed["items"]) == ["Ana prefers tea over coffee."]  # no upsert happened


def test_agents_never_see_each_others_rows(stdio_session: McpSession) -> None:
    alice, bob = next_agent(), next_agent()
    secret = store(stdio_session, alice, "Alice's secret: the launch code is tangerine-42.")
    episode = stdio_session.call(
        "archive_episode", {"agent_id": alice, "summary": "Alice planned the tangerine launch."}
    )
    assert episode["ok"] is True, episode
    store(stdio_session, bob, "Bob likes tangerine juice.")

    recalled = stdio_session.call("recall", {"agent_id": bob, "query": "tangerine launch code", "limit": 100})
    assert all(row.get("agent_id", bob) == bob for row in recalled["results"])
    assert secret["id"] not in [row.get("id") for row in recalled["results"] if row.get("type") == "memory"]

    listed = stdio_session.call("list_memories", {"agent_id": bob})
    assert [row["agent_id"] for row in listed["items"]] == [bob]
    episodes = stdio_session.call("list_episodes", {"agent_id": bob})
    assert episodes["items"] == []

    fetched = stdio_session.call("get_contents", {"agent_id": bob, "refs": [secret["ref"], episode["ref"]]})
    assert fetched["items"] == [] and sorted(fetched["missing"]) == sorted([secret["ref"], episode["ref"]])

    for tool, args in [
        ("update_memory", {"memory_id": secret["id"], "content": "hijacked", "agent_id": bob}),
        ("lock_memory", {"memory_id": secret["id"], "agent_id": bob}),
        ("delete_memory", {"memory_id": secret["ref"], "agent_id": bob}),
        ("delete_episode", {"episode_id": episode["id"], "agent_id": bob}),
    ]:
        refused = stdio_session.call(tool, args)
        assert refused["ok"] is False and refused["error"], (tool, refused)

    still = stdio_session.call("get_contents", {"agent_id": alice, "refs": [secret["ref"], episode["ref"]]})
    assert contents(still["items"]) == [
        "Alice's secret: the launch code is tangerine-42.",
        "Alice planned the tangerine launch.",
    ]
    assert still["items"][0]["locked"] is False
    wiped = stdio_session.call("delete_agent_data", {"agent_id": bob})
    assert wiped["ok"] is True
    assert len(stdio_session.call("list_memories", {"agent_id": alice})["items"]) == 1


def test_project_scope(stdio_session: McpSession) -> None:
    agent = next_agent()
    store(stdio_session, agent, "project note: the X pipeline uses kafka", project_id="X")
    store(stdio_session, agent, "project note: the Y pipeline uses rabbitmq", project_id="Y")
    store(stdio_session, agent, "project note: global conventions use black")

    def seen(**scope: Any) -> set[str]:
        result = stdio_session.call(
            "recall", {"agent_id": agent, "query": "project note", "limit": 50, **scope}
        )
        return {
            row["content"].split(": ")[1].split()[1]
            for row in result["results"]
            if row.get("type") == "memory"
        }

    assert seen(project_id="X") == {"X", "conventions"}
    assert seen(project_id="Y") == {"Y", "conventions"}
    assert seen(project_id="") == {"conventions"}
    assert seen() == {"X", "Y", "conventions"}
    listed = stdio_session.call("list_memories", {"agent_id": agent, "project_id": "X"})
    assert sorted(row["project_id"] for row in listed["items"]) == ["", "X"]


def test_channel_scope(stdio_session: McpSession) -> None:
    agent = next_agent()
    store(stdio_session, agent, "channel memo alpha about releases", channel="alpha")
    store(stdio_session, agent, "channel memo beta about releases", channel="beta")
    store(stdio_session, agent, "channel memo none about releases")

    def seen(**scope: Any) -> set[str]:
        result = stdio_session.call(
            "recall", {"agent_id": agent, "query": "channel memo", "limit": 50, **scope}
        )
        return {row["content"].split()[2] for row in result["results"] if row.get("type") == "memory"}

    assert seen(channel="alpha") == {"alpha", "none"}
    assert seen(channel="beta") == {"beta", "none"}
    assert seen(channel="") == {"alpha", "beta", "none"}
    assert seen() == {"alpha", "beta", "none"}


def test_preview_and_get_contents_round_trip(stdio_session: McpSession) -> None:
    agent = next_agent()
    body = "Incident report kestrel. " + "".join(f"line {i:04d} of the long report; " for i in range(80))
    body = body[:2000]
    assert len(body) == 2000
    stored = store(stdio_session, agent, body)
    recalled = stdio_session.call("recall", {"agent_id": agent, "query": "incident report kestrel"})
    row = recalled["results"][-1]
    assert row["id"] == stored["id"]
    assert row["content_truncated"] is True and row["content_len"] == 2000
    assert row["content"] == body[:500] and row["ref"] == stored["ref"]

    full = stdio_session.call("get_contents", {"agent_id": agent, "refs": [row["ref"]]})
    assert full["ok"] is True and full["missing"] == [] and full["deferred"] == []
    assert full["items"][0]["content"] == body

    whole = stdio_session.call(
        "recall", {"agent_id": agent, "query": "incident report kestrel", "full_content": True}
    )
    assert whole["results"][-1]["content"] == body
    assert "content_truncated" not in whole["results"][-1]
    assert whole["full_content_budget_chars"] == 200_000


def test_get_contents_batch_budget_defers(stdio_session: McpSession) -> None:
    agent = next_agent()
    refs = [store(stdio_session, agent, f"{i} " + "budget filler text " * 790)["ref"] for i in range(3)]
    fetched = stdio_session.call("get_contents", {"agent_id": agent, "refs": refs})
    assert [item["ref"] for item in fetched["items"]] == refs[:2]
    assert fetched["deferred"] == refs[2:]
    again = stdio_session.call("get_contents", {"agent_id": agent, "refs": fetched["deferred"]})
    assert [item["ref"] for item in again["items"]] == refs[2:]
    too_many = stdio_session.call(
        "get_contents", {"agent_id": agent, "refs": [f"mem:{i}" for i in range(1, 22)]}
    )
    assert too_many["ok"] is False and "refs" in too_many["error"]


def test_locked_rows_refuse_edit_and_delete(stdio_session: McpSession) -> None:
    agent = next_agent()
    stored = store(stdio_session, agent, "Lock me: the wifi password is hunter2.")
    assert stdio_session.call("lock_memory", {"memory_id": stored["ref"], "agent_id": agent})["ok"] is True
    for tool, args in [
        ("update_memory", {"memory_id": stored["id"], "content": "changed", "agent_id": agent}),
        ("delete_memory", {"memory_id": stored["id"], "agent_id": agent}),
    ]:
        refused = stdio_session.call(tool, args)
        assert refused["ok"] is False and refused["error_code"] == "locked", refused
    assert stdio_session.call("unlock_memory", {"memory_id": stored["id"], "agent_id": agent})["ok"] is True
    updated = stdio_session.call(
        "update_memory", {"memory_id": stored["id"], "content": "changed", "agent_id": agent}
    )
    assert updated["ok"] is True, updated
    assert stdio_session.call("delete_memory", {"memory_id": stored["id"], "agent_id": agent})["ok"] is True
    assert stdio_session.call("list_memories", {"agent_id": agent})["items"] == []


def test_profile_round_trip(stdio_session: McpSession) -> None:
    agent = next_agent()
    assert stdio_session.call("get_profile", {"agent_id": agent})["profile"] is None
    updated = stdio_session.call("update_profile", {"agent_id": agent, "profile": "x" * 2500})
    assert updated["ok"] is True and updated["truncated"] is True
    assert len(stdio_session.call("get_profile", {"agent_id": agent})["profile"]) == 2000
    queue = stdio_session.call("get_queue_status")
    assert queue["ok"] is True and "depth" in queue


def test_unknown_tool_and_bad_arguments_keep_the_server_answering(stdio_session: McpSession) -> None:
    with pytest.raises(MCPError) as unknown:  # a protocol error on every revision (test_protocol_errors.py)
        stdio_session.call("no_such_tool", {"x": 1})
    assert unknown.value.error.code == -32602 and "no_such_tool" in unknown.value.error.message
    cases = [
        ("recall", {"agent_id": "a", "limit": "ten"}, "limit"),
        ("recall", {"agent_id": "a", "limit": 101}, "limit"),
        ("recall", {"agent_id": 7}, "agent_id"),
        ("recall", {"agent_id": "a", "surprise": True}, "surprise"),
        ("store", {"agent_id": "a", "message": "just text"}, "message"),
        ("store", {"agent_id": "a", "message": {"content": 5}}, "message.content"),
        ("delete_memory", {"memory_id": "seven"}, "memory_id"),
        ("delete_memory", {"memory_id": 1.5}, "memory_id"),
        ("get_contents", {"agent_id": "a", "refs": "mem:1"}, "refs"),
        ("update_memory", {"content": "x"}, "memory_id"),
    ]
    for tool, args, argument in cases:
        response = stdio_session.call(tool, args)
        assert response["ok"] is False, (tool, args, response)
        assert argument in response["error"], (tool, args, response)
    rejected = stdio_session.call("store", {"agent_id": "a", "message": {"content": "   "}})
    assert (
        rejected["ok"] is False
        and rejected["result"] == "rejected"
        and rejected["error"] == rejected["reason"]
    )
    assert stdio_session.call("get_queue_status")["ok"] is True
