"""Walks over a hub read what they can return, not the hub (issue 36 points 6 and 7), on both engines:
the link reads take a relation and a limit into the query, traverse says when a step met its cap,
and reconstruct quotes a hub's or a fan-in's neighbours from a bounded read."""

from __future__ import annotations

import json
from pathlib import Path

from pg_cluster import BOTH_ENGINES

from cpersona.core.limits import RECONSTRUCT_NEIGHBOURS_PER_SEED
from cpersona.core.text import format_ts, utc_now
from cpersona.memory import Memory
from cpersona.storage.scope import Scope

pytestmark = BOTH_ENGINES

SPOKES = 600


def _rows(memory: Memory, tmp_path: Path, n: int) -> list[int]:
    """``n`` memories of agent 'a' by import (fast), their ids oldest first."""
    path = tmp_path / "rows.jsonl"
    head = {
        "type": "header",
        "format": "cpersona-export",
        "version": 1,
        "exported_at": "2026-01-01T00:00:00Z",
        "source_schema_version": 1,
        "agent_id": "a",
        "include_embeddings": False,
        "embedding_model": None,
        "embedding_dim": None,
        "counts": {"memories": n, "episodes": 0, "profiles": 0},
    }
    lines = [json.dumps(head)] + [
        json.dumps({"type": "memory", "agent_id": "a", "content": f"spoke note {i}"}) for i in range(n)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    memory.import_memories(str(path), confined=False)
    listed = memory.list_memories("a", limit=1)["total"]
    assert listed == n
    with memory.storage.read() as session:
        return sorted(session.memories.ids_in_period(Scope(agent_id="a"), None, None))


def _hub(memory: Memory, tmp_path: Path) -> tuple[int, list[int]]:
    ids = _rows(memory, tmp_path, SPOKES + 1)
    hub, spokes = ids[0], ids[1:]
    when = format_ts(utc_now())
    with memory.storage.write() as session:
        for rid in spokes:
            session.links.add(rid, "about", hub, None, None, when)
            session.links.add(rid, "mentions", None, "Phoenix", "phoenix", when)
    return hub, spokes


def test_link_reads_take_the_limit_and_the_relation_into_the_query(memory: Memory, tmp_path: Path) -> None:
    hub, spokes = _hub(memory, tmp_path)
    with memory.storage.read() as session:
        first = session.links.incoming([hub], limit=7)
        assert [link.from_id for link in first] == spokes[:7]  # oldest first, no more than asked
        assert session.links.incoming([hub], relation="decided_by", limit=7) == []
        assert len(session.links.incoming([hub])) == SPOKES  # unbounded when no limit is given
        entity = session.links.into_entity("a", ["phoenix"], relation="mentions", limit=3)
        assert [link.from_id for link in entity] == spokes[:3]
        assert session.links.into_entity("b", ["phoenix"], limit=3) == []  # entities are per agent
        out = session.links.outgoing(spokes[:4], relation="about", limit=10)
        assert sorted(link.to_id for link in out) == [hub] * 4


def test_traverse_on_a_hub_is_bounded_and_says_so(memory: Memory, tmp_path: Path) -> None:
    hub, spokes = _hub(memory, tmp_path)
    out = memory.traverse("a", f"mem:{hub}", depth=5, limit=10, direction="in")
    assert out["count"] == 10 and out["truncated"] is True
    assert [r["ref"] for r in out["results"]] == [f"mem:{rid}" for rid in spokes[:10]]
    none = memory.traverse("a", f"mem:{hub}", depth=5, relation="decided_by", direction="both")
    assert none["count"] == 0 and none["truncated"] is False  # filtered in the query: nothing read
    entity = memory.traverse("a", "entity:Phoenix", depth=2, limit=15, relation="mentions")
    assert entity["count"] == 15 and entity["truncated"] is True


def test_reconstruct_quotes_a_hub_and_a_fan_in_from_a_bounded_read(memory: Memory, tmp_path: Path) -> None:
    hub, spokes = _hub(memory, tmp_path)
    pack = memory.reconstruct("a", refs=[f"mem:{hub}"], budget_chars=40_000)
    linked = [item["ref"] for item in pack["items"] if item["role"] == "linked"]
    assert len(linked) == RECONSTRUCT_NEIGHBOURS_PER_SEED
    assert set(linked) <= {f"mem:{rid}" for rid in spokes}
    head = memory.store("a", "the plan in force")["ref"]
    for start in range(0, len(spokes), 100):
        memory.update_memory(
            head, agent_id="a", supersedes=[f"mem:{rid}" for rid in spokes[start : start + 100]]
        )
    fan = memory.reconstruct("a", refs=[head], budget_chars=40_000)
    replaced = [item["ref"] for item in fan["items"] if item["role"] == "replaced"]
    assert len(replaced) == RECONSTRUCT_NEIGHBOURS_PER_SEED
    history = memory.get_history(head, agent_id="a")
    assert history["count"] == SPOKES + 1 and "truncated" not in history  # under the bound: whole
