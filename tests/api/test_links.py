"""Declared associations through the Python API, on both engines: declare, traverse, dangling targets, deletes."""

from __future__ import annotations

import pytest

from cpersona.core.limits import TRAVERSE_DEPTH_MAX
from cpersona.errors import InvalidInput, NotFound, Rejected
from cpersona.memory import Memory
from tests.pg_cluster import BOTH_ENGINES

pytestmark = BOTH_ENGINES


def _id(memory: Memory, agent: str, text: str, **kw: object) -> int:
    result = memory.store(agent, text, **kw)  # type: ignore[arg-type]
    assert result["result"] == "stored", result
    return int(result["id"])


def _reached(result: dict[str, object]) -> dict[str, int]:
    return {row["ref"]: row["hop"] for row in result["results"]}  # type: ignore[attr-defined,index]


def test_store_with_associations_then_traverse_both_ways(memory: Memory) -> None:
    decision = _id(memory, "a", "We chose Postgres for Phoenix")
    meeting = _id(
        memory,
        "a",
        "Meeting on the database",
        associations=[
            {"relation": "decided", "to": f"mem:{decision}"},
            {"relation": "about", "entity": "Project  Phoenix"},
        ],
    )
    out = memory.traverse("a", f"mem:{meeting}", direction="out")
    assert _reached(out) == {f"mem:{decision}": 1, "entity:Project Phoenix": 1}
    memory_row = next(r for r in out["results"] if r["type"] == "memory")
    assert memory_row["content"] == "We chose Postgres for Phoenix"
    assert memory_row["path"] == [{"from": f"mem:{meeting}", "relation": "decided", "to": f"mem:{decision}"}]
    # Against the declared direction: the decision is reached from the meeting's side only with "in".
    assert _reached(memory.traverse("a", f"mem:{decision}", direction="out")) == {}
    assert _reached(memory.traverse("a", f"mem:{decision}", direction="in")) == {f"mem:{meeting}": 1}
    # From the entity (case and spacing folded), two hops reach the decision through the meeting.
    walk = memory.traverse("a", "project phoenix", depth=2)
    assert walk["from"] == "entity:Project Phoenix"
    assert _reached(walk) == {f"mem:{meeting}": 1, f"mem:{decision}": 2}
    # relation filter
    assert _reached(memory.traverse("a", f"mem:{meeting}", relation="about")) == {"entity:Project Phoenix": 1}


def test_cycles_come_back_once_and_depth_and_limit_bound_the_walk(memory: Memory) -> None:
    ids = [_id(memory, "a", f"step {n}") for n in range(8)]
    for n, rid in enumerate(ids):  # a ring: 0 -> 1 -> ... -> 7 -> 0
        memory.declare_associations(
            "a", f"mem:{rid}", [{"relation": "next", "to": f"mem:{ids[(n + 1) % 8]}"}]
        )
    walk = memory.traverse("a", f"mem:{ids[0]}", depth=TRAVERSE_DEPTH_MAX, limit=100)
    reached = _reached(walk)
    assert f"mem:{ids[0]}" not in reached  # the start is not a result
    assert len(reached) == len(walk["results"]) == 7  # each node once
    assert reached[f"mem:{ids[1]}"] == 1 and reached[f"mem:{ids[7]}"] == 1 and reached[f"mem:{ids[4]}"] == 4
    assert walk["truncated"] is False
    one = memory.traverse("a", f"mem:{ids[0]}", depth=1)
    assert set(_reached(one)) == {f"mem:{ids[1]}", f"mem:{ids[7]}"}
    capped = memory.traverse("a", f"mem:{ids[0]}", depth=5, limit=3)
    assert capped["count"] == 3 and capped["truncated"] is True
    for bad in ({"depth": 0}, {"depth": TRAVERSE_DEPTH_MAX + 1}, {"limit": 0}, {"direction": "up"}):
        with pytest.raises(InvalidInput):
            memory.traverse("a", f"mem:{ids[0]}", **bad)  # type: ignore[arg-type]


