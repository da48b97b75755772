"""Property: traverse never returns, and never walks through, a row the client may not read.

One real HTTP server with an ACL file holding a client for every combination of grants (none /
read / write) on three agents. Each example builds a random graph of memories and declared links
(memory to memory across agents, memory to entity) as an admin, then a random client walks it from
a random start: the answer must be exactly a breadth-first walk of the graph restricted to the
agents that client may read (so nothing behind an unreadable row is reached through it), each path
made of declared links between readable rows. A random client then declares a link, which must
succeed exactly when it holds write on the source's agent and read on the target's.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.client.streamable_http import streamable_http_client
from mcp_helpers import McpSession, http_server, mcp_session

from cpersona.acl import WILDCARD, Level, add_client

pytestmark = pytest.mark.slow

AGENTS = ("a", "b", "c")
ENTITIES = ("Phoenix", "Kestrel")
RELATIONS = ("r", "s")
#: A client per grant combination: its name spells the level on a, b, c (n = none, r = read, w = write).
LEVELS = {"n": None, "r": Level.READ, "w": Level.WRITE}
COMBOS = ["".join(c) for c in itertools.product(LEVELS, repeat=len(AGENTS))]


def _transport(url: str, token: str) -> Any:
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=120)
    )
    return streamable_http_client(url, http_client=http)


def _grants(combo: str) -> dict[str, Level]:
    return {agent: LEVELS[c] for agent, c in zip(AGENTS, combo, strict=True) if LEVELS[c] is not None}  # type: ignore[misc]


@dataclass
class Server:
    url: str
    tokens: dict[str, str]
    stack: ExitStack
    sessions: dict[str, McpSession] = field(default_factory=dict)

    def session(self, name: str) -> McpSession:
        if name not in self.sessions:  # opened on first use, kept for the module
            self.sessions[name] = self.stack.enter_context(
                mcp_session(_transport(self.url, self.tokens[name]))
            )
        return self.sessions[name]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp: Path = tmp_path_factory.mktemp("links-acl")
    acl = tmp / "acl.toml"
    tokens = {"admin": add_client(acl, "admin", {WILDCARD: Level.ADMIN})}
    for combo in COMBOS:
        tokens[combo] = add_client(acl, f"c_{combo}", _grants(combo))
    with http_server(tmp, CPERSONA_ACL_FILE=str(acl)) as (url, _proc), ExitStack() as stack:
        yield Server(url, tokens, stack)


_contents = itertools.count()


@st.composite
def graphs(draw: st.DrawFn) -> tuple[list[str], list[tuple[int, str, int | str]]]:
    owners = draw(st.lists(st.sampled_from(AGENTS), min_size=2, max_size=8))
    n = len(owners)
    target = st.one_of(st.integers(0, n - 1), st.sampled_from(ENTITIES))
    links = draw(st.lists(st.tuples(st.integers(0, n - 1), st.sampled_from(RELATIONS), target), max_size=14))
    return owners, [(i, rel, t) for i, rel, t in links if t != i]


def _expected(
    owners: list[str],
    links: list[tuple[int, str, int | str]],
    readable: set[str],
    start: int,
    direction: str,
    relation: str | None,
    depth: int,
) -> dict[tuple[str, int | str], int]:
    """Breadth-first distances over the readable part of the graph (nodes: ('m', i) / ('e', agent:name))."""
    out: dict[tuple[str, Any], list[tuple[str, Any]]] = {}
    back: dict[tuple[str, Any], list[tuple[str, Any]]] = {}
    for i, rel, t in links:
        if relation is not None and rel != relation:
            continue
        target = ("m", t) if isinstance(t, int) else ("e", f"{owners[i]}:{t}")
        out.setdefault(("m", i), []).append(target)
        back.setdefault(target, []).append(("m", i))
    seen = {("m", start): 0}
    queue = deque([("m", start)])
    while queue:
        node = queue.popleft()
        if seen[node] == depth:
            continue
        nexts = (out.get(node, []) if direction in ("out", "both") else []) + (
            back.get(node, []) if direction in ("in", "both") else []
        )
        for other in nexts:
            if other[0] == "m" and owners[other[1]] not in readable:
                continue
            if other not in seen:
                seen[other] = seen[node] + 1
                queue.append(other)
    del seen[("m", start)]
    return seen


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(data=st.data())
def test_traverse_and_declare_follow_the_grants(server: Server, data: st.DataObject) -> None:
    admin = server.session("admin")
    for agent in AGENTS:
        assert admin.call("delete_agent_data", {"agent_id": agent})["ok"]
    owners, links = data.draw(graphs())
    ids: list[int] = []
    for agent in owners:
        stored = admin.call("store", {"agent_id": agent, "message": {"content": f"node {next(_contents)}"}})
        ids.append(stored["id"])
    for i, rel, t in links:
        to = {"to": ids[t]} if isinstance(t, int) else {"entity": t}
        declared = admin.call(
            "declare_associations",
            {"agent_id": owners[i], "from": ids[i], "associations": [{"relation": rel, **to}]},
        )
        assert declared["ok"], declared

    combo = data.draw(st.sampled_from(COMBOS))
    readable = {agent for agent, c in zip(AGENTS, combo, strict=True) if c != "n"}
    client = server.session(combo)
    start = data.draw(st.integers(0, len(ids) - 1))
    direction = data.draw(st.sampled_from(["both", "out", "in"]))
    relation = data.draw(st.sampled_from([None, *RELATIONS]))
    depth = data.draw(st.integers(1, 5))
    arguments: dict[str, Any] = {
        "agent_id": owners[start],
        "from": f"mem:{ids[start]}",
        "direction": direction,
    }
    arguments |= {"depth": depth, "limit": 100} | ({"relation": relation} if relation else {})
    answer = client.call("traverse", arguments)
    if owners[start] not in readable:
        assert answer["ok"] is False and answer["error_code"] == "forbidden", answer
    else:
        assert answer["ok"] is True, answer
        position = {rid: n for n, rid in enumerate(ids)}
        got: dict[tuple[str, int | str], int] = {}
        declared_steps = set()
        for i, rel, t in links:
            to = f"mem:{ids[t]}" if isinstance(t, int) else f"entity:{t}"
            declared_steps.add((f"mem:{ids[i]}", rel, to))
        for row in answer["results"]:
            assert row["agent_id"] in readable, row  # never returns an unreadable row
            key = (
                ("m", position[row["id"]])
                if row["type"] == "memory"
                else ("e", f"{row['agent_id']}:{row['entity']}")
            )
            got[key] = row["hop"]
            assert len(row["path"]) == row["hop"]
            for step in row["path"]:  # every step is a declared link between rows the client may read
                assert (step["from"], step["relation"], step["to"]) in declared_steps, step
                for ref in (step["from"], step["to"]):
                    if ref.startswith("mem:"):
                        assert owners[position[int(ref[4:])]] in readable, (step, combo)
        assert got == _expected(owners, links, readable, start, direction, relation, depth), (answer, combo)
        assert answer["truncated"] is False

    # declaring: write on the source's agent, read on the target's
    source, target = data.draw(st.integers(0, len(ids) - 1)), data.draw(st.integers(0, len(ids) - 1))
    if source == target:
        return
    probe = client.call(
        "declare_associations",
        {
            "agent_id": owners[source],
            "from": ids[source],
            "associations": [{"relation": "probe", "to": ids[target]}],
        },
    )
    level_on = dict(zip(AGENTS, combo, strict=True))
    if level_on[owners[source]] != "w":
        assert probe["ok"] is False and probe["error_code"] == "forbidden", probe
    elif level_on[owners[target]] == "n":
        assert probe["ok"] is False and probe["error_code"] == "not_found", probe
    else:
        assert probe["ok"] is True and probe["declared"] == 1, probe
    seen = admin.call(
        "traverse", {"agent_id": owners[source], "from": ids[source], "relation": "probe", "direction": "out"}
    )
    assert [r["id"] for r in seen["results"]] == ([ids[target]] if probe["ok"] else [])
