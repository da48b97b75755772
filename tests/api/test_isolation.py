"""The isolation axes (docs/architecture.md#the-isolation-rule-written-once) on every path."""

from __future__ import annotations

import pytest
from pg_cluster import BOTH_ENGINES

from cpersona.errors import InvalidInput, NotFound
from cpersona.memory import Memory

pytestmark = BOTH_ENGINES


def _contents(result: dict) -> set[str]:
    key = "results" if "results" in result else "items"
    return {r["content"] for r in result[key]}


def test_agents_never_share_rows(memory: Memory) -> None:
    a = memory.store("alice", "alice's secret garden")
    memory.store("bob", "bob's secret garden")
    assert _contents(memory.recall("alice", "secret garden")) == {"alice's secret garden"}
    assert _contents(memory.recall("bob", "secret garden")) == {"bob's secret garden"}
    assert _contents(memory.list_memories("bob")) == {"bob's secret garden"}
    assert memory.get_contents("bob", [a["ref"]]) == {"ok": True, "items": [], "missing": [a["ref"]]}
    with pytest.raises(NotFound):
        memory.update_memory(a["id"], "hijacked", agent_id="bob")
    with pytest.raises(NotFound):
        memory.delete_memory(a["id"], agent_id="bob")
    with pytest.raises(NotFound):
        memory.lock_memory(a["id"], agent_id="bob")
    assert _contents(memory.recall("alice", "secret")) == {"alice's secret garden"}


def test_omitted_agent_is_a_deliberate_cross_agent_scan(memory: Memory) -> None:
    memory.store("alice", "shared word zebra")
    memory.store("bob", "another zebra")
    assert len(memory.list_memories(None)["items"]) == 2
    assert memory.recall(None, "zebra")["count"] == 2


def test_project_sees_itself_plus_global(memory: Memory) -> None:
    memory.store("a", "global note about rockets")
    memory.store("a", "project x note about rockets", project_id="x")
    memory.store("a", "project y note about rockets", project_id="y")
    assert _contents(memory.recall("a", "rockets", project_id="x")) == {
        "global note about rockets",
        "project x note about rockets",
    }
    assert _contents(memory.recall("a", "rockets", project_id="")) == {"global note about rockets"}
    assert len(memory.recall("a", "rockets")["results"]) == 3
    assert _contents(memory.list_memories("a", project_id="y")) == {
        "global note about rockets",
        "project y note about rockets",
    }


def test_channel_sees_itself_plus_channel_less(memory: Memory) -> None:
    memory.store("a", "channel-less comet")
    memory.store("a", "slack comet", channel="slack")
    memory.store("a", "discord comet", channel="discord")
    assert _contents(memory.recall("a", "comet", channel="slack")) == {"channel-less comet", "slack comet"}
    assert len(memory.recall("a", "comet", channel="")["results"]) == 3
    assert len(memory.recall("a", "comet")["results"]) == 3


def test_episode_boundary_is_scoped(memory: Memory) -> None:
    memory.store("a", "an old fact about tea")
    memory.archive_episode("b", "bob's session about tea")
    episodes = memory.storage.session().episodes
    from cpersona.storage.scope import Scope

    assert episodes.newest_boundary(Scope("a")) is None
    assert episodes.newest_boundary(Scope("b")) is not None


def test_delete_agent_data_removes_only_that_agent(memory: Memory) -> None:
    locked = memory.store("a", "locked fact")
    memory.lock_memory(locked["id"])
    memory.store("a", "free fact")
    memory.archive_episode("a", "a session")
    memory.update_profile("a", "likes tea")
    memory.store("b", "bob fact")
    out = memory.delete_agent_data("a")
    assert out["deleted"] == {"memories": 2, "episodes": 1, "profiles": 1}
    assert memory.list_memories(None)["total"] == 1
    assert memory.get_profile("a")["profile"] is None


def test_allowed_agents_narrow_listings_and_row_edits(memory: Memory) -> None:
    # An HTTP client's ACL grants reach the API as allowed_agents (docs/architecture.md#access-control-http-with-an-acl-file).
    a = memory.store("alice", "alice row")
    b = memory.store("bob", "bob row")
    ep = memory.archive_episode("bob", "bob's session")
    assert _contents(memory.list_memories(None, allowed_agents={"alice"})) == {"alice row"}
    assert memory.list_memories(None, allowed_agents={"alice"})["total"] == 1
    assert memory.list_memories(None, allowed_agents=set())["items"] == []
    assert memory.list_episodes(None, allowed_agents={"alice"})["items"] == []
    assert len(memory.list_episodes(None, allowed_agents={"bob", "carol"})["items"]) == 1
    for call in (
        lambda: memory.update_memory(b["id"], "hijacked", allowed_agents={"alice"}),
        lambda: memory.delete_memory(b["id"], allowed_agents={"alice"}),
        lambda: memory.lock_memory(b["id"], allowed_agents=frozenset({"alice"})),
        lambda: memory.unlock_memory(b["id"], allowed_agents=["alice"]),
        lambda: memory.delete_episode(ep["id"], allowed_agents={"alice"}),
    ):
        with pytest.raises(NotFound):
            call()
    assert memory.update_memory(a["id"], "alice edited", allowed_agents={"alice"})["ok"]
    assert _contents(memory.list_memories("bob")) == {"bob row"}
    with pytest.raises(InvalidInput):
        memory.list_memories(None, allowed_agents="alice")  # a string is not a set of agents