def test_redeclaring_is_unchanged_and_bad_links_are_refused_whole(memory: Memory) -> None:
    a = _id(memory, "a", "first")
    b = _id(memory, "a", "second")
    other = _id(memory, "b", "someone else's")
    done = memory.declare_associations("a", f"mem:{a}", [{"relation": "see_also", "to": b}])
    assert done["declared"] == 1
    again = memory.declare_associations("a", a, [{"relation": "see_also", "to": f"mem:{b}"}])
    assert again["declared"] == 0 and again["unchanged"] == 1
    with pytest.raises(NotFound):  # unknown target: nothing of the call is written
        memory.declare_associations(
            "a", a, [{"relation": "x", "entity": "E"}, {"relation": "x", "to": "mem:999999"}]
        )
    assert _reached(memory.traverse("a", "E")) == {}
    with pytest.raises(NotFound):  # another agent's memory as the source
        memory.declare_associations("a", other, [{"relation": "x", "to": a}])
    with pytest.raises(NotFound):  # a target outside the readable agents
        memory.declare_associations(
            "a", a, [{"relation": "x", "to": other}], readable_agents=frozenset({"a"})
        )
    with pytest.raises(InvalidInput):
        memory.declare_associations("a", a, [{"relation": "x", "to": a}])  # self link
    for bad in (
        [{"relation": "Bad Name", "to": b}],
        [{"relation": "x"}],
        [{"relation": "x", "to": b, "entity": "E"}],
        [{"relation": "x", "entity": "  "}],
        [{"relation": "x", "to": "ep:3"}],
        [],
        "nope",
    ):
        with pytest.raises(InvalidInput):
            memory.declare_associations("a", a, bad)  # type: ignore[arg-type]
    with pytest.raises(Rejected):
        memory.store("a", "with a bad link", associations=[{"relation": "1x", "to": b}])
    with pytest.raises(NotFound):
        memory.store("a", "with a dangling link", associations=[{"relation": "x", "to": "mem:999999"}])
    assert memory.list_memories("a")["count"] == 2  # neither store wrote its row


def test_a_deleted_memory_takes_its_links_both_ways(memory: Memory) -> None:
    hub = _id(memory, "a", "hub")
    left = _id(memory, "a", "left", associations=[{"relation": "r", "to": hub}])
    right = _id(memory, "a", "right")
    memory.declare_associations(
        "a", hub, [{"relation": "r", "to": right}, {"relation": "about", "entity": "E"}]
    )
    assert set(_reached(memory.traverse("a", hub, depth=1))) == {f"mem:{left}", f"mem:{right}", "entity:E"}
    memory.delete_memory(hub, agent_id="a")
    assert _reached(memory.traverse("a", left)) == {}
    assert _reached(memory.traverse("a", right)) == {}
    assert _reached(memory.traverse("a", "E")) == {}
    with pytest.raises(NotFound):
        memory.traverse("a", hub)


def test_entities_are_per_agent_and_delete_agent_data_drops_links(memory: Memory) -> None:
    mine = _id(memory, "a", "mine", associations=[{"relation": "about", "entity": "Phoenix"}])
    theirs = _id(memory, "b", "theirs", associations=[{"relation": "about", "entity": "Phoenix"}])
    assert _reached(memory.traverse("a", "Phoenix")) == {f"mem:{mine}": 1}
    assert _reached(memory.traverse("b", "Phoenix")) == {f"mem:{theirs}": 1}
    # a's memory links to b's (no ACL in-process: every agent is readable); b's data goes, so does the link
    memory.declare_associations("a", mine, [{"relation": "cites", "to": theirs}])
    assert f"mem:{theirs}" in _reached(memory.traverse("a", mine))
    assert f"mem:{theirs}" not in _reached(memory.traverse("a", mine, readable_agents=frozenset({"a"})))
    memory.delete_agent_data("b")
    assert _reached(memory.traverse("a", mine)) == {"entity:Phoenix": 1}


