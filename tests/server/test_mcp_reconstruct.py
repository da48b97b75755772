"""reconstruct through real MCP clients (issue 22 points 4 and 5).

"Decide, then change the decision" plus a link, over stdio on both engines: one reconstruct call
returns the current fact, what it replaced and what links to it, within the budget. Bad input is
``ok: false`` with its code over stdio and HTTP, and a hypothesis property over random arguments
never gets an internal error. Over HTTP with an ACL, a client without a grant on agent b never
sees b's row through a link (a property over random links and clients).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.client.streamable_http import streamable_http_client
from mcp_helpers import McpSession, http_server, mcp_session, server_env, stdio_target, transport_session
from pg_cluster import ENGINES, PG_VECTOR_INDEX, PgCluster

from cpersona.acl import WILDCARD, Level, add_client

pytestmark = pytest.mark.slow


def _db(request: pytest.FixtureRequest, engine: str, made: list[str]) -> dict[str, str]:
    if engine != "postgres":
        return {}
    cluster: PgCluster = request.getfixturevalue("pg_cluster")
    made.append(cluster.create())
    return {"CPERSONA_DB_URL": made[-1], "CPERSONA_PG_VECTOR_INDEX": PG_VECTOR_INDEX}


def _store(session: McpSession, agent: str, text: str, **extra: Any) -> str:
    out = session.call("store", {"agent_id": agent, "message": {"content": text}, **extra})
    assert out["ok"] and out["result"] == "stored", out
    return str(out["ref"])


@pytest.mark.parametrize("engine", ENGINES)
def test_decide_change_and_link_come_back_in_one_pack(
    engine: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    made: list[str] = []
    try:
        with mcp_session(stdio_target(server_env(tmp_path, **_db(request, engine, made)))) as s:
            decided = _store(s, "team", "Decision: the shop runs on PostgreSQL.")
            changed = _store(
                s,
                "team",
                "Decision changed: the shop runs on SQLite, PostgreSQL is dropped.",
                supersedes=[decided],
            )
            meeting = _store(
                s,
                "team",
                "Meeting notes: hosting costs made us drop the server.",
                associations=[
                    {"relation": "decided", "to": changed},
                    {"relation": "about", "entity": "Shop"},
                ],
            )
            _store(s, "team", "Lunch order: two pizzas.")
            pack = s.call(
                "reconstruct",
                {"agent_id": "team", "query": "which database does the shop run on", "limit": 1},
            )
            assert pack["ok"], pack
            assert [(i["ref"], i["role"]) for i in pack["items"]] == [
                (meeting, "linked"),
                (decided, "replaced"),
                (changed, "match"),
            ]
            current = pack["items"][-1]
            assert current["text"] == "Decision changed: the shop runs on SQLite, PostgreSQL is dropped."
            assert pack["items"][1]["text"] == "Decision: the shop runs on PostgreSQL."
            assert pack["items"][1]["superseded_by"] == changed
            assert pack["items"][0]["link"] == {"from": meeting, "relation": "decided", "to": changed}
            assert pack["used_chars"] == sum(len(i["text"]) for i in pack["items"]) <= pack["budget_chars"]
            # The old decision named by ref: the row in force comes with it.
            old = s.call("reconstruct", {"agent_id": "team", "refs": [decided]})
            assert [(i["ref"], i["role"]) for i in old["items"]] == [(changed, "current"), (decided, "given")]
            # A budget that holds only the match: the rest is omitted, and get_contents has it.
            tight = s.call(
                "reconstruct",
                {
                    "agent_id": "team",
                    "query": "which database does the shop run on",
                    "limit": 1,
                    "budget_chars": 100,
                },
            )
            assert [i["ref"] for i in tight["items"]] == [changed] and tight["omitted"] == [decided, meeting]
            rest = s.call("get_contents", {"agent_id": "team", "refs": tight["omitted"]})
            assert [r["ref"] for r in rest["items"]] == [decided, meeting]
    finally:
        if made:
            cluster: PgCluster = request.getfixturevalue("pg_cluster")
            for url in made:
                cluster.drop(url)


@pytest.fixture(scope="module", params=["stdio", "http"])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpSession]:
    with transport_session(request.param, tmp_path_factory.mktemp(f"reconstruct-{request.param}")) as session:
        yield session


BAD: list[dict[str, Any]] = [
    {"agent_id": "t"},
    {"agent_id": "t", "query": "  "},
    {"agent_id": "t", "query": "x", "refs": ["mem:abc"]},
    {"agent_id": "t", "query": "x", "refs": "mem:1"},
    {"agent_id": "t", "query": "x", "refs": ["mem:1"] * 21},
    {"agent_id": "t", "query": "x", "budget_chars": 99},
    {"agent_id": "t", "query": "x", "budget_chars": 40_001},
    {"agent_id": "t", "query": "x", "budget_chars": "big"},
    {"agent_id": "t", "query": "x", "limit": 0},
    {"agent_id": "t", "query": "x", "time_cue": {"phrase": "whenever"}},
    {"agent_id": "t", "query": "x", "time_cue": {"start": "2024-05", "end": "2023-01"}},
    {"agent_id": "t", "query": "x", "surprise": 1},
    {"query": "x"},
]


def test_tools_list_and_bad_input(served: McpSession) -> None:
    tool = next(t for t in served.list_tools().tools if t.name == "reconstruct")
    props = tool.input_schema["properties"]
    assert {"agent_id", "query", "refs", "budget_chars", "limit", "time_cue"} <= set(props)
    assert tool.annotations is not None and tool.annotations.read_only_hint is True
    for arguments in BAD:
        answer = served.call("reconstruct", arguments)
        assert answer["ok"] is False and answer["error_code"] == "invalid_input" and answer["error"], (
            arguments,
            answer,
        )
    missing = served.call("reconstruct", {"agent_id": "t", "refs": ["mem:999999"]})
    assert missing["ok"] and missing["items"] == [] and missing["missing"] == ["mem:999999"]


_texts = itertools.count()
ref_values = st.one_of(
    st.sampled_from(["mem:1", "mem:2", "mem:3", "ep:1", "mem:0", "mem:", "x", "mem:99999999999999999999"]),
    st.text(max_size=8),
    st.integers(-3, 2**63),
    st.none(),
)
arguments = st.fixed_dictionaries(
    {"agent_id": st.sampled_from(["t", "u", ""])},
    optional={
        "query": st.one_of(st.text(max_size=30), st.integers(), st.none()),
        "refs": st.one_of(st.lists(ref_values, max_size=4), ref_values),
        "budget_chars": st.one_of(st.integers(-5, 50_000), st.floats(allow_nan=False), st.booleans()),
        "limit": st.one_of(st.integers(-2, 25), st.text(max_size=2)),
        "time_cue": st.one_of(
            st.fixed_dictionaries(
                {},
                optional={
                    "phrase": st.sampled_from(["last week", "yesterday", "in May 2023", "?"]),
                    "certainty": st.sampled_from(["sure", "likely", "vague", "maybe"]),
                },
            ),
            st.text(max_size=4),
            st.none(),
        ),
    },
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(args=arguments)
def test_any_arguments_are_answered_without_an_internal_error(
    served: McpSession, args: dict[str, Any]
) -> None:
    if not served.call("list_memories", {"agent_id": "t", "limit": 1})["items"]:
        first = _store(served, "t", "seed fact about the garden shed")
        _store(served, "t", "the shed was painted green", associations=[{"relation": "about", "to": first}])
    answer = served.call("reconstruct", args)  # the helper validates every answer against outputSchema
    if answer["ok"]:
        assert answer["used_chars"] <= answer["budget_chars"]
    else:
        assert answer["error_code"] in {"invalid_input"}, (args, answer)


# -- the ACL over HTTP ---------------------------------------------------------------------------

#: Clients by the agents they may read (a is always readable: packs are asked for agent a).
CLIENTS = {"a": {"a": Level.READ}, "ab": {"a": Level.READ, "b": Level.READ}, "aw": {"a": Level.WRITE}}


def _transport(url: str, token: str) -> Any:
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=120)
    )
    return streamable_http_client(url, http_client=http)


@pytest.fixture(scope="module")
def acl_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, McpSession]]:
    tmp = tmp_path_factory.mktemp("reconstruct-acl")
    acl = tmp / "acl.toml"
    tokens = {"admin": add_client(acl, "admin", {WILDCARD: Level.ADMIN})}
    tokens |= {name: add_client(acl, f"c_{name}", grants) for name, grants in CLIENTS.items()}
    with http_server(tmp, CPERSONA_ACL_FILE=str(acl)) as (url, _proc), ExitStack() as stack:
        yield {
            name: stack.enter_context(mcp_session(_transport(url, token))) for name, token in tokens.items()
        }


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_link_never_shows_a_row_the_client_may_not_read(
    acl_server: dict[str, McpSession], data: st.DataObject
) -> None:
    admin = acl_server["admin"]
    for agent in ("a", "b"):
        assert admin.call("delete_agent_data", {"agent_id": agent})["ok"]
    owners = data.draw(st.lists(st.sampled_from("ab"), min_size=2, max_size=6))
    if "a" not in owners:
        owners[0] = "a"
    refs = [_store(admin, agent, f"harbour plan note {next(_texts)} owned by {agent}") for agent in owners]
    links = data.draw(
        st.lists(st.tuples(st.integers(0, len(refs) - 1), st.integers(0, len(refs) - 1)), max_size=8)
    )
    for source, target in links:
        if source != target:
            out = admin.call(
                "declare_associations",
                {
                    "agent_id": owners[source],
                    "from": refs[source],
                    "associations": [{"relation": "r", "to": refs[target]}],
                },
            )
            assert out["ok"], out
    name = data.draw(st.sampled_from(sorted(CLIENTS)))
    readable = set(CLIENTS[name])
    mine = [r for r, o in zip(refs, owners, strict=True) if o == "a"]
    pack = acl_server[name].call(
        "reconstruct", {"agent_id": "a", "query": "harbour plan note", "refs": mine[:3], "limit": 6}
    )
    assert pack["ok"], pack
    linked_b = {refs[t] for s, t in links if owners[s] == "a" and owners[t] == "b"} | {
        refs[s] for s, t in links if owners[t] == "a" and owners[s] == "b"
    }
    b_refs = {r for r, o in zip(refs, owners, strict=True) if o == "b"}
    if "b" not in readable:  # not quoted, not even named as omitted
        assert not b_refs & set(pack["omitted"]), (name, pack)
    for item in pack["items"]:
        assert item["agent_id"] in readable, (name, item)
        assert "owned by b" not in item["text"] or "b" in readable, (name, item)
    if "b" in readable:  # the grant is what makes the difference: with it, b's linked rows come
        shown = {i["ref"] for i in pack["items"]} | set(pack["omitted"])
        assert linked_b <= shown, (linked_b, pack)
    assert acl_server["a"].call("reconstruct", {"agent_id": "b", "query": "x"})["error_code"] == "forbidden"


def test_the_grant_on_b_is_what_lets_the_link_through(acl_server: dict[str, McpSession]) -> None:
    admin = acl_server["admin"]
    theirs = _store(admin, "b", "b's secret roadmap: launch in March")
    mine = _store(
        admin,
        "a",
        "our plan follows the partner roadmap",
        associations=[{"relation": "follows", "to": theirs}],
    )
    without = acl_server["a"].call("reconstruct", {"agent_id": "a", "refs": [mine]})
    assert [i["ref"] for i in without["items"]] == [mine] and without["omitted"] == []
    assert "secret roadmap" not in str(without)
    granted = acl_server["ab"].call("reconstruct", {"agent_id": "a", "refs": [mine]})
    assert [(i["ref"], i["role"], i["agent_id"]) for i in granted["items"]] == [
        (theirs, "linked", "b"),
        (mine, "given", "a"),
    ]
