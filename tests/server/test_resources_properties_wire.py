"""Resource URIs, prompt names and arguments, completion refs as agents might send them, on the wire.

Hypothesis-generated params for resources/read, resources/list, prompts/get and
completion/complete are sent as raw JSON-RPC to real server processes over stdio and over
streamable HTTP behind an ACL: every request is answered with its id, and no answer is an
internal error (-32603).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp_helpers import http_server
from raw_wire import RawHttp, stdio_caller

from cpersona.acl import Level, add_client
from cpersona.server.prompts import PROMPTS
from cpersona.services.resources import TEMPLATES, resource_uri

pytestmark = pytest.mark.slow

_ids = itertools.count(5000)
#: Invalid request, invalid params, and -32002: a resource not found on the revisions before 2026-07-28
#: these raw clients speak (docs/resources.md).
REFUSALS = {-32600, -32602, -32002}
Caller = Callable[[dict[str, Any]], dict[str, Any]]

AGENTS = ["a", "b", "a/b", "", "ünï"]
junk = st.one_of(
    st.none(), st.integers(), st.booleans(), st.lists(st.integers(), max_size=2), st.text(max_size=20)
)
agent_ids = st.one_of(st.sampled_from(AGENTS), st.text(max_size=40))
uris = st.one_of(
    st.builds(resource_uri, st.sampled_from(["profile", "memories"]), agent_ids),
    st.just("cpersona://agents"),
    st.builds(lambda a, k: f"cpersona://agents/{a}/{k}", st.text(max_size=30), st.text(max_size=10)),
    st.builds(lambda h: f"cpersona://agents/%{h}/profile", st.text("0123456789abcdefABCDEFxz%", max_size=6)),
    st.text(max_size=60),
    junk,
)
argument_names = st.one_of(
    st.sampled_from(sorted({a.name for p in PROMPTS for a in p.arguments} | {"id"})), st.text(max_size=10)
)
prompt_names = st.one_of(st.sampled_from([p.name for p in PROMPTS]), st.text(max_size=20), junk)
prompt_arguments = st.one_of(
    st.dictionaries(argument_names, st.one_of(agent_ids, st.text(max_size=300), junk), max_size=4), junk
)
refs = st.one_of(
    st.fixed_dictionaries({"type": st.just("ref/prompt"), "name": prompt_names}),
    st.fixed_dictionaries(
        {
            "type": st.just("ref/resource"),
            "uri": st.one_of(st.sampled_from([t.uri_template for t in TEMPLATES]), uris),
        }
    ),
    st.dictionaries(st.text(max_size=5), junk, max_size=2),
)
requests = st.one_of(
    st.fixed_dictionaries(
        {"method": st.just("resources/read"), "params": st.fixed_dictionaries({"uri": uris})}
    ),
    st.fixed_dictionaries(
        {
            "method": st.just("resources/list"),
            "params": st.fixed_dictionaries({"cursor": st.one_of(junk, st.just("2"))}),
        }
    ),
    st.fixed_dictionaries(
        {
            "method": st.just("prompts/get"),
            "params": st.fixed_dictionaries({"name": prompt_names, "arguments": prompt_arguments}),
        }
    ),
    st.fixed_dictionaries(
        {
            "method": st.just("completion/complete"),
            "params": st.fixed_dictionaries(
                {
                    "ref": refs,
                    "argument": st.fixed_dictionaries(
                        {"name": argument_names, "value": st.one_of(agent_ids, junk)}
                    ),
                },
                optional={"context": st.fixed_dictionaries({"arguments": prompt_arguments})},
            ),
        }
    ),
    st.fixed_dictionaries(
        {"method": st.sampled_from(["resources/read", "prompts/get", "completion/complete"]), "params": junk}
    ),
)


def seed_store(call: Caller) -> None:
    for agent in AGENTS:
        message = {"agent_id": agent, "message": {"content": f"seed for {agent!r}"}}
        call(
            {
                "jsonrpc": "2.0",
                "id": next(_ids),
                "method": "tools/call",
                "params": {"name": "store", "arguments": message},
            }
        )


@pytest.fixture(scope="module")
def over_stdio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Caller]:
    with stdio_caller(tmp_path_factory.mktemp("res-wire-stdio")) as raw:
        seed_store(raw.call)
        yield raw.call


@pytest.fixture(scope="module")
def over_http_acl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Caller]:
    tmp = tmp_path_factory.mktemp("res-wire-http")
    acl = tmp / "acl.toml"
    admin = add_client(acl, "admin", {"*": Level.ADMIN})
    reader = add_client(acl, "reader", {"a": Level.READ, "a/b": Level.WRITE})
    with http_server(tmp, CPERSONA_ACL_FILE=str(acl)) as (url, _proc):
        seeding = RawHttp(url, admin)
        seeding.handshake()
        seed_store(lambda m: RawHttp.reply(seeding.post(json.dumps(m).encode())))
        raw = RawHttp(url, reader)
        raw.handshake()
        yield lambda m: RawHttp.reply(raw.post(json.dumps(m).encode()))
    log = (tmp / "server.log").read_text(errors="replace")
    assert "Traceback" not in log, log[-3000:]


def answered_cleanly(call: Caller, request: dict[str, Any]) -> None:
    request_id = next(_ids)
    reply = call({"jsonrpc": "2.0", "id": request_id, **request})
    assert reply.get("id") == request_id, (request, reply)
    if "error" in reply:  # a refusal of the request, never an internal error (the SDK's is -32603 or 0)
        assert reply["error"]["code"] in REFUSALS, (request, reply)
    else:
        assert isinstance(reply["result"], dict), (request, reply)


WIRE_SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@WIRE_SETTINGS
@given(request=requests)
def test_agent_sent_requests_over_stdio(over_stdio: Caller, request: dict[str, Any]) -> None:
    answered_cleanly(over_stdio, request)


@WIRE_SETTINGS
@given(request=requests)
def test_agent_sent_requests_over_http_acl(over_http_acl: Caller, request: dict[str, Any]) -> None:
    answered_cleanly(over_http_acl, request)


def test_a_read_of_an_ungranted_agent_over_http_is_forbidden(over_http_acl: Caller) -> None:
    request_id = next(_ids)
    reply = over_http_acl(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "resources/read",
            "params": {"uri": resource_uri("memories", "b")},
        }
    )
    assert reply["error"]["code"] == -32602
    assert reply["error"]["data"] == {"error_code": "forbidden", "uri": resource_uri("memories", "b")}