def test_merge_carries_the_links(memory: Memory) -> None:
    shared = _id(memory, "src", "shared fact")
    memory.store("dst", "shared fact")  # the target already holds this one
    own = _id(memory, "src", "own fact", associations=[{"relation": "cites", "to": shared}])
    memory.declare_associations("src", shared, [{"relation": "about", "entity": "Phoenix"}])
    outside = _id(memory, "other", "someone else's", associations=[{"relation": "cites", "to": own}])

    copied = memory.merge_memories("src", "dst", "skip", "copy", False)
    assert copied["ok"], copied
    rows = {r["content"]: r["id"] for r in memory.list_memories("dst")["items"]}
    walk = _reached(memory.traverse("dst", rows["own fact"], direction="out", depth=2))
    assert walk == {f"mem:{rows['shared fact']}": 1, "entity:Phoenix": 2}  # the copy links to copies
    assert _reached(memory.traverse("src", own, direction="out", depth=1)) == {
        f"mem:{shared}": 1
    }  # the source keeps its own
    assert _reached(memory.traverse("dst", "Phoenix")) == {
        f"mem:{rows['shared fact']}": 1,
        f"mem:{rows['own fact']}": 2,
    }

    moved = memory.merge_memories("src", "other2", "skip", "move", False)
    assert moved["ok"], moved
    # a move keeps ids: the links and the entity (now other2's) stay; the outside link still points at `own`
    assert _reached(memory.traverse("other2", "Phoenix")) == {f"mem:{shared}": 1, f"mem:{own}": 2}
    assert _reached(memory.traverse("other", outside, direction="out", depth=1)) == {f"mem:{own}": 1}


def test_a_move_onto_duplicates_repoints_their_links(memory: Memory) -> None:
    kept = _id(memory, "dst", "same text")
    dup = _id(memory, "src", "same text")
    pointer = _id(memory, "src", "points at the duplicate", associations=[{"relation": "r", "to": dup}])
    memory.declare_associations("src", dup, [{"relation": "about", "entity": "E"}])
    assert memory.merge_memories("src", "dst", "skip", "move", False)["ok"]
    assert _reached(memory.traverse("dst", pointer, direction="out", depth=2)) == {
        f"mem:{kept}": 1,
        "entity:E": 2,
    }


def test_export_then_import_keeps_the_links_with_ids_remapped(memory: Memory) -> None:
    theirs = _id(memory, "b", "another agent's fact")
    first = _id(memory, "a", "first fact", associations=[{"relation": "about", "entity": "Phoenix"}])
    second = _id(
        memory,
        "a",
        "second fact",
        associations=[{"relation": "follows", "to": first}, {"relation": "cites", "to": theirs}],
    )
    out = memory.export_memories("a", "a.jsonl")
    # the link to b's memory cannot be remapped from a file holding only a's rows: it stays out
    assert out["counts"] == {"memories": 2, "episodes": 0, "profiles": 0, "links": 2}
    imported = memory.import_memories("a.jsonl", "copy")
    assert imported["header"]["version"] == 2
    assert imported["counts"]["links"] == {"inserted": 2, "duplicates": 0, "dropped": 0}
    rows = {r["content"]: r["id"] for r in memory.list_memories("copy")["items"]}
    assert rows["second fact"] not in (first, second)  # new ids ...
    walk = _reached(memory.traverse("copy", rows["second fact"], direction="out", depth=2))
    assert walk == {f"mem:{rows['first fact']}": 1, "entity:Phoenix": 2}  # ... and the links follow them
    again = memory.import_memories("a.jsonl", "copy")
    assert again["counts"]["links"] == {"inserted": 0, "duplicates": 2, "dropped": 0}
    dry = memory.import_memories("a.jsonl", "fresh", dry_run=True)
    assert dry["counts"]["links"]["inserted"] == 2 and memory.list_memories("fresh")["count"] == 0
    # a file without links is the version-1 format, unchanged
    _id(memory, "plain", "no links here")
    assert memory.export_memories("plain", "plain.jsonl")["counts"] == {
        "memories": 1,
        "episodes": 0,
        "profiles": 0,
    }
    assert "links" not in memory.import_memories("plain.jsonl", "plain2")["counts"]


def test_a_bad_link_line_is_reported_and_the_rest_imports(memory: Memory) -> None:
    one = _id(memory, "a", "one")
    _id(memory, "a", "two", associations=[{"relation": "r", "to": one}])
    memory.export_memories("a", "a.jsonl")
    path = memory.settings.db_path.parent / "exports" / "a.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    bad = [
        '{"type": "link", "from_source_id": 1, "relation": "Bad Name", "entity": "E"}',
        '{"type": "link", "from_source_id": 1, "relation": "r"}',
        '{"type": "link", "from_source_id": 999, "relation": "r", "entity": "E"}',  # not in the file: dropped
    ]
    path.write_text("\n".join([*lines, *bad]) + "\n", encoding="utf-8")
    result = memory.import_memories("a.jsonl", "copy")
    assert result["error_count"] == 2, result["errors"]
    assert result["counts"]["links"] == {"inserted": 1, "duplicates": 0, "dropped": 1}
