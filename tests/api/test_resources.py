"""MCP resources in the plain Python API: cpersona:// URIs, the read ACL, pages, completions (docs/resources.md)."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pg_cluster import BOTH_ENGINES

from cpersona.core.limits import MAX_IDENTIFIER_CHARS, RESOURCE_LIST_PAGE, RESOURCE_RECENT_MEMORIES
from cpersona.errors import Forbidden, InvalidInput, NotFound
from cpersona.memory import Memory
from cpersona.services.resources import AGENTS_URI, ROW_TEMPLATES, TEMPLATES, parse_uri, resource_uri


def body(memory: Memory, uri: str, allowed: set[str] | None = None) -> dict:
    read = memory.read_resource(uri, allowed_agents=allowed)
    assert read["uri"] == uri and read["mime_type"] == "application/json"
    return json.loads(read["text"])


@given(agent=st.text(max_size=MAX_IDENTIFIER_CHARS), kind=st.sampled_from(["profile", "memories"]))
@settings(max_examples=200)
def test_every_agent_id_has_one_uri_and_it_parses_back(agent: str, kind: str) -> None:
    uri = resource_uri(kind, agent)  # type: ignore[arg-type]
    assert uri.startswith("cpersona://agents/") and uri.count("/") == 4
    assert parse_uri(uri) == (kind, agent)


@pytest.mark.parametrize(
    "uri",
    [
        "",
        "cpersona://",
        "cpersona://agents/",
        "cpersona://agents/a",
        "cpersona://agents/a/secrets",
        "cpersona://agents/a/b/profile",  # a raw '/' in the id: only %2F names it
        "cpersona://agents/%FF/profile",  # not UTF-8
        "cpersona://agents/%61/profile",  # 'a' spelled non-canonically: one URI per resource
        "test://static-text",
        "cpersona://agents/" + "x" * (MAX_IDENTIFIER_CHARS + 1) + "/profile",
        "c" * 100_000,
    ],
)
@BOTH_ENGINES  # the resources read through storage (the keyset page is a query of its own)
def test_uris_naming_no_resource_are_invalid_input(memory: Memory, uri: str) -> None:
    with pytest.raises(InvalidInput):
        memory.read_resource(uri)


@BOTH_ENGINES  # the resources read through storage (the keyset page is a query of its own)
def test_non_string_uri_is_invalid_input(memory: Memory) -> None:
    with pytest.raises(InvalidInput):
        memory.read_resource(42)


@BOTH_ENGINES  # the resources read through storage (the keyset page is a query of its own)
def test_the_agents_list_profile_and_recent_memories(memory: Memory) -> None:
    for i in range(RESOURCE_RECENT_MEMORIES + 5):
        memory.store("ana", f"note number {i} about the kestrel migration")
    memory.store("bo/b", "bo's only memory", project_id="p1")
    memory.update_profile("ana", "Prefers short answers.")
    memory.update_profile("ana", "Works on kestrel.", project_id="p1")

    agents = body(memory, AGENTS_URI)
    assert [a["agent_id"] for a in agents["agents"]] == ["ana", "bo/b"] and agents["count"] == 2
    ana = agents["agents"][0]
    assert (ana["memories"], ana["profiles"]) == (RESOURCE_RECENT_MEMORIES + 5, 2)
    assert ana["profile_uri"] == "cpersona://agents/ana/profile"
    assert agents["agents"][1]["memories_uri"] == "cpersona://agents/bo%2Fb/memories"

    profile = body(memory, ana["profile_uri"])
    assert profile["agent_id"] == "ana" and profile["count"] == 2
    assert {(p["project_id"], p["content"]) for p in profile["profiles"]} == {
        ("", "Prefers short answers."),
        ("p1", "Works on kestrel."),
    }

    recent = body(memory, ana["memories_uri"])
    assert recent["count"] == RESOURCE_RECENT_MEMORIES and recent["total"] == RESOURCE_RECENT_MEMORIES + 5
    ids = [item["id"] for item in recent["items"]]
    assert ids == sorted(ids, reverse=True)  # newest first
    assert (
        recent["items"][0]["content"]
        == f"note number {RESOURCE_RECENT_MEMORIES + 4} about the kestrel migration"
    )
    assert body(memory, "cpersona://agents/bo%2Fb/memories")["items"][0]["content"] == "bo's only memory"
    # an agent holding only a profile is an agent too
    memory.update_profile("cy", "profile only")
    assert body(memory, "cpersona://agents/cy/profile")["count"] == 1
    assert body(memory, "cpersona://agents/cy/memories")["items"] == []


@BOTH_ENGINES  # the resources read through storage (the keyset page is a query of its own)
def test_unknown_agent_is_not_found_and_names_only_visible_agents(memory: Memory) -> None:
    memory.store("ana", "a")
    memory.store("secret-agent", "b")
    with pytest.raises(NotFound, match="anna") as found:
        memory.read_resource("cpersona://agents/anna/profile", allowed_agents={"ana", "anna"})
    assert "ana" in str(found.value) and "secret-agent" not in str(found.value)


@BOTH_ENGINES  # the resources read through storage (the keyset page is a query of its own)
def test_acl_hides_ungranted_agents_and_refuses_before_looking(memory: Memory) -> None:
    memory.store("a", "alpha")
    memory.store("b", "bravo secret")
    allowed = {"a", "ghost"}
    listed = memory.list_resources(allowed_agents=allowed)["resources"]
    uris = {r["uri"] for r in listed}
    assert uris == {AGENTS_URI, "cpersona://agents/a/profile", "cpersona://agents/a/memories"}
    assert [a["agent_id"] for a in body(memory, AGENTS_URI, allowed)["agents"]] == ["a"]
    for kind in ("profile", "memories"):
        with pytest.raises(Forbidden):
            memory.read_resource(f"cpersona://agents/b/{kind}", allowed_agents=allowed)
        # an ungranted agent that does not exist is refused the same way: no existence probe
        with pytest.raises(Forbidden):
            memory.read_resource(f"cpersona://agents/nobody/{kind}", allowed_agents=allowed)
    assert "bravo" not in json.dumps(listed)
    assert memory.complete_agent_id("", allowed_agents=allowed)["values"] == ["a"]
    assert memory.list_resources(allowed_agents=set())["resources"] == [listed[0]]


@BOTH_ENGINES  # the resources read through storage (the keyset page is a query of its own)
def test_resources_list_pages_with_an_opaque_cursor(memory: Memory) -> None:
    agents = [f"agent-{i:03d}" for i in range(RESOURCE_LIST_PAGE)]  # 1 + 2 per agent: three pages
    for agent in agents:
        memory.store(agent, f"memory of {agent}")
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = memory.list_resources(cursor=cursor)
        assert len(page["resources"]) <= RESOURCE_LIST_PAGE
        seen += [r["uri"] for r in page["resources"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert pages == 3 and len(seen) == len(set(seen)) == 1 + 2 * len(agents)
    for bad in ("x", "-1", "1.5", "²", "9" * 20, "100", "2.YQ", "0.%%%", "1." + "Y" * 5000):
        with pytest.raises(InvalidInput):
            memory.list_resources(cursor=bad)
    past = base64.urlsafe_b64encode(b"zzz").decode().rstrip("=")  # after every agent: empty, not an error
    assert memory.list_resources(cursor=f"1.{past}") == {"ok": True, "resources": [], "next_cursor": None}


@BOTH_ENGINES  # the resources read through storage (the keyset page is a query of its own)
def test_resources_pages_are_keyset_pages(memory: Memory) -> None:
    """A page resumes after the last entry it listed (issue 36 point 10: each page listed every agent
    again, O(agents²) in all); an agent whose pair a page cut is finished on the next, and the
    pages of an ACL client hold only its agents."""
    agents = [f"agent-{i:03d}" for i in range(RESOURCE_LIST_PAGE + 30)]
    for agent in agents:
        memory.store(agent, f"memory of {agent}")
    first = memory.list_resources()
    assert len(first["resources"]) == RESOURCE_LIST_PAGE  # the agents list, 49 pairs, a half pair
    assert first["resources"][-1]["uri"] == "cpersona://agents/agent-049/profile"
    second = memory.list_resources(cursor=first["next_cursor"])
    assert second["resources"][0]["uri"] == "cpersona://agents/agent-049/memories"
    granted = set(agents[::7])
    seen: list[str] = []
    cursor = None
    while True:
        page = memory.list_resources(cursor=cursor, allowed_agents=granted)
        seen += [r["uri"] for r in page["resources"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen[1:] == [
        f"cpersona://agents/{a}/{kind}" for a in sorted(granted) for kind in ("profile", "memories")
    ]


@BOTH_ENGINES  # the resources read through storage (the keyset page is a query of its own)
def test_templates_are_static_and_json(memory: Memory) -> None:
    templates = memory.resource_templates()["templates"]
    assert [t["uri_template"] for t in templates] == [t.uri_template for t in TEMPLATES] + [
        t[0] for t in ROW_TEMPLATES
    ]
    assert all("{agent_id}" in t["uri_template"] and t["mime_type"] == "application/json" for t in templates)


@BOTH_ENGINES  # the resources read through storage (the keyset page is a query of its own)
def test_completions_by_prefix_within_the_grants(memory: Memory) -> None:
    for agent in ("alpha", "alpine", "beta"):
        memory.store(agent, "x", project_id=f"proj-{agent}")
    memory.store("alpha", "y", project_id="shared")
    assert memory.complete_agent_id("al") == {
        "ok": True,
        "values": ["alpha", "alpine"],
        "total": 2,
        "has_more": False,
    }
    assert memory.complete_agent_id("al", allowed_agents={"alpine"})["values"] == ["alpine"]
    assert memory.complete_agent_id("zzz")["values"] == []
    assert memory.complete_project_id("proj-", agent_id="alpha")["values"] == ["proj-alpha"]
    assert memory.complete_project_id("", agent_id="alpha")["values"] == ["proj-alpha", "shared"]
    assert memory.complete_project_id("proj-", allowed_agents={"beta"})["values"] == ["proj-beta"]
    with pytest.raises(InvalidInput):
        memory.complete_agent_id(None)


@BOTH_ENGINES  # the resources read through storage (the keyset page is a query of its own)
def test_completion_caps_at_one_hundred_values(memory: Memory) -> None:
    for i in range(105):
        memory.store(f"a{i:03d}", "x")
    found = memory.complete_agent_id("a")
    assert len(found["values"]) == 100 and found["total"] == 105 and found["has_more"] is True


@given(
    uri=st.one_of(
        st.text(max_size=80),
        st.builds(lambda a, k: f"cpersona://agents/{a}/{k}", st.text(max_size=20), st.text(max_size=10)),
        st.builds(
            resource_uri, st.sampled_from(["profile", "memories"]), st.sampled_from(["a", "b", "zz", ""])
        ),
    ),
    allowed=st.one_of(st.none(), st.sets(st.sampled_from(["a", "b", "zz", ""]))),
)
@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_uri_reads_or_is_refused_with_a_request_error(
    memory: Memory, uri: str, allowed: set[str] | None
) -> None:
    if not memory.list_agents()["count"]:
        memory.store("a", "alpha")
        memory.store("b", "bravo")
    try:
        read = memory.read_resource(uri, allowed_agents=allowed)
    except (InvalidInput, Forbidden, NotFound) as exc:
        if isinstance(exc, NotFound):  # only agents the caller may read are looked up
            assert allowed is None or parse_uri(uri)[1] in allowed
        return
    kind, agent = parse_uri(uri)
    assert agent is None or allowed is None or agent in allowed
    assert isinstance(json.loads(read["text"]), dict)
