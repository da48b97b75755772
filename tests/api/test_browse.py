"""Browsing for people (list_agents, browse_memories/episodes, list_profiles, memory_timeline) on a real store."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pg_cluster import BOTH_ENGINES

from cpersona.errors import InvalidInput
from cpersona.memory import Memory

pytestmark = BOTH_ENGINES


def _fill(memory: Memory) -> None:
    memory.store("ana", "global note", msg_id="g1")
    memory.store("ana", "project note", project_id="p1", msg_id="p1")
    memory.store("ana", "channel note", project_id="p1", channel="c1", msg_id="c1")
    memory.store("bo", "bo's only note")
    memory.archive_episode("ana", "a session in p1", project_id="p1")
    memory.update_profile("ana", "likes tea")
    memory.update_profile("cy", "profile only")


def test_list_agents_counts_axes_and_profile_only_agents(memory: Memory) -> None:
    _fill(memory)
    memory.lock_memory(memory.browse_memories("ana", project_id="")["items"][0]["id"], agent_id="ana")
    agents = {a["agent_id"]: a for a in memory.list_agents()["agents"]}
    assert sorted(agents) == ["ana", "bo", "cy"]
    ana = agents["ana"]
    assert (ana["memories"], ana["episodes"], ana["profiles"], ana["locked_memories"]) == (3, 1, 1, 1)
    assert ana["embedded_memories"] == 0  # keyword-only fixture: nothing has a vector
    assert [(x["project_id"], x["channel"], x["memories"], x["episodes"]) for x in ana["axes"]] == [
        ("", "", 1, 0),
        ("p1", "", 1, 1),
        ("p1", "c1", 1, 0),
    ]
    assert agents["cy"] == {
        "agent_id": "cy",
        "memories": 0,
        "episodes": 0,
        "embedded_memories": 0,
        "locked_memories": 0,
        "profiles": 1,
        "axes": [],
    }


def test_browse_memories_pages_newest_first_with_exact_filters(memory: Memory) -> None:
    ids = [memory.store("ana", f"note number {i}")["id"] for i in range(7)]
    memory.store("ana", "in a project", project_id="p1")
    memory.lock_memory(ids[2], agent_id="ana")
    first = memory.browse_memories("ana", project_id="", limit=3)
    assert [r["id"] for r in first["items"]] == ids[::-1][:3]
    assert (first["total"], first["count"], first["offset"]) == (7, 3, 0)
    second = memory.browse_memories("ana", project_id="", limit=3, offset=3)
    assert [r["id"] for r in second["items"]] == ids[::-1][3:6]
    assert memory.browse_memories("ana", project_id="", offset=6)["count"] == 1
    assert [r["id"] for r in memory.browse_memories("ana", locked=True)["items"]] == [ids[2]]
    assert memory.browse_memories("ana", locked=False)["total"] == 7
    assert [r["content"] for r in memory.browse_memories(project_id="p1")["items"]] == ["in a project"]
    assert memory.browse_memories(embedded=True)["total"] == 0
    assert memory.browse_memories(embedded=False)["total"] == 8
    assert memory.browse_memories()["total"] == 8


def test_browse_episodes_profiles_and_timeline(memory: Memory) -> None:
    _fill(memory)
    episodes = memory.browse_episodes("ana", project_id="p1")
    assert [e["summary"] for e in episodes["items"]] == ["a session in p1"] and episodes["total"] == 1
    assert memory.browse_episodes("ana", project_id="")["total"] == 0
    profiles = memory.list_profiles("ana")
    assert [(p["project_id"], p["user_id"], p["content"]) for p in profiles["items"]] == [
        ("", "", "likes tea")
    ]
    timeline = memory.memory_timeline()
    assert timeline["stored"] == 4 and timeline["embedded"] == 0
    assert len(timeline["days"]) == 1 and timeline["days"][0]["stored"] == 4
    assert memory.memory_timeline("bo")["stored"] == 1


@pytest.mark.parametrize(
    "kwargs",
    [
        {"offset": -1},
        {"limit": 10**9},
        {"locked": "yes"},
        {"embedded": 1},
        {"agent_id": 5},
        {"project_id": []},
    ],
)
def test_browse_refuses_bad_arguments(memory: Memory, kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidInput):
        memory.browse_memories(**kwargs)  # type: ignore[arg-type]


def test_recall_without_record_leaves_bookkeeping_alone(memory: Memory) -> None:
    stored = memory.store("ana", "the kestrel migration plan")
    memory.recall("ana", "kestrel", record=False)
    assert memory.get_contents("ana", [stored["ref"]])["items"][0]["recall_count"] == 0
    memory.recall("ana", "kestrel")
    assert memory.get_contents("ana", [stored["ref"]])["items"][0]["recall_count"] == 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    agent=st.one_of(st.none(), st.text(max_size=40)),
    project=st.one_of(st.none(), st.text(max_size=40)),
    channel=st.one_of(st.none(), st.text(max_size=40)),
    locked=st.one_of(st.none(), st.booleans()),
    embedded=st.one_of(st.none(), st.booleans()),
    offset=st.integers(-5, 50),
    limit=st.integers(-5, 600),
)
def test_browse_answers_any_filter_with_rows_or_invalid_input(
    memory: Memory,
    agent: str | None,
    project: str | None,
    channel: str | None,
    locked: bool | None,
    embedded: bool | None,
    offset: int,
    limit: int,
) -> None:
    if memory.list_agents()["count"] == 0:
        _fill(memory)
    try:
        result = memory.browse_memories(
            agent,
            project_id=project,
            channel=channel,
            locked=locked,
            embedded=embedded,
            offset=offset,
            limit=limit,
        )
    except InvalidInput:
        return
    every = memory.browse_memories(limit=1000)["items"]
    expected = [
        r
        for r in every
        if (agent is None or r["agent_id"] == agent)
        and (project is None or r["project_id"] == project)
        and (channel is None or r["channel"] == channel)
        and (locked is None or r["locked"] == locked)
        and (embedded is None or r["embedded"] == embedded)
    ]
    assert result["total"] == len(expected)
    assert [r["id"] for r in result["items"]] == [r["id"] for r in expected][offset : offset + limit]


def test_browse_memories_marks_superseded_rows(memory: Memory) -> None:
    # The browser view's listing badges them; the rows are listed all the same (browsing is not recall).
    older = memory.store("ana", "the kiln runs on propane")["id"]
    newer = memory.store("ana", "the kiln runs on electricity", supersedes=[f"mem:{older}"])["id"]
    rows = {r["id"]: r for r in memory.browse_memories("ana")["items"]}
    assert sorted(rows) == sorted([older, newer])
    assert rows[older].get("superseded_by") == f"mem:{newer}" and rows[older].get("superseded_at")
    assert "superseded_by" not in rows[newer]
