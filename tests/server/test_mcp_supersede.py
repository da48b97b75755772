"""Supersede with history through real MCP clients (issue 22 point 2).

"Decide, then change the decision" end to end over stdio on both engines (store, supersede,
recall shows the new fact, get_history shows both, export → import into a fresh database keeps
the chain); tools/list documents every new argument; bad supersedes / get_history input is
``ok: false`` with an error code, over stdio and HTTP, and a hypothesis property over random
values never gets an internal error.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp_helpers import McpSession, mcp_session, server_env, stdio_target, transport_session
from pg_cluster import ENGINES, PG_VECTOR_INDEX, PgCluster

pytestmark = pytest.mark.slow

REFUSALS = {"invalid_input", "not_found", "locked", "supersede_refused"}


def _db(request: pytest.FixtureRequest, engine: str, made: list[str]) -> dict[str, str]:
    if engine != "postgres":
        return {}
    cluster: PgCluster = request.getfixturevalue("pg_cluster")
    made.append(cluster.create())
    return {"CPERSONA_DB_URL": made[-1], "CPERSONA_PG_VECTOR_INDEX": PG_VECTOR_INDEX}


@pytest.mark.parametrize("engine", ENGINES)
def test_decide_then_change_the_decision(engine: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    exports = tmp_path / "exports"
    made: list[str] = []
    try:
        env = server_env(tmp_path / "a", CPERSONA_EXPORT_DIR=str(exports), **_db(request, engine, made))
        with mcp_session(stdio_target(env)) as a:
            decided = a.call(
                "store",
                {"agent_id": "team", "message": {"content": "Decision: the shop runs on PostgreSQL."}},
            )
            changed = a.call(
                "store",
                {
                    "agent_id": "team",
                    "message": {
                        "content": "Decision changed: the shop runs on SQLite, PostgreSQL is dropped."
                    },
                    "supersedes": [decided["ref"]],
                },
            )
            assert changed["ok"] and changed["supersedes"] == [decided["ref"]]
            now = a.call("recall", {"agent_id": "team", "query": "which database does the shop run on"})
            assert [r["ref"] for r in now["results"]] == [changed["ref"]]
            both = a.call(
                "recall",
                {
                    "agent_id": "team",
                    "query": "which database does the shop run on",
                    "include_superseded": True,
                },
            )
            marks = {r["ref"]: r.get("superseded_by") for r in both["results"]}
            assert marks == {decided["ref"]: changed["ref"], changed["ref"]: None}
            ctx = a.call(
                "recall_with_context",
                {
                    "agent_id": "team",
                    "query": "shop database",
                    "external_context": [],
                    "include_superseded": True,
                },
            )
            assert {i["ref"] for i in ctx["items"]} == {decided["ref"], changed["ref"]}
            history = a.call("get_history", {"memory_id": decided["ref"], "agent_id": "team"})
            assert history["current"] == changed["ref"]
            assert [h["ref"] for h in history["history"]] == [decided["ref"], changed["ref"]]
            assert history["history"][0]["superseded_by"] == changed["ref"]
            out = a.call("export_memories", {"agent_id": "team", "output_path": "team.jsonl"})
            assert out["counts"]["supersede_links"] == 1

        env = server_env(tmp_path / "b", CPERSONA_EXPORT_DIR=str(exports), **_db(request, engine, made))
        with mcp_session(stdio_target(env)) as b:
            for n in range(3):  # ids in the fresh database differ from the exported ones
                b.call("store", {"agent_id": "other", "message": {"content": f"filler {n}"}})
            imported = b.call("import_memories", {"input_path": "team.jsonl"})
            assert imported["counts"]["supersede_links"] == {"read": 1, "linked": 1, "skipped": 0}
            now = b.call("recall", {"agent_id": "team", "query": "which database does the shop run on"})
            assert [r["content"] for r in now["results"]] == [
                "Decision changed: the shop runs on SQLite, PostgreSQL is dropped."
            ]
            head = now["results"][0]["ref"]
            history = b.call("get_history", {"memory_id": head, "agent_id": "team"})
            assert [h["content"] for h in history["history"]] == [
                "Decision: the shop runs on PostgreSQL.",
                "Decision changed: the shop runs on SQLite, PostgreSQL is dropped.",
            ]
            assert history["history"][0]["superseded_by"] == head and history["current"] == head
    finally:
        if made:
            cluster: PgCluster = request.getfixturevalue("pg_cluster")
            for url in made:
                cluster.drop(url)


@pytest.fixture(scope="module", params=["stdio", "http"])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpSession]:
    with transport_session(request.param, tmp_path_factory.mktemp(f"supersede-{request.param}")) as session:
        yield session


def test_tools_list_documents_the_new_arguments(served: McpSession) -> None:
    tools = {t.name: t for t in served.list_tools().tools}
    for name in ("store", "update_memory"):
        prop = tools[name].input_schema["properties"]["supersedes"]
        assert prop["type"] == "array" and prop["description"] and prop["items"]["anyOf"]
    assert tools["update_memory"].input_schema["required"] == ["memory_id"]
    for name in ("recall", "recall_with_context"):
        assert tools[name].input_schema["properties"]["include_superseded"]["type"] == "boolean"
    history = tools["get_history"]
    assert history.input_schema["required"] == ["memory_id"] and history.description
    assert history.annotations is not None and history.annotations.read_only_hint is True
    assert history.output_schema is not None


def _seed(session: McpSession, text: str, **extra: Any) -> str:
    out = session.call("store", {"agent_id": "t", "message": {"content": text}, **extra})
    assert out["ok"], out
    return str(out["ref"])


def test_refusals_over_the_wire_write_nothing(served: McpSession) -> None:
    old = _seed(served, "wire fact one")
    locked = _seed(served, "wire fact locked")
    assert served.call("lock_memory", {"memory_id": locked})["ok"]
    other = served.call("store", {"agent_id": "u", "message": {"content": "another agent's fact"}})["ref"]
    before = served.call("list_memories", {"agent_id": "t"})["total"]
    cases: list[tuple[Any, str]] = [
        (["mem:999999"], "not_found"),
        ([other], "not_found"),
        ([locked], "locked"),
        (["ep:1"], "invalid_input"),
        ("mem:1", "invalid_input"),
        ([0], "invalid_input"),
        ([True], "invalid_input"),
        ([None], "invalid_input"),
        ([old] * 101, "invalid_input"),
    ]
    for value, code in cases:
        out = served.call(
            "store", {"agent_id": "t", "message": {"content": "wire fact two"}, "supersedes": value}
        )
        assert out["ok"] is False and out["error_code"] == code and out["error"], (value, out)
    assert served.call("list_memories", {"agent_id": "t"})["total"] == before
    selfref = served.call("update_memory", {"memory_id": old, "supersedes": [old]})
    assert selfref["ok"] is False and selfref["error_code"] == "supersede_refused"
    empty = served.call("update_memory", {"memory_id": old})
    assert empty["ok"] is False and empty["error_code"] == "invalid_input"
    for memory_id in ("mem:999999", other):
        missing = served.call("get_history", {"memory_id": memory_id, "agent_id": "t"})
        assert missing["ok"] is False and missing["error_code"] == "not_found"
    bad = served.call("recall", {"agent_id": "t", "query": "wire", "include_superseded": "yes"})
    assert bad["ok"] is False and bad["error_code"] == "invalid_input"


def test_a_chain_of_1100_over_the_wire_refuses_its_cycle_and_names_its_head(served: McpSession) -> None:
    # Issue 36 point 1: past 1,000 rows the head was misnamed and the closing link was accepted.
    first = served.call("store", {"agent_id": "long", "message": {"content": "chain version 0"}})
    chain = [first["ref"]]
    for n in range(1, 1100):
        out = served.call(
            "store",
            {"agent_id": "long", "message": {"content": f"chain version {n}"}, "supersedes": [chain[-1]]},
        )
        assert out["ok"], out
        chain.append(out["ref"])
    history = served.call("get_history", {"memory_id": chain[0], "agent_id": "long"})
    assert history["ok"] and history["current"] == chain[-1] and history["truncated"] is True, history[
        "current"
    ]
    assert history["history"][0]["ref"] == chain[0] and history["cut_at"] == [chain[998], chain[-1]]
    cycle = served.call(
        "update_memory", {"memory_id": chain[0], "agent_id": "long", "supersedes": [chain[-1]]}
    )
    assert cycle["ok"] is False and cycle["error_code"] == "supersede_refused", cycle
    now = served.call("recall", {"agent_id": "long", "query": "chain version"})
    assert [r["ref"] for r in now["results"]] == [chain[-1]]


refs = st.one_of(
    st.integers(min_value=-5, max_value=2**63),
    st.sampled_from(
        ["mem:1", "mem:2", "mem:0", "ep:1", "mem:", "mem:01", "1", "", "mem:99999999999999999999"]
    ),
    st.text(max_size=12),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False),
)
supersedes_values = st.one_of(
    st.lists(refs, max_size=4), refs, st.dictionaries(st.text(max_size=3), refs, max_size=2)
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    tool=st.sampled_from(["store", "update_memory", "get_history", "recall"]),
    value=supersedes_values,
    flag=st.one_of(st.booleans(), st.none(), st.text(max_size=3), st.integers()),
)
def test_any_supersede_input_is_answered_without_an_internal_error(
    served: McpSession, tool: str, value: Any, flag: Any
) -> None:
    if tool == "store":
        args: dict[str, Any] = {"agent_id": "p", "message": {"content": "property fact"}, "supersedes": value}
    elif tool == "update_memory":
        args = {"memory_id": "mem:1", "agent_id": "p", "supersedes": value}
    elif tool == "get_history":
        args = {"memory_id": value, "agent_id": "p"}
    else:
        args = {"agent_id": "p", "query": "property", "include_superseded": flag}
    out = served.call(tool, args)
    if not out["ok"]:
        assert out["error_code"] in REFUSALS and out["error"], out
